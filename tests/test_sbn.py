"""Static batch norm: the inference statistics are an equal-weight average of per-batch (250) statistics of
un-augmented data, computed from scratch; training mode always normalises with the batch's own statistics."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from semifl_core import sbn
from semifl_core.augment import normalize
from semifl_core.config import profile
from semifl_core.models import SmallCNN, StaticBatchNorm2d
from semifl_core.partition import make_split

MEAN, STD = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)


def data(n=600, seed=0, size=2):
    """600 uint8 images whose last 100 are much brighter, so that the partial last batch matters."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 200, (n, 3, size, size), generator=g)   # small: 1000 values per channel per batch
    x[500:] = (x[500:] + 55).clamp(max=255)
    return x.to(torch.uint8)


def conv_sbn(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), StaticBatchNorm2d(4))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([1.0, 2.0, 0.5, -1.0]))
        model[1].bias.copy_(torch.tensor([0.0, 0.1, -0.2, 0.3]))
    return model


def test_statistics_are_the_equal_weight_average_of_per_batch_statistics():
    model, x = conv_sbn(), data()
    sbn.compute_statistics(model, x, MEAN, STD)
    conv, bn = model[0], model[1]
    with torch.no_grad():
        z = [conv(normalize(x[a:b], MEAN, STD)) for a, b in ((0, 250), (250, 500), (500, 600))]
    means = torch.stack([t.mean((0, 2, 3)) for t in z])
    variances = torch.stack([t.var((0, 2, 3), unbiased=True) for t in z])
    assert torch.allclose(bn.mean, means.mean(0), atol=1e-5)             # 1/3 weight each, partial batch too
    assert torch.allclose(bn.var, variances.mean(0), atol=1e-5)
    biased = torch.stack([t.var((0, 2, 3), unbiased=False) for t in z]).mean(0)
    assert ((bn.var - biased) / biased > 5e-4).all()                    # unbiased (n-1), as BatchNorm's running var
    # and not the statistics of all 600 at once (a sample-weighted or pooled estimate differs here)
    z_all = torch.cat(z)
    assert not torch.allclose(bn.mean, z_all.mean((0, 2, 3)), atol=1e-3)
    assert not torch.allclose(bn.var, z_all.var((0, 2, 3)), atol=1e-3)
    # eval mode then normalises with exactly these statistics
    model.eval()
    probe = data(40, seed=1)
    with torch.no_grad():
        zp = conv(normalize(probe, MEAN, STD))
        want = (zp - bn.mean.view(1, -1, 1, 1)) / torch.sqrt(bn.var.view(1, -1, 1, 1) + bn.eps) \
            * bn.weight.view(1, -1, 1, 1) + bn.bias.view(1, -1, 1, 1)
        assert torch.allclose(model(normalize(probe, MEAN, STD)), want, atol=1e-5)


def test_training_mode_ignores_the_stored_statistics():
    model, x = conv_sbn(), data()
    sbn.compute_statistics(model, x, MEAN, STD)
    assert model.training                                               # the mode is restored
    probe = normalize(data(40, seed=2), MEAN, STD)
    with torch.no_grad():
        zp = model[0](probe)
        want = F.batch_norm(zp, None, None, model[1].weight, model[1].bias, True, 0.0, model[1].eps)
        out = model(probe)
    assert torch.allclose(out, want, atol=1e-5)
    per_channel = out.transpose(0, 1).flatten(1)
    w, b = model[1].weight, model[1].bias
    assert torch.allclose((per_channel.mean(1) - b) / w, torch.zeros(4), atol=1e-4)   # batch-normalised
    # and training forwards do not touch the stored statistics
    stored = model[1].mean.clone(), model[1].var.clone()
    model(probe)
    assert torch.equal(model[1].mean, stored[0]) and torch.equal(model[1].var, stored[1])


def test_statistics_are_recomputed_from_scratch():
    model = conv_sbn()
    sbn.compute_statistics(model, data(), MEAN, STD)
    first = model[1].mean.clone(), model[1].var.clone()
    model.eval()
    other = data(250, seed=3)
    sbn.compute_statistics(model, other, MEAN, STD)
    assert not model.training                                           # eval mode restored too
    with torch.no_grad():
        z = model[0](normalize(other, MEAN, STD))
    assert torch.allclose(model[1].mean, z.mean((0, 2, 3)), atol=1e-5)  # only the new images count
    assert torch.allclose(model[1].var, z.var((0, 2, 3)), atol=1e-5)
    sbn.compute_statistics(model, data(), MEAN, STD)
    assert torch.allclose(model[1].mean, first[0]) and torch.allclose(model[1].var, first[1])


def test_deeper_layers_see_batch_normalised_inputs():
    """Layer 2's statistics come from a forward pass in training mode: its input was normalised with the
    batch's own statistics at layer 1, batch by batch."""
    torch.manual_seed(4)
    model = SmallCNN(3, 10, widths=(4, 5, 6))
    x = data(300, size=8)
    sbn.compute_statistics(model, x, MEAN, STD)
    layers = list(model.features)
    bn2 = [m for m in layers if isinstance(m, StaticBatchNorm2d)][1]
    upto = layers[:layers.index(bn2)]
    stats = []
    with torch.no_grad():
        for a, b in ((0, 250), (250, 300)):
            h = normalize(x[a:b], MEAN, STD)
            for m in upto:
                h = F.batch_norm(h, None, None, m.weight, m.bias, True, 0.0, m.eps) \
                    if isinstance(m, StaticBatchNorm2d) else m(h)
            stats.append((h.mean((0, 2, 3)), h.var((0, 2, 3))))
    assert torch.allclose(bn2.mean, (stats[0][0] + stats[1][0]) / 2, atol=1e-5)
    assert torch.allclose(bn2.var, (stats[0][1] + stats[1][1]) / 2, atol=1e-5)


def test_source_indices_server_or_all_clients():
    labels = np.random.default_rng(0).permutation(np.arange(2000) % 10)
    cfg = profile("smoke", sbn_source="all")                           # 10 clients, 3 active per round
    server, clients, _ = make_split(cfg, labels)
    assert np.array_equal(np.sort(sbn.source_indices(cfg.replace(sbn_source="server"), server, clients)),
                          np.sort(server))
    every = sbn.source_indices(cfg, server, clients)
    expected = np.concatenate([server, *clients])
    assert len(every) == len(server) + sum(len(c) for c in clients)      # every client, not only active ones
    assert np.array_equal(np.sort(every), np.sort(expected))
    assert len(np.unique(every)) == len(every)
