"""CBAFed (methods/cbafed.py): its thresholds and tail-class labels against a hand computation, its residual weight
connections on a toy model, its aggregation weights and warm-up in a smoke run, its placement, and its bad input."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from semifl_core import partition as P
from semifl_core.config import ConfigError, profile
from semifl_core.methods import CBAFED, CBAFED_FIXMATCH, CBAFED_LOWER, SERVER, CLIENTS
from semifl_core.methods import cbafed as CB
from semifl_core.methods.pseudo_labels import class_balanced_thresholds
from semifl_core.rounds import Round, RoundRecord
from semifl_core.run import run


# --------------------------------------------------------------------------- thresholds and labels by hand
def test_thresholds_equal_the_hand_computation():
    counts = [500, 300, 100, 50, 50, 0, 0, 0, 0, 0]                       # sum 1000, C = 10: p~ = counts / 1000
    p = np.array(counts) / 1000
    std = np.sqrt(((p - p.mean()) ** 2).sum() / 9)                         # unbiased: 1 / (C - 1)
    assert np.allclose(class_balanced_thresholds(counts, 0.95), np.minimum(p + 0.84 - std, 0.95))
    assert class_balanced_thresholds(counts, 0.95)[0] == 0.95              # capped at tau_h
    assert np.isclose(class_balanced_thresholds(counts, 0.95)[9], 0.84 - std)   # an unseen class: lowest
    shares100 = np.arange(1, 101, dtype=float)                            # C = 100: p~ scaled by C / 10
    p100 = shares100 / shares100.sum() * 10
    assert np.allclose(class_balanced_thresholds(shares100, 1.0), np.minimum(p100 + 0.84 - p100.std(ddof=1), 1.0))


def test_tail_classes_and_second_choice_labels():
    counts = np.array([400, 300, 200, 80, 20])   # p~ (C = 5, scaled by 5/10) = .2 .15 .1 .04 .01; beta / C = .06
    assert CB.tail_classes(counts).tolist() == [False, False, False, True, True]
    assert CB.tail_classes(counts, "code").tolist() == [False, False, False, False, True]   # p~ < 0.03
    thresholds = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    tail = np.array([False, False, False, True, True])
    probs = np.array([
        [0.95, 0.01, 0.01, 0.02, 0.01],   # confident in class 0 (0.95 > 0.9): label 0
        [0.90, 0.01, 0.01, 0.07, 0.01],   # 0.90 is not > 0.9; second class 3 is a tail class: label 3
        [0.50, 0.45, 0.01, 0.02, 0.02],   # unconfident, second class 1 is not a tail class: dropped
        [0.05, 0.05, 0.75, 0.10, 0.05],   # confident in class 2 (0.75 > 0.7)
        [0.10, 0.02, 0.03, 0.25, 0.60],   # class 4's 0.60 > 0.5: confident, label 4 (its second, 3, is not used)
        [0.30, 0.05, 0.05, 0.20, 0.40],   # class 4 unconfident (0.40), second class 0 not tail: dropped
    ])
    keep, labels = CB.select(probs, thresholds, tail)
    assert keep.tolist() == [0, 1, 3, 4] and labels.tolist() == [0, 3, 2, 4]


# --------------------------------------------------------------------------- residual weight connections
def _toy_state(value=0.0):
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(value)
    return model


def test_local_residual_after_epochs_0_5_10(monkeypatch):
    """Each epoch 'trains' the weights to e + 1; the residual: R = 1 after epoch 0, theta = 0.8 R + 0.2 theta and
    R = theta after epochs 5 and 10: 0.8 * 1 + 0.2 * 6 = 2, then 0.8 * 2 + 0.2 * 11 = 3.8."""
    epochs = iter(range(1, 12))

    def fake_train(exp, st, model, spec, lr, c, rnd, *a, **k):
        value = float(next(epochs))
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(value)
        return 0.0
    monkeypatch.setattr(CB, "train_client", fake_train)
    exp = SimpleNamespace(labeled_idx=[torch.arange(4)], data=SimpleNamespace(x_train=torch.zeros(4, 1),
                                                                              y_train=torch.zeros(4)),
                          cfg=SimpleNamespace(lr=0.03, cbafed_variant="paper"))
    model = _toy_state()
    CB.labeled_epochs(exp, None, model, None, CB.LABELED_EPOCHS)
    assert torch.allclose(model.weight, torch.full_like(model.weight, 3.8))


@pytest.mark.parametrize("variant,want", [("paper", [1, 2, 3, 4, 2.5, 6, 7, 8, 9, 6.25, 11]),
                                          ("code", [1, 2, 3, 4, 5, 3, 7, 8, 9, 10, 7])])
def test_global_residual_every_5_rounds(monkeypatch, variant, want):
    """Federated round t (0-based) trains the labeled client's weights to t + 1 and, alone, it is the aggregate;
    R_g = the start (0). Paper: after rounds 5 and 10 (1-based), 0.5 * 0 + 0.5 * 5 = 2.5, then 0.5 * 2.5 + 0.5 * 10
    = 6.25. The released code (com_round > 0 and com_round % 5 == 0, from 0): after rounds 6 and 11, 0.5 * 0 + 0.5 * 6
    = 3, then 0.5 * 3 + 0.5 * 11 = 7."""
    def fake_epochs(exp, st, model, rnd, epochs, with_residual=True):
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(rnd.r + 1))
        return 0.0
    monkeypatch.setattr(CB, "labeled_epochs", fake_epochs)
    cfg = SimpleNamespace(lr=0.03, cbafed_warmup=0, num_classes=2, threshold=0.95, cbafed_variant=variant,
                          num_clients=3)
    exp = SimpleNamespace(cfg=cfg, labeled_idx=[torch.arange(4)],
                          data=SimpleNamespace(y_train=torch.tensor([0, 1, 0, 1])))
    st = SimpleNamespace(model=_toy_state(), labeling={}, server_state=None, client_states={})
    seen = []
    for r in range(11):
        rnd = Round(r, 0.03, np.random.default_rng(r), torch.Generator(), torch.device("cpu"), False, False,
                    RoundRecord(round=r + 1, lr=0.03))
        CB.cbafed_round(exp, st, rnd, part="labeled-only")
        seen.append(round(st.model.weight[0, 0].item(), 6))
    assert seen == want


# --------------------------------------------------------------------------- a smoke run: warm-up and weights
def test_warmup_trains_the_labeled_client_alone_and_weights_are_sizes(monkeypatch, tmp_path):
    trained, weights, selected = [], [], {}
    real_train, real_fedavg, real_select = CB.train_client, CB.fedavg, CB.select

    def spy_train(exp, st, model, spec, lr, c, rnd, *a, **k):
        trained.append((rnd.r, c))
        return real_train(exp, st, model, spec, lr, c, rnd, *a, **k)

    def spy_fedavg(states, sizes):
        weights.append(list(sizes))
        return real_fedavg(states, sizes)

    def spy_select(probs, thresholds, tail):
        keep, labels = real_select(probs, thresholds, tail)
        selected.setdefault(len(weights), []).append(len(keep))
        return keep, labels
    monkeypatch.setattr(CB, "train_client", spy_train)
    monkeypatch.setattr(CB, "fedavg", spy_fedavg)
    monkeypatch.setattr(CB, "select", spy_select)
    cfg = profile("smoke", algorithm=CBAFED, rounds=4, cbafed_warmup=2, threshold=0.3)
    run(cfg, tmp_path, device="cpu", progress=False)
    assert {c for r, c in trained if r < 2} == {0}, "a client other than the labeled one trained in the warm-up"
    assert len(weights) == 2, "the warm-up aggregated"
    labeled_size = 10 * cfg.client_labels
    for i, w in enumerate(weights):   # |D_L|, then each training client's number of selected images
        assert w[0] == labeled_size and w[1:] == [n for n in selected[i] if n]
    assert any(n > 0 for n in selected[1]), "no unlabeled client was selected: the weights were not checked"
    assert {c for r, c in trained if r >= 2} > {0}


def test_one_labeled_client_holds_labels_only():
    labels = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 200))
    cfg = profile("smoke", algorithm=CBAFED)
    server, clients, labeled = P.make_split(cfg, labels)
    assert len(clients[0]) == 0 and len(labeled[0]) == 10 * cfg.client_labels
    assert all(len(c) for c in clients[1:]) and all(len(x) == 0 for x in labeled[1:])
    every = np.concatenate([*clients, labeled[0]])
    assert len(every) == len(np.unique(every)) == len(labels)


# --------------------------------------------------------------------------- the labeled client as its code draws it
FMNIST_LIKE = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 6000))   # 60,000 labels, 6,000 a class


def test_dirichlet_labeled_client_is_its_share_of_one_draw_over_all_clients():
    """cbafed_labeled="dirichlet": client 0's labeled set and clients 1..9's unlabeled sets are exactly the ten shares
    of one partition.dirichlet draw over the whole training set (the run's seed, the partition's alpha); client 0's
    class counts follow that draw: skewed, where "balanced" gives it client_labels of every class."""
    balanced = profile("small", algorithm=CBAFED)
    cfg = balanced.replace(cbafed_labeled="dirichlet", seed=3)
    _, clients, labeled = P.make_split(cfg, FMNIST_LIKE)
    draw = P.dirichlet(np.arange(len(FMNIST_LIKE)), FMNIST_LIKE, 10, 0.8, 10, np.random.default_rng(3))
    assert np.array_equal(labeled[0], draw[0]) and len(clients[0]) == 0
    assert all(np.array_equal(c, d) for c, d in zip(clients[1:], draw[1:])) and not any(map(len, labeled[1:]))
    counts = np.bincount(FMNIST_LIKE[labeled[0]], minlength=10)
    assert counts.max() > 2 * max(counts.min(), 1), f"client 0's class counts are not skewed: {counts}"
    _, _, balanced_labeled = P.make_split(balanced.replace(seed=3), FMNIST_LIKE)
    assert (np.bincount(FMNIST_LIKE[balanced_labeled[0]], minlength=10) == balanced.client_labels).all()
    every = np.concatenate([*clients, labeled[0]])
    assert len(every) == len(np.unique(every)) == len(FMNIST_LIKE)


def test_the_default_labeled_client_keeps_the_committed_runs_keys():
    """cbafed_labeled's default is left out of the run key: CBAFed's committed runs (results/) are the ones
    cbafed_configs names; its own setting's configs name other runs."""
    from pathlib import Path

    from semifl_core.report.configs import cbafed_configs, cbafed_own_setting_configs
    from semifl_core.results import run_dir
    results = Path(__file__).resolve().parents[1] / "results"
    own = cbafed_own_setting_configs("small", "fashionmnist")
    for label, cfg in cbafed_configs("small", "fashionmnist").items():
        path = run_dir(results, cfg)
        assert (path / "config.json").exists(), f"{label}: committed run {path.name} not found under its key"
        assert own[label].cbafed_labeled == "dirichlet" and own[label].key() != cfg.key()


