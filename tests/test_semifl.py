"""SemiFL's equations (methods/semifl.py) and the shared schedule and batch plans, against hand computations."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from float_bound import assert_near, longest_sum, rtol
from semifl_core.augment import mixup
from semifl_core.engine import cosine_lr, module_net
from semifl_core.methods import semifl, semifl_loss, skew_losses
from semifl_core.tasks import epoch_batches
from semifl_core.net import sample_ce
from semifl_core.config import profile


def _linear(w):
    m = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[w, w]]))
    return m


def test_global_momentum_matches_hand_computation_over_two_rounds():
    cfg = profile("smoke", global_momentum=0.5)
    model = _linear(1.0)
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=cfg.global_momentum)   # as run.Experiment
    # round 1: clients average to 0.6 -> g = 0.4, buffer 0.4, w = 1 - 0.4 = 0.6
    clients = {"weight": torch.tensor([[[0.4, 0.4]], [[0.8, 0.8]]])}
    semifl.global_momentum_step(model, opt, semifl.average(clients))
    torch.testing.assert_close(model.weight, torch.full((1, 2), 0.6))
    # round 2: average 0.5 -> g = 0.1, buffer 0.5 * 0.4 + 0.1 = 0.3, w = 0.6 - 0.3 = 0.3
    clients = {"weight": torch.tensor([[[0.5, 0.5]]])}
    semifl.global_momentum_step(model, opt, semifl.average(clients))
    torch.testing.assert_close(model.weight, torch.full((1, 2), 0.3))


def test_zero_global_momentum_is_plain_averaging():
    cfg = profile("smoke", global_momentum=0.0)
    model = _linear(1.0)
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=cfg.global_momentum)   # as run.Experiment
    for avg in (0.2, 0.7):
        semifl.global_momentum_step(model, opt, {"weight": torch.full((1, 2), avg)})
        torch.testing.assert_close(model.weight, torch.full((1, 2), avg))


def test_average_is_equal_weight_and_parallel_gives_server_half():
    clients = {"w": torch.tensor([[1.0], [2.0], [6.0]])}     # sizes are not used: equal weights
    torch.testing.assert_close(semifl.average(clients)["w"], torch.tensor([3.0]))
    server = {"w": torch.tensor([9.0])}
    # server 1/2, each of the 3 clients 1/6
    torch.testing.assert_close(semifl.average(clients, server)["w"], torch.tensor([0.5 * 9 + (1 + 2 + 6) / 6]))
    assert semifl.average({}, server)["w"].item() == 9.0   # no client sent anything


def test_fix_set_is_the_confident_samples_and_mix_set_draws_with_replacement_from_all():
    conf = np.array([0.99, 0.2, 0.96, 0.95, 0.5, 0.94])
    rng = np.random.default_rng(0)
    fix, mix = semifl.fix_and_mix(conf, 0.95, rng)
    assert list(fix) == [0, 2, 3]                        # >= tau, tau itself included
    assert len(mix) == len(fix) and mix.min() >= 0 and mix.max() < len(conf)
    draws = np.concatenate([semifl.fix_and_mix(conf, 0.95, rng)[1] for _ in range(300)])
    assert set(draws) == set(range(len(conf)))           # unconfident samples are mixed in too
    assert np.bincount(draws).max() > 0 and len(draws) > len(set(draws))  # with replacement


def test_empty_fix_set_sends_nothing():
    fix, mix = semifl.fix_and_mix(np.array([0.3, 0.9]), 0.95, np.random.default_rng(0))
    assert len(fix) == 0 and len(mix) == 0


@pytest.mark.parametrize("n,batch,epochs,steps", [(23, 10, 5, 15), (30, 10, 1, 3), (7, 10, 2, 2),
                                                   (500, 10, 0.001, 1), (500, 10, 0.5, 25), (45, 10, 1.5, 8)])
def test_epoch_batches_step_count_and_coverage(n, batch, epochs, steps):
    out = epoch_batches(n, batch, epochs, np.random.default_rng(0))
    assert len(out) == steps == max(1, math.ceil(epochs * math.ceil(n / batch)))
    per_epoch = math.ceil(n / batch)
    for e in range(int(epochs)):                         # each whole epoch is a permutation of all samples
        assert sorted(np.concatenate(out[e * per_epoch:(e + 1) * per_epoch])) == list(range(n))


def test_cosine_schedule_over_all_rounds():
    cfg = profile("smoke", rounds=800, lr=0.03)
    assert cosine_lr(cfg, 0) == pytest.approx(0.03)
    assert cosine_lr(cfg, 400) == pytest.approx(0.015)
    assert cosine_lr(cfg, 200) == pytest.approx(0.03 * (1 + math.cos(math.pi / 4)) / 2)


def test_fix_mix_loss_equation():
    torch.manual_seed(0)
    f = torch.nn.Linear(4, 3)
    b = {"x": torch.randn(5, 4), "y": torch.tensor([0, 1, 2, 0, 1]), "x_weak": torch.randn(5, 4),
         "x_mix": torch.randn(5, 4), "y_mix": torch.tensor([2, 2, 1, 0, 0]), "lam": torch.tensor(0.3)}
    loss, aux = semifl.client_loss(module_net(f), b)
    assert aux.numel() == 0
    out = f(0.3 * b["x_weak"] + 0.7 * b["x_mix"])
    expected = F.cross_entropy(f(b["x"]), b["y"]) + 0.3 * F.cross_entropy(out, b["y"]) \
        + 0.7 * F.cross_entropy(out, b["y_mix"])
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(mixup(b["x_weak"], b["x_mix"], b["lam"]), 0.3 * b["x_weak"] + 0.7 * b["x_mix"])
    fix_only, _ = semifl.client_loss(module_net(f), {k: b[k] for k in ("x", "y")})   # mix_loss off: no mix views
    torch.testing.assert_close(fix_only, F.cross_entropy(f(b["x"]), b["y"]))


def test_fixmatch_loss_masks_unconfident_samples_and_counts_pseudo_labels():
    f = torch.nn.Identity()
    x_weak = torch.tensor([[10.0, 0, 0], [0, 0.1, 0], [0, 0, 9.0]])   # confident, unsure, confident
    x = torch.tensor([[0.0, 1, 0], [1.0, 0, 0], [0, 0, 2.0]])
    y_true = torch.tensor([0, 0, 1])                                   # third pseudo-label (2) is wrong
    loss, (n, right, n_mask, mask_right) = semifl.fixmatch_loss(0.95)(f, {"x": x, "x_weak": x_weak, "y": y_true})
    expected = (F.cross_entropy(x[0:1], torch.tensor([0])) + F.cross_entropy(x[2:3], torch.tensor([2]))) / 3
    torch.testing.assert_close(loss, expected)
    assert (n.item(), right.item(), n_mask.item(), mask_right.item()) == (3, 1, 2, 1)


# ---------------------------------------------------------------------- FedRS's restricted softmax (fedrs_alpha)
def test_fedrs_scale_keeps_the_classes_of_the_fix_set_and_scales_the_others():
    """A client holds the classes with at least 5 % of its fix set: 4 of 100 labels do not make a class its own."""
    pseudo = np.array([0] * 60 + [3] * 31 + [5] * 5 + [7] * 4)
    np.testing.assert_array_equal(skew_losses.fedrs_scale(pseudo, 10, 0.5),
                                  [1, .5, .5, 1, .5, 1, .5, .5, .5, .5])


def test_restricted_softmax_scales_the_missing_classes_gradient_by_alpha():
    """FedRS's point: at zero logits the gradient on the classifier row of a class the client does not hold is alpha
    times the plain one (softmax p_c = 1/C either way, d logit / d w_c = alpha h); a held class's row is unchanged. A
    scale of ones is the plain loss exactly."""
    torch.manual_seed(0)
    b = {"x": torch.randn(6, 4), "y": torch.tensor([0, 1, 0, 1, 0, 1]), "x_weak": torch.randn(6, 4),
         "x_mix": torch.randn(6, 4), "y_mix": torch.tensor([1, 0, 0, 1, 1, 0]), "lam": torch.tensor(0.3)}
    scale = torch.as_tensor(skew_losses.fedrs_scale(b["y"].numpy(), 3, 0.5)).expand(6, -1)   # holds 0 and 1, not 2

    def grad(batch):
        f = torch.nn.Linear(4, 3, bias=False)
        torch.nn.init.zeros_(f.weight)
        loss, _ = semifl.client_loss(module_net(f), batch, skew_losses.FedRS(0.5) if "rs" in batch else
                                     skew_losses.Remedy())
        loss.backward()
        return loss, f.weight.grad

    plain_loss, plain = grad(b)
    _, restricted = grad({**b, "rs": scale})
    torch.testing.assert_close(restricted[2], 0.5 * plain[2])
    torch.testing.assert_close(restricted[:2], plain[:2])
    assert plain[2].abs().sum() > 0
    torch.manual_seed(1)
    f = torch.nn.Linear(4, 3)
    torch.testing.assert_close(semifl.client_loss(module_net(f), {**b, "rs": torch.ones(6, 3)},
                                                  skew_losses.FedRS(1.0))[0],
                               semifl.client_loss(module_net(f), b)[0])


def test_a_fedrs_run_trains_otherwise_and_both_engines_agree(tmp_path):
    """fedrs_alpha reaches the clients' steps (a run differs from plain SemiFL) the same way in both engines, and its
    default leaves every committed run's key as it was."""
    import pandas as pd
    from semifl_core.data import synthetic
    from semifl_core.run import run
    cfg = profile("smoke", rounds=2, threshold=0.0)
    assert cfg.replace(fedrs_alpha=1.0).key() == cfg.key() != cfg.replace(fedrs_alpha=0.5).key()
    out = {name: run(c, tmp_path / name, device="cpu", progress=False, data=synthetic())
           for name, c in (("plain", cfg), ("seq", cfg.replace(fedrs_alpha=0.5)),
                           ("vec", cfg.replace(fedrs_alpha=0.5, engine="vectorized")))}
    acc = {k: pd.read_csv(f"{v['path']}/metrics.csv").client_loss.to_numpy() for k, v in out.items()}
    # round 0's client loss: the mean over each client's 19 local steps (190 images, batch 10, E=1); later rounds are
    # past the bound's one round (tests/float_bound.py)
    tol = rtol(19, longest_sum(cfg.client_batch, (3, 16, 16)))
    assert abs(acc["seq"][0] / acc["plain"][0] - 1) > 10 * tol
    assert_near(acc["vec"][0], acc["seq"][0], tol, "round 0 client loss, vectorized vs sequential")


