"""Labels at the clients (FedDure's placements), FedDure's regulators, and its baselines."""
import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from semifl_core import partition as P
from semifl_core.config import ConfigError, profile
from semifl_core.methods import (CLIENTS, FEDAVG_LABELED, FEDAVG_SL, FEDDURE, FEDAVG_FIXMATCH_CLIENTS, ONE_CLIENT,
                                 SEMIFL, SERVER)
from semifl_core.methods import feddure as FD
from semifl_core.run import Experiment, get_data


def labels_of(n_per_class=300, num_classes=10, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(num_classes), n_per_class))


def synthetic_cfg(**changes):
    """A FedDure config on a 3000-image label vector (the split only reads cfg's placement fields)."""
    return profile("smoke", algorithm=FEDDURE, **changes)


# --------------------------------------------------------------------------- placements
@pytest.mark.parametrize("unlabeled", ["iid", "dir-0.5", "non-iid-l-2"])
def test_iid_labeled_parts_exact_counts_disjoint_from_unlabeled(unlabeled):
    labels = labels_of()
    cfg = synthetic_cfg(client_labels=3, labeled_partition="iid", partition=unlabeled)
    server, clients, labeled = P.make_split(cfg, labels)
    assert len(server) == 0 and len(labeled) == len(clients) == cfg.num_clients
    for part in labeled:   # (IID, *): exactly client_labels of every class at every client
        assert np.bincount(labels[part], minlength=10).tolist() == [3] * 10
    every = np.concatenate(labeled + clients)
    assert len(np.unique(every)) == len(every), "an image is labeled and unlabeled, or held twice"
    assert len(np.concatenate(clients)) >= len(labels) - 3 * 10 * cfg.num_clients - cfg.num_clients


def test_dirichlet_labeled_parts_keep_the_pool_and_skew_it():
    labels = labels_of()
    cfg = synthetic_cfg(client_labels=5, labeled_partition="dir-0.5", partition="dir-0.5")
    _, clients, labeled = P.make_split(cfg, labels)
    pool = np.concatenate(labeled)
    assert np.bincount(labels[pool], minlength=10).tolist() == [5 * cfg.num_clients] * 10   # the same pool
    assert min(len(p) for p in labeled) >= 10
    counts = np.array([np.bincount(labels[p], minlength=10) for p in labeled])
    assert (counts == 0).any(), "Dirichlet(0.5) over 10 clients leaves some client without some class"
    assert len(np.intersect1d(pool, np.concatenate(clients))) == 0


def test_one_labeled_client():
    labels = labels_of()
    cfg = profile("smoke", algorithm=FEDAVG_LABELED, labels_at=ONE_CLIENT, client_labels=20)
    _, clients, labeled = P.make_split(cfg, labels)
    assert np.bincount(labels[labeled[0]], minlength=10).tolist() == [20] * 10
    assert all(len(p) == 0 for p in labeled[1:])
    assert len(np.intersect1d(labeled[0], np.concatenate(clients))) == 0


def test_placement_is_a_function_of_the_seed():
    labels = labels_of()
    cfg = synthetic_cfg(labeled_partition="dir-0.5", partition="dir-0.5")
    a, b, c = (P.make_split(x, labels) for x in (cfg, cfg, cfg.replace(seed=1)))
    assert all(np.array_equal(x, y) for x, y in zip(a.labeled + a.clients, b.labeled + b.clients))
    assert not all(np.array_equal(x, y) for x, y in zip(a.labeled, c.labeled))
    d = P.make_split(cfg.replace(seed=1, split_seed=0), labels)   # the split seed alone decides the split
    assert all(np.array_equal(x, y) for x, y in zip(a.labeled + a.clients, d.labeled + d.clients))