def test_a_dirichlet_labeled_client_runs(tmp_path):
    """Every CBAFed row trains with a skewed labeled client (its size and counts are the draw's, not client_labels)."""
    for m in (CBAFED, CBAFED_LOWER):
        out = run(profile("smoke", algorithm=m, cbafed_labeled="dirichlet", threshold=0.3), tmp_path, device="cpu",
                  progress=False)
        assert np.isfinite(out["final_acc"])


def test_only_cbafeds_rows_draw_a_dirichlet_labeled_client():
    with pytest.raises(ConfigError) as err:
        profile("smoke", cbafed_labeled="dirichlet")
    msg = str(err.value)
    assert msg.startswith("cbafed_labeled='dirichlet'") and "semifl" in msg and "\n" not in msg


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("changes, field", [
    (dict(labels_at=SERVER), "labels_at="), (dict(labels_at=CLIENTS), "labels_at="),
    (dict(cbafed_variant="released"), "cbafed_variant="), (dict(threshold=0.0), "threshold="),
    (dict(threshold=1.5), "threshold="), (dict(cbafed_warmup=3), "cbafed_warmup="),
    (dict(cbafed_warmup=-1), "cbafed_warmup="), (dict(cbafed_labeled="dir"), "cbafed_labeled="),
    (dict(cbafed_labeled="dirichlet", partition="iid"), "cbafed_labeled=")])