@pytest.mark.parametrize("changes", [dict(fedrs_alpha=0.0), dict(fedrs_alpha=1.5), dict(fedrs_alpha=True),
                                     dict(fedrs_alpha=0.5, algorithm="fedavg-fixmatch"),
                                     dict(fedrs_alpha=0.5, global_pseudo_labels=False)])
def test_bad_fedrs_alpha_is_one_line(changes):
    from semifl_core.config import ConfigError
    with pytest.raises(ConfigError) as err:
        profile("smoke", **changes)
    msg = str(err.value)
    assert msg.startswith("fedrs_alpha=") and "\n" not in msg


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_the_smoke_profile_trains_the_clients_in_every_round(engine, tmp_path, monkeypatch):
    """The profile the tests build on exercises client training: in every round of seeds 0-2 some client image passes
    tau, the clients' loss is called, and they train on samples (at its old tau 0.5 none did in two rounds)."""
    import pandas as pd
    from semifl_core.data import synthetic
    from semifl_core.run import run
    calls, real = [], semifl.client_loss   # SemiFL's own loss (Eq. 5, 6), which client_objective hands the engine
    monkeypatch.setattr(semifl, "client_loss", lambda f, b, *a: (calls.append(1), real(f, b, *a))[1])
    for seed in (0, 1, 2):
        calls.clear()
        out = run(profile("smoke", seed=seed, engine=engine), tmp_path, device="cpu", progress=False, data=synthetic())
        m = pd.read_csv(f"{out['path']}/metrics.csv")
        assert (m.client_samples > 0).all() and (m.label_ratio < 1).any() and calls, seed