@pytest.mark.parametrize("changes, field", [
    (dict(algorithm=SEMIFL, labels_at=CLIENTS), "labels_at="),
    (dict(algorithm=FEDDURE, labels_at=SERVER), "labels_at="),
    (dict(algorithm=FEDDURE, labels_at=ONE_CLIENT), "labels_at="),
    (dict(algorithm=FEDDURE, feddure_variant="mpl"), "feddure_variant="),
    (dict(algorithm=FEDDURE, labeled_partition="non-iid-l-2"), "labeled_partition="),
    (dict(algorithm=FEDDURE, client_labels=0), "client_labels="),
    (dict(algorithm=FEDDURE, client_labels=50), "client_labels="),   # 50 x 10 clients > the rarest class (200)
])
def test_unsupported_placement_or_bad_value_is_one_line(changes, field):
    with pytest.raises(ConfigError) as err:
        profile("smoke", **changes)
    assert str(err.value).startswith(field) and "\n" not in str(err.value)
    if changes.get("algorithm") == SEMIFL:
        assert "Section 3.1" in str(err.value)   # the refusal says why


def test_semifl_run_keys_do_not_see_the_new_fields():
    cfg = profile("small", algorithm=SEMIFL)
    old = {k: v for k, v in cfg.to_dict().items()
           if k not in ("labels_at", "client_labels", "labeled_partition", "feddure_variant")}
    from semifl_core.config import run_key
    assert run_key(old) == cfg.key()


# --------------------------------------------------------------------------- F-reg's look-ahead, Eq. (4)-(5)
def test_lookahead_gradient_matches_finite_differences():
    torch.manual_seed(0)
    creg = nn.Linear(4, 3).double()
    freg = FD.FReg(3, hidden=5).double()
    u, y_hat = torch.randn(6, 4, dtype=torch.float64), torch.randint(0, 3, (6,))
    x, y = torch.randn(5, 4, dtype=torch.float64), torch.randint(0, 3, (5,))
    loss = FD.lookahead_loss(creg, freg, u, y_hat, x, y, eta_s=0.5)
    grads = torch.autograd.grad(loss, list(freg.parameters()))
    assert sum(g.abs().sum() for g in grads) > 1e-6
    eps = 1e-6
    for p, g in zip(freg.parameters(), grads):
        for i in range(min(p.numel(), 6)):
            flat = p.data.view(-1)
            keep = flat[i].item()
            flat[i] = keep + eps
            up = FD.lookahead_loss(creg, freg, u, y_hat, x, y, eta_s=0.5).item()
            flat[i] = keep - eps
            down = FD.lookahead_loss(creg, freg, u, y_hat, x, y, eta_s=0.5).item()
            flat[i] = keep
            assert abs((up - down) / (2 * eps) - g.view(-1)[i].item()) < 1e-6 * max(1.0, abs(g.view(-1)[i].item()))
    # C-reg itself is not moved by the look-ahead
    before = copy.deepcopy(creg.state_dict())
    FD.lookahead_loss(creg, freg, u, y_hat, x, y, eta_s=0.5)
    assert all(torch.equal(before[k], v) for k, v in creg.state_dict().items())


def test_lookahead_without_step_is_plain_labeled_loss():
    """eta_s = 0: phi^- = phi, so the loss is CE(y, f_d(x)) and F-reg gets no gradient through it."""
    torch.manual_seed(1)
    creg, freg = nn.Linear(4, 3).double(), FD.FReg(3, hidden=5).double()
    u, y_hat = torch.randn(6, 4, dtype=torch.float64), torch.randint(0, 3, (6,))
    x, y = torch.randn(5, 4, dtype=torch.float64), torch.randint(0, 3, (5,))
    loss = FD.lookahead_loss(creg, freg, u, y_hat, x, y, eta_s=0.0)
    assert torch.allclose(loss, nn.functional.cross_entropy(creg(x), y))


@pytest.fixture(scope="module")
def smoke_data():
    return get_data("synthetic", None, torch.device("cpu"))


