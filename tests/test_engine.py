"""The vectorized engine trains every client at once and must give the sequential reference's parameters."""
import numpy as np
import pytest
import torch

from float_bound import assert_near, longest_sum, rtol
from semifl_core.methods import semifl
from semifl_core.config import profile
from semifl_core.data import synthetic
from semifl_core.engine import SequentialEngine, VectorizedEngine
from semifl_core.models import make_model
from semifl_core.tasks import make_tasks

# local-step kinds of SemiFL and its baselines: the loss and the views its tasks carry
KINDS = {"fix-mix": (semifl.client_loss, dict(view="strong", mix_alpha=0.75)),
         "fix": (semifl.client_loss, dict(view="strong")),
         "fixmatch": (semifl.fixmatch_loss(0.3), dict(view="strong", weak_too=True)),
         "sup": (semifl.supervised_loss, dict())}


def _setup(kind, sizes, epochs, norm="sbn", **cfg_kw):
    cfg = profile("smoke", norm=norm, local_epochs=epochs, **cfg_kw)
    data = synthetic()
    torch.manual_seed(0)
    model = make_model(cfg, 3)
    rng = np.random.default_rng(0)
    g = torch.Generator().manual_seed(0)
    specs, start = [], 0
    for n in sizes:
        x, y = data.x_train[start:start + n], data.y_train[start:start + n]
        spec = {"x": x, "y": y}
        if kind == "fix-mix":
            mix = rng.integers(0, n, size=n)
            spec.update(x_mix=x[mix], y_mix=y[mix])
        specs.append(spec)
        start += n
    loss_fn, views = KINDS[kind]
    tasks = make_tasks(specs, cfg.client_batch, cfg.local_epochs, rng, g, flip=True, **views)
    return cfg, data, model, tasks, loss_fn


def _states(model, n, with_momentum):
    """Client momentum states: some clients arrive with a buffer from an earlier round, some without."""
    gen = torch.Generator().manual_seed(1)
    return [({k: 0.01 * torch.randn(v.shape, generator=gen) for k, v in model.named_parameters()}
             if with_momentum and i % 2 == 0 else None) for i in range(n)]


@pytest.mark.parametrize("kind", ["fix-mix", "fix", "fixmatch", "sup"])
def test_engines_agree_with_different_step_counts_and_partial_batches(kind):
    # 23 -> 3 steps/epoch (last has 3), 30 -> 3 full steps, 7 -> one partial step; E=2 doubles them
    cfg, data, model, tasks, loss_fn = _setup(kind, [23, 30, 7], epochs=2.0, threshold=0.3)
    assert [t.steps for t in tasks] == [6, 6, 2]
    assert list(tasks[0].size) == [10, 10, 3] * 2
    states = _states(model, 3, with_momentum=True)
    seq, seq_states, seq_stats = SequentialEngine(cfg, data.mean, data.std).train(model, tasks, loss_fn, 0.05, states)
    vec, vec_states, vec_stats = VectorizedEngine(cfg, data.mean, data.std).train(model, tasks, loss_fn, 0.05, states)
    tol = rtol(6, longest_sum(cfg.client_batch, data.shape))       # 6 dependent steps (tests/float_bound.py)
    for i in range(len(tasks)):
        assert_near({k: v[i] for k, v in vec.items()}, {k: v[i] for k, v in seq.items()}, tol, f"client {i}'s weights")
    for i, (a, b) in enumerate(zip(seq_states, vec_states)):
        assert_near(b, a, tol, f"client {i}'s momentum")
    assert_near(vec_stats, seq_stats, tol, "loss and aux sums")
    # the clients really moved, and differently from each other
    start = dict(model.named_parameters())
    for k in seq:
        assert not torch.allclose(seq[k][0], start[k].detach())
    assert not torch.allclose(seq["fc.weight"][0], seq["fc.weight"][1])


def test_engines_agree_with_groupnorm_and_without_clipping_or_nesterov():
    cfg, data, model, tasks, loss_fn = _setup("fix-mix", [12, 25], epochs=1.0, norm="gn", nesterov=False, clip_norm=0.0)
    states = [None, None]
    seq, _, _ = SequentialEngine(cfg, data.mean, data.std).train(model, tasks, loss_fn, 0.1, states)
    vec, _, _ = VectorizedEngine(cfg, data.mean, data.std).train(model, tasks, loss_fn, 0.1, states)
    tol = rtol(3, longest_sum(cfg.client_batch, data.shape))       # 25 images: 3 dependent steps
    for i in range(len(tasks)):
        assert_near({k: v[i] for k, v in vec.items()}, {k: v[i] for k, v in seq.items()}, tol, f"client {i}'s weights")


def test_engine_leaves_the_start_model_untouched():
    cfg, data, model, tasks, loss_fn = _setup("fix", [15], epochs=1.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for engine in (SequentialEngine, VectorizedEngine):
        engine(cfg, data.mean, data.std).train(model, tasks, loss_fn, 0.1, [None])
        for k, v in model.state_dict().items():
            assert torch.equal(v, before[k]), (engine.__name__, k)


def test_sgd_step_matches_hand_computation():
    """One vectorized step (FlatModels) on a linear model: clip, weight decay, momentum, Nesterov, written out by
    hand."""
    from semifl_core.sgd import FlatModels
    cfg = profile("smoke", weight_decay=0.1, momentum=0.9, nesterov=True, clip_norm=1.0)
    flat = FlatModels({"w": torch.tensor([1.0, 2.0])}, [{"w": torch.tensor([0.5, 0.5])}], cfg, lr=0.1)
    flat.step({"w": torch.tensor([[3.0, 4.0]])})   # norm 5 -> clipped to norm 1: [0.6, 0.8]
    p, buf = flat.params, flat.views(flat.m)
    gc = torch.tensor([0.6, 0.8]) * (1.0 / (5.0 + 1e-6)) * 5.0
    d = gc + 0.1 * torch.tensor([1.0, 2.0])
    new_buf = 0.9 * torch.tensor([0.5, 0.5]) + d
    expected = torch.tensor([1.0, 2.0]) - 0.1 * (d + 0.9 * new_buf)
    torch.testing.assert_close(buf["w"][0], new_buf)
    torch.testing.assert_close(p["w"][0], expected)