# ------------------------------------------------------------------ a variant's parts of the loss (semifl_loss.Parts)
def _batch(seed=0):
    torch.manual_seed(seed)
    return {"x": torch.randn(6, 4), "y": torch.tensor([0, 1, 0, 1, 0, 2]), "x_weak": torch.randn(6, 4),
            "x_mix": torch.randn(6, 4), "y_mix": torch.tensor([1, 0, 0, 1, 1, 0]), "lam": torch.tensor(0.3)}


def smoothed_ce(eps):
    """A label-smoothing CE per sample: (1 - eps) CE + eps times the mean of -log p over the classes."""
    def ce(logits, y, b):
        return (1 - eps) * sample_ce(logits, y) - eps * torch.log_softmax(logits, -1).mean(-1)
    return ce


@pytest.mark.parametrize("remedy, rows", [
    (skew_losses.Remedy(), {}),
    (skew_losses.FedRS(0.5), {"rs": torch.tensor([1.0, 1.0, 0.5]).expand(6, -1)}),
    (skew_losses.FedVLS(0.1), {"prior": torch.tensor([0.5, 0.5, 0.0]).expand(6, -1)}),   # the sample of class 2 leaves
])
def test_the_loss_parts_change_one_at_a_time_and_keep_the_remedy(remedy, rows):
    """SemiFL's parts at their defaults are its loss exactly (Eq. 5, 6, the remedy's CEs and terms); a per-sample fix
    CE replaces L_fix alone (and reads the remedy's logits and weights: plain CE through it gives the remedy's loss),
    a weight scales its part alone, `mix` replaces L_mix alone."""
    from dataclasses import replace
    b, f = {**_batch(), **rows}, torch.nn.Linear(4, 3)
    base = semifl_loss.Parts(remedy)
    out_fix, out_mix = f(b["x"]), f(0.3 * b["x_weak"] + 0.7 * b["x_mix"])
    ce = lambda out, y: remedy.ce(out, y, b)  # noqa: E731
    l_fix, l_mix = ce(out_fix, b["y"]), 0.3 * ce(out_mix, b["y"]) + 0.7 * ce(out_mix, b["y_mix"])
    extra = remedy.extra(module_net(f), b, out_fix, out_mix, 0.3 * b["x_weak"] + 0.7 * b["x_mix"])
    loss = lambda parts: semifl_loss.parts_loss(module_net(f), b, parts)[0]  # noqa: E731
    assert torch.equal(loss(base), semifl.client_loss(module_net(f), b, remedy)[0])
    torch.testing.assert_close(loss(base), l_fix + l_mix + extra)
    torch.testing.assert_close(loss(replace(base, fix_ce=lambda z, y, b: sample_ce(z, y))), loss(base))
    eps = 0.1
    logits = remedy.logits(out_fix, b)
    w = remedy.weights(b["y"], b)
    w = torch.ones(6) if w is None else w
    smooth = ((smoothed_ce(eps)(logits, b["y"], b) * w).sum() / w.sum())
    torch.testing.assert_close(loss(replace(base, fix_ce=smoothed_ce(eps))), smooth + l_mix + extra)
    torch.testing.assert_close(loss(replace(base, fix_weight=2.0)), 2 * l_fix + l_mix + extra)
    torch.testing.assert_close(loss(replace(base, mix_weight=0.5)), l_fix + 0.5 * l_mix + extra)
    torch.testing.assert_close(loss(replace(base, mix=lambda p, out, b: out.pow(2).mean())),
                               l_fix + out_mix.pow(2).mean() + extra)