def one_client_update(variant, data):
    cfg = profile("smoke", algorithm=FEDDURE, feddure_variant=variant)
    exp = Experiment(cfg, data, torch.device("cpu"))
    st = exp.new_state()
    from semifl_core.rounds import Round, RoundRecord
    rnd = Round(0, cfg.lr, np.random.default_rng(0), torch.Generator().manual_seed(0), torch.device("cpu"),
                False, False, RoundRecord(round=1, lr=cfg.lr))
    code = variant == "code"
    labeled, unlabeled, _ = FD.client_tasks(exp, 0, rnd, FD.FINE_TUNE_STEPS if code else 0)
    freg, model = FD.new_freg(exp, 0), copy.deepcopy(st.model)
    w0, m0 = copy.deepcopy(freg.state_dict()), copy.deepcopy(model.state_dict())
    (FD.code_local_update if code else FD.paper_local_update)(exp, model, freg, labeled, unlabeled, 1, [])
    changed = lambda a, b: any(not torch.equal(a[k], b[k]) for k in a)
    return changed(w0, freg.state_dict()), changed(m0, model.state_dict())


def test_freg_is_trained_in_paper_mode_and_not_in_code_mode(smoke_data):
    freg_moved, model_moved = one_client_update("paper", smoke_data)
    assert freg_moved and model_moved
    freg_moved, model_moved = one_client_update("code", smoke_data)
    assert not freg_moved and model_moved


def test_local_steps_rule():
    assert [FD.local_steps(n, 10) for n in (0, 10, 25, 30, 50, 3999, 4000)] == [4, 4, 4, 3, 5, 100, 100]


def test_freg_steps_counts_the_local_steps_a_run_takes(smoke_data, monkeypatch):
    """freg_steps (the step column of FedDure's 200-round table) = the F-reg steps a run really takes per client:
    its local steps summed over every client's rounds, over the clients; and it grows with the rounds."""
    cfg = profile("smoke", algorithm=FEDDURE, feddure_variant="paper")
    taken, update = [], FD.paper_local_update
    monkeypatch.setattr(FD, "paper_local_update", lambda exp, m, f, lab, unl, steps, stats: (
        taken.append(steps), update(exp, m, f, lab, unl, steps, stats)))
    exp = Experiment(cfg, smoke_data, torch.device("cpu"))
    st = exp.new_state()
    for r in range(cfg.rounds):
        exp.round(st, r)
    assert len(taken) == cfg.rounds * cfg.num_active
    assert sum(taken) / cfg.num_clients == pytest.approx(FD.freg_steps(cfg))
    assert FD.freg_steps(cfg.replace(rounds=4 * cfg.rounds)) == pytest.approx(4 * FD.freg_steps(cfg))
    assert FD.freg_steps(profile("small", "fashionmnist", algorithm=FEDDURE)) == pytest.approx(12.5)


# --------------------------------------------------------------------------- the server
def test_fedavg_weights_by_data_size_and_skips_integer_buffers():
    a = {"w": torch.tensor([1.0, 0.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([0.0, 1.0]), "n": torch.tensor(5)}
    avg = FD.fedavg([a, b], [30, 10])
    assert torch.allclose(avg["w"], torch.tensor([0.75, 0.25])) and "n" not in avg


@pytest.mark.parametrize("alg", [FEDDURE, FEDAVG_LABELED, FEDAVG_FIXMATCH_CLIENTS, FEDAVG_SL])
def test_methods_train_on_what_their_placement_gives(alg, smoke_data):
    """FedAvg* sees only labeled images (weight = labeled size); the others labeled + unlabeled."""
    cfg = profile("smoke", algorithm=alg)
    exp = Experiment(cfg, smoke_data, torch.device("cpu"))
    st = exp.new_state()
    row = exp.round(st, 0)
    assert row["clients_trained"] == cfg.num_active and np.isfinite(row["client_loss"])
    assert ("pseudo_acc" in row) == (alg in (FEDDURE, FEDAVG_FIXMATCH_CLIENTS))
    assert ("freg_weight" in row) == (alg == FEDDURE)


def test_resnet9_is_the_dawnbench_shape_with_a_one_channel_stem():
    from semifl_core.models import make_model
    model = make_model(profile("paper", "fashionmnist", algorithm=FEDDURE), 1)
    assert model.prep[0].in_channels == 1
    n = sum(p.numel() for p in model.parameters())
    assert 6.5e6 < n < 6.6e6    # ResNet-9 (64-128-256-512, two residual pairs): 6.57 M parameters
    assert model(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