def test_bad_cbafed_input_is_one_line(changes, field):
    with pytest.raises(ConfigError) as err:
        profile("smoke", algorithm=CBAFED, **changes)
    msg = str(err.value)
    assert msg.startswith(field) and "\n" not in msg


def test_the_lower_bound_never_reads_the_threshold():
    a, b = (profile("small", algorithm=CBAFED_LOWER, threshold=t) for t in (0.95, 0.5))
    assert a.key() == b.key()


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """Stopped after federated round 5 (its global residual and the class counts are in the checkpoint), resumed: the
    metrics equal those of a run in one go, to the last digit."""
    import pandas as pd

    from interrupt import interrupted
    cfg = profile("smoke", algorithm=CBAFED, rounds=8, cbafed_warmup=1, threshold=0.3)
    whole = run(cfg, tmp_path / "whole", device="cpu", progress=False)
    interrupted(cfg, tmp_path / "cut", after=6)
    resumed = run(cfg, tmp_path / "cut", device="cpu", progress=False)
    a, b = (pd.read_csv(f"{r['path']}/metrics.csv") for r in (whole, resumed))
    keep = [c for c in a.columns if not c.startswith("time_")]
    pd.testing.assert_frame_equal(a[keep], b[keep], check_exact=True)
    assert a.label_ratio.max() > 0, "no unlabeled image was selected: the counts were not exercised"