def test_a_part_the_loss_does_not_have_is_one_line():
    from semifl_core.config import ConfigError
    with pytest.raises(ConfigError, match=r"^SemiFL's client loss has no part 'fix_cee'; its parts: fix_ce, mix, "
                                          r"fix_weight, mix_weight$"):
        semifl_loss.Parts().change(fix_cee=sample_ce)
    assert semifl_loss.Parts().change(mix_weight=0.5).mix_weight == 0.5
    # through a variant, the line names the method
    from semifl_core.config import profile
    from semifl_core.methods import METHODS, SEMIFL, Method, register
    register(Method("test-typo", "Typo", variant_of=SEMIFL,
                    client_loss=lambda cfg, base: semifl_loss.loss_of(base.parts.change(fix_cee=sample_ce))))
    try:
        with pytest.raises(ConfigError, match=r"^method 'test-typo': SemiFL's client loss has no part 'fix_cee'; "
                                              r"its parts: fix_ce, mix, fix_weight, mix_weight$"):
            semifl_loss.semifl_client_loss(profile("smoke", algorithm="test-typo"))
    finally:
        METHODS.pop("test-typo", None)


def test_parts_built_anew_with_the_same_code_and_values_are_one_loss():
    """A variant builds its parts every round: equal code and values give an equal loss key, so a captured step is
    reused; another value is another loss."""
    from dataclasses import replace

    from semifl_core.net import loss_key
    make = lambda eps: semifl_loss.loss_of(replace(semifl_loss.Parts(), fix_ce=smoothed_ce(eps)))  # noqa: E731
    assert loss_key(make(0.1)) == loss_key(make(0.1)) != loss_key(make(0.2))


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_a_variant_keeps_every_semifl_switch_by_construction(engine, monkeypatch):
    """A variant whose own term reads every weight (a proximal term) under frozen_head: the head keeps its received
    weights through local training in both engines (the switch wraps the variant's loss); and the variant's loss is
    what SemiFL's clients train with, the remedy's CE inside it."""
    from semifl_core.config import profile
    from semifl_core.data import synthetic
    from semifl_core.engine import SequentialEngine, VectorizedEngine
    from semifl_core.methods import METHODS, SEMIFL, Method, register
    from semifl_core.models import make_model
    from semifl_core.net import graph_safe, sq_distance
    from semifl_core.tasks import make_tasks

    def prox(cfg, base):
        @graph_safe
        def loss(f, b):
            value, counts = base(f, b)
            return value + 0.5 * sq_distance(f.params, f.start), counts
        return loss

    register(Method("test-prox", "Test-Prox", variant_of=SEMIFL, client_loss=prox))
    try:
        cfg = profile("smoke", algorithm="test-prox", frozen_head=True, mix_loss=False, local_epochs=2.0)
        loss, views = semifl.client_objective(cfg)
        assert loss.frozen == ("fc.",)
        data = synthetic()
        torch.manual_seed(0)
        model = make_model(cfg, 3)
        with torch.no_grad():
            model.fc.weight.add_(1.0)   # far from zero: a term on all weights would move it
        specs = [{"x": data.x_train[a:a + n], "y": data.y_train[a:a + n]} for a, n in ((0, 23), (30, 12))]
        tasks = make_tasks(specs, 10, 2.0, np.random.default_rng(0), torch.Generator().manual_seed(0), flip=True,
                           strong_variant=cfg.strong_aug, **views)
        cls = SequentialEngine if engine == "sequential" else VectorizedEngine
        params, _, _ = cls(cfg, data.mean, data.std).train(model, tasks, loss, 0.05, [None, None])
        start = dict(model.named_parameters())
        for i in range(2):
            assert torch.equal(params["fc.weight"][i], start["fc.weight"].detach())
            assert not torch.equal(params["features.0.weight"][i], start["features.0.weight"].detach())
        # off, the same variant trains the head
        loss_off, _ = semifl.client_objective(cfg.replace(frozen_head=False))
        assert not getattr(loss_off, "frozen", ())
    finally:
        METHODS.pop("test-prox", None)