def test_fedavg_fixmatch_row_records_the_share_past_tau_and_its_accuracy(tmp_path):
    """The FedAvg + FixMatch row's label ratio is the share of unlabeled images whose weak-view confidence reaches
    tau_h: every image at a tiny tau_h, none at tau_h = 1 (a softmax of 10 classes never reaches 1 here)."""
    import pandas as pd
    ratios = {}
    for tau in (1e-6, 1.0):
        cfg = profile("smoke", algorithm=CBAFED_FIXMATCH, threshold=tau)
        out = run(cfg, tmp_path / str(tau), device="cpu", progress=False)
        m = pd.read_csv(f"{out['path']}/metrics.csv")
        fed = m[m["round"] > cfg.cbafed_warmup]
        assert len(fed) and fed.label_ratio.notna().all()
        ratios[tau] = fed
    assert (ratios[1e-6].label_ratio == 1.0).all() and ratios[1e-6].pseudo_acc.between(0, 100).all()
    none = ratios[1.0]
    assert (none.label_ratio == 0.0).all() and ("pseudo_acc" not in none or none.pseudo_acc.isna().all())


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_unlabeled_clients_train_on_the_images_the_variant_says(monkeypatch, tmp_path, variant):
    """paper: a client's selected images, raw (make_tasks draws a fresh weak view); code: the very weak views the
    global model pseudo-labeled, less a last batch of one image."""
    seen, checked = {}, []
    real_predict, real_select, real_train = CB.predict, CB.select, CB.train_client

    def spy_predict(model, images, mean, std):
        seen["view"] = images
        return real_predict(model, images, mean, std)

    def spy_select(probs, thresholds, tail):
        seen["keep"], labels = real_select(probs, thresholds, tail)
        return seen["keep"], labels

    def spy_train(exp, st, model, spec, lr, c, rnd, *a, **k):
        if c != CB.LABELED:
            keep = torch.as_tensor(seen["keep"])
            raw = exp.data.x_train[exp.client_idx[c]][keep]
            want = seen["view"][keep] if variant == "code" else raw
            if variant == "code" and len(keep) % exp.cfg.client_batch == 1:
                want = want[:-1]
            assert torch.equal(spec["x"], want) and k.get("view") == ("none" if variant == "code" else "weak")
            assert not torch.equal(seen["view"][keep], raw), "the weak view equals the raw images: nothing tested"
            checked.append(c)
        return real_train(exp, st, model, spec, lr, c, rnd, *a, **k)
    monkeypatch.setattr(CB, "predict", spy_predict)
    monkeypatch.setattr(CB, "select", spy_select)
    monkeypatch.setattr(CB, "train_client", spy_train)
    run(profile("smoke", algorithm=CBAFED, cbafed_variant=variant, threshold=0.3), tmp_path, device="cpu",
        progress=False)
    assert checked, "no unlabeled client trained"


# --------------------------------------------------------------------------- the released code's input pipeline
def test_code_inputs_resize_as_the_released_loader_and_crop_without_padding():
    """cbafed_variant="code": one-channel 28x28 images become three identical channels, 36x36 for training (bilinear)
    and 32x32 for testing; a training view is a 32x32 window of the 36x36 image (no padding), mirrored when flipped.
    The paper variant leaves the images as loaded."""
    from semifl_core.data import Dataset
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (6, 1, 28, 28), generator=gen, dtype=torch.uint8)
    data = Dataset("fashionmnist", x, torch.arange(6), x[:2], torch.arange(2), 10)
    assert CB.code_inputs(profile("smoke", algorithm=CBAFED), data) is data
    out = CB.code_inputs(profile("smoke", algorithm=CBAFED, cbafed_variant="code"), data)
    assert out.x_train.shape == (6, 3, 36, 36) and out.x_test.shape == (2, 3, 32, 32)
    assert out.x_train.dtype == torch.uint8 and torch.equal(out.x_train[:, 0], out.x_train[:, 2])
    want = torch.nn.functional.interpolate(x.float(), size=(36, 36), mode="bilinear", align_corners=False)
    assert (out.x_train[:, :1].float() - want).abs().max() <= 0.5          # rounded to uint8, nothing else
    views = CB.code_view(out.x_train, True, torch.Generator().manual_seed(1))
    assert views.shape == (6, 3, 32, 32)
    flipped = 0
    for img, v in zip(out.x_train, views):
        windows = [(oy, ox, f) for oy in range(5) for ox in range(5) for f in (False, True)
                   if torch.equal(img[:, oy:oy + 32, ox:ox + 32].flip(-1) if f else img[:, oy:oy + 32, ox:ox + 32], v)]
        assert windows, "a view that is no window of its image"
        flipped += windows[0][2]
    assert 0 < flipped < 6                                                    # some flipped, some not (seeded)


@pytest.mark.parametrize("changes", [dict(algorithm="semifl"), dict(algorithm=CBAFED_FIXMATCH),
                                     dict(algorithm="partially-supervised")])
def test_the_code_variant_with_a_method_that_has_none_is_one_line(changes):
    with pytest.raises(ConfigError) as err:
        profile("smoke", cbafed_variant="code", **changes)
    msg = str(err.value)   # the methods that declare it, and what this one declares
    assert msg.startswith("cbafed_variant='code': a field of cbafed, cbafed-labeled-only, cbafed-all-labeled;") \
        and "\n" not in msg
