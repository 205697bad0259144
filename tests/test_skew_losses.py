"""The client-loss variants against label skew (methods/skew_losses.py): FedNTD's not-true distillation and FedVLS's
vacant-class distillation in SemiFL's client loss, against hand computations; runs that use them; bad input."""
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from float_bound import assert_near, longest_sum, rtol
from semifl_core.config import ConfigError, profile
from semifl_core.methods import semifl, skew_losses


def test_not_true_logits_leave_out_each_samples_label_in_class_order():
    z = torch.arange(12.0).view(3, 4)
    got = skew_losses.not_true(z, torch.tensor([0, 2, 3]))
    assert torch.equal(got, torch.tensor([[1.0, 2, 3], [4, 5, 7], [8, 9, 10]]))


def test_not_true_distillation_is_feddnts_kl_over_the_other_classes():
    """By hand: softmax over the classes other than y at temperature tau, KL(teacher || student), batch mean, beta
    tau^2. The true class's logit never matters (neither value nor gradient); equal logits give 0."""
    torch.manual_seed(0)
    s, t, y = torch.randn(5, 4, requires_grad=True), torch.randn(5, 4), torch.tensor([0, 1, 2, 3, 0])
    got = skew_losses.not_true_distillation(s, t, y, {}, beta=0.7, tau=2.0)
    want = 0
    for i in range(5):
        keep = [c for c in range(4) if c != y[i]]
        p = F.softmax(t[i, keep] / 2.0, 0)
        want = want + (p * (p.log() - F.log_softmax(s[i, keep] / 2.0, 0))).sum()
    torch.testing.assert_close(got, 0.7 * 4.0 * want / 5)
    got.backward()
    assert torch.all(s.grad[torch.arange(5), y] == 0) and s.grad.abs().sum() > 0
    moved = s.detach().clone()
    moved[torch.arange(5), y] += 5.0                                   # the label's own logit: no effect
    torch.testing.assert_close(skew_losses.not_true_distillation(moved, t, y, {}, 0.7, 2.0), got.detach())
    assert skew_losses.not_true_distillation(t, t, y, {}, 1.0, 1.0).abs() < 1e-6


def test_vacant_distillation_is_fedvls_kl_over_the_vacant_classes_only():
    torch.manual_seed(1)
    s, t = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5)
    vacant = torch.tensor([0.0, 1, 0, 1, 1]).expand(4, -1)
    got = skew_losses.vacant_distillation(s, t, vacant, {}, lam=0.1)
    keep = [1, 3, 4]
    p = F.softmax(t[:, keep], 1)
    want = (p * (p.log() - F.log_softmax(s[:, keep], 1))).sum(1).mean()
    torch.testing.assert_close(got, 0.1 * want)
    got.backward()
    assert torch.all(s.grad[:, [0, 2]] == 0)                           # held classes: untouched
    none = skew_losses.vacant_distillation(s, t, torch.zeros(4, 5), {}, lam=0.1)
    assert none.item() == 0.0 and torch.isfinite(none)
    assert list(skew_losses.vacant_classes(np.array([0, 0, 3, 1]), 5)) == [0, 0, 1, 0, 1]


def test_the_terms_honour_a_padded_steps_mask():
    torch.manual_seed(2)
    s, t, y = torch.randn(6, 4), torch.randn(6, 4), torch.tensor([0, 1, 2, 3, 0, 1])
    valid = torch.tensor([True] * 4 + [False] * 2)
    torch.testing.assert_close(skew_losses.not_true_distillation(s, t, y, {"valid": valid}, 1.0, 1.0),
                               skew_losses.not_true_distillation(s[:4], t[:4], y[:4], {}, 1.0, 1.0))
    v = torch.tensor([0.0, 1, 1, 0]).expand(6, -1)
    torch.testing.assert_close(skew_losses.vacant_distillation(s, t, v, {"valid": valid}, 0.1),
                               skew_losses.vacant_distillation(s[:4], t[:4], v[:4], {}, 0.1))


@pytest.mark.parametrize("remedy", [dict(ntd_beta=1.0), dict(vls_lambda=0.1)])
def test_a_distilling_run_trains_otherwise_both_engines_agree_and_off_keeps_the_run_key(tmp_path, remedy, monkeypatch):
    """The term reaches the clients' steps (a run differs from plain SemiFL) the same way in both engines; its teacher
    is the global model that made the pseudo-labels (same weights); off, every committed run's key is as it was."""
    from semifl_core.data import synthetic
    from semifl_core.run import run
    cfg = profile("smoke", rounds=1, threshold=0.0)
    assert cfg.replace(ntd_beta=0.0, vls_lambda=0.0).key() == cfg.key() != cfg.replace(**remedy).key()
    labelers, teachers = [], []
    real_label, real_teacher = semifl.label_clients, skew_losses.teacher_logits
    monkeypatch.setattr(semifl, "label_clients", lambda exp, model, *a, **k: (
        labelers.append({k: v.clone() for k, v in model.state_dict().items()}), real_label(exp, model, *a, **k))[1])
    monkeypatch.setattr(skew_losses, "teacher_logits", lambda exp, model, tasks: (
        teachers.append({k: v.clone() for k, v in model.state_dict().items()}), real_teacher(exp, model, tasks))[1])
    out = {name: run(c, tmp_path / name, device="cpu", progress=False, data=synthetic())
           for name, c in (("plain", cfg), ("seq", cfg.replace(**remedy)),
                           ("vec", cfg.replace(engine="vectorized", **remedy)))}
    assert len(teachers) == 2 and all(all(torch.equal(t[k], labelers[-1][k]) for k in t) for t in teachers)
    loss = {k: pd.read_csv(f"{v['path']}/metrics.csv").client_loss.to_numpy() for k, v in out.items()}
    tol = rtol(19, longest_sum(cfg.client_batch, (3, 16, 16)))   # round 0: each client's 19 steps
    if "ntd_beta" in remedy:                                       # vacant classes are rare at tau 0: no assert there
        assert abs(loss["seq"][0] / loss["plain"][0] - 1) > 10 * tol
    assert_near(loss["vec"][0], loss["seq"][0], tol, "round 0 client loss, vectorized vs sequential")


@pytest.mark.parametrize("changes, field", [
    (dict(ntd_beta=-1.0), "ntd_beta="), (dict(ntd_beta=float("nan")), "ntd_beta="), (dict(ntd_beta=True), "ntd_beta="),
    (dict(ntd_beta=1.0, ntd_tau=0.0), "ntd_tau="), (dict(ntd_tau=2.0), "ntd_tau="),
    (dict(ntd_beta=1.0, algorithm="fedavg-fixmatch"), "ntd_beta="),
    (dict(ntd_beta=1.0, global_pseudo_labels=False), "ntd_beta="),
    (dict(ntd_beta=1.0, algorithm="partially-supervised"), "ntd_beta="),
    (dict(ntd_beta=1.0, fedrs_alpha=0.5), "ntd_beta="), (dict(vls_lambda=-0.1), "vls_lambda="),
    (dict(vls_lambda=0.1, algorithm="cbafed"), "vls_lambda="), (dict(vls_lambda=0.1, ntd_beta=1.0), "vls_lambda=")])
def test_bad_distillation_input_is_one_line(changes, field):
    with pytest.raises(ConfigError) as err:
        profile("smoke", **changes)
    msg = str(err.value)
    assert msg.startswith(field) and "\n" not in msg


# ---------------------------------------------------------------------- part 3: FedVLS's released loss, a frozen head
def _released_fedvls(output, teach_output, y, num_per_class, lam):
    """FedVLS's released client loss (krumpguo/FedVLS, system/flcore/clients/clientvls.py: PriorCELoss + new_LADEloss +
    lam VLSloss), transcribed for one batch: the reference the remedy must equal where its absent classes are the
    released code's (classes with no sample)."""
    c = output.shape[1]
    prior = num_per_class / num_per_class.sum()
    absent = torch.where(prior == 0)[0]
    prior_ce = F.cross_entropy(output + torch.log(prior + 1e-9), y)
    spread = (output - torch.log(prior + 1e-9) + np.log(1. / c)).T * (y != torch.arange(c).view(-1, 1))
    lade = torch.sum((torch.logsumexp(spread, -1) - np.log(spread.size(-1))) * prior) * 0.005
    kl = torch.nn.KLDivLoss(reduction="batchmean")(F.log_softmax(output[:, absent], dim=1),
                                                    F.softmax(teach_output[:, absent], dim=1))
    return prior_ce + lade + lam * kl


def _net(student, teacher):
    from semifl_core.net import Net
    return Net(student, {}, {"w": torch.zeros(1)}, lambda w, x: teacher(x), one_forward=False)


def test_fedvls_remedy_is_the_released_client_loss_where_absent_means_no_sample():
    torch.manual_seed(0)
    x, t_logits = torch.randn(12, 5), torch.randn(12, 5)
    y = torch.tensor([0, 0, 1, 1, 1, 3, 0, 1, 3, 3, 0, 1])          # classes 2 and 4 absent
    remedy = skew_losses.FedVLS(0.1)
    b = {"x": x, "y": y, "prior": torch.as_tensor(remedy.rows(y.numpy(), 5)["prior"]).expand(12, -1)}
    f = _net(lambda z: 2 * z, lambda z: t_logits)
    out = f(x)
    got = remedy.ce(out, y, b) + remedy.extra(f, b, out, None, None)
    want = _released_fedvls(2 * x, t_logits, y, torch.bincount(y, minlength=5).float(), 0.1)
    torch.testing.assert_close(got, want)
    same = _net(lambda z: 2 * z, lambda z: 2 * z)                   # the teacher is the student: the KL term is 0
    torch.testing.assert_close(remedy.extra(same, b, out, None, None), skew_losses.lade(out, y, b["prior"][0], b))


def test_fedvls_prior_drops_the_classes_under_5_percent_and_their_samples_leave_the_ce():
    pseudo = np.array([0] * 60 + [3] * 36 + [7] * 4)               # class 7: 4 % of the fix set, absent
    p = skew_losses.prior(pseudo, 10)
    np.testing.assert_allclose(p, np.eye(10)[0] * 60 / 96 + np.eye(10)[3] * 36 / 96)
    torch.manual_seed(1)
    z, y = torch.randn(4, 10), torch.tensor([0, 3, 7, 3])
    b = {"prior": torch.as_tensor(p).expand(4, -1)}
    keep = torch.tensor([0, 1, 3])
    want = F.cross_entropy(z[keep] + torch.log(torch.as_tensor(p) + 1e-9), y[keep])
    torch.testing.assert_close(skew_losses.FedVLS(0.1).ce(z, y, b), want)
    padded = {**b, "valid": torch.tensor([True, True, True, False])}   # a padded step: the last sample is padding
    torch.testing.assert_close(skew_losses.FedVLS(0.1).ce(z, y, padded),
                               F.cross_entropy(z[:2] + torch.log(torch.as_tensor(p) + 1e-9), y[:2]))


def test_lade_over_a_padded_batch_equals_lade_over_its_real_samples():
    torch.manual_seed(2)
    z, y = torch.randn(6, 4), torch.tensor([0, 1, 1, 0, 2, 2])
    p = torch.tensor([0.5, 0.5, 0.0, 0.0])
    got = skew_losses.lade(z, y, p, {"valid": torch.tensor([True] * 4 + [False] * 2)})
    torch.testing.assert_close(got, skew_losses.lade(z[:4], y[:4], p, {}))


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_a_frozen_head_keeps_its_weights_and_momentum_through_local_training(engine):
    from semifl_core.data import synthetic
    from semifl_core.engine import SequentialEngine, VectorizedEngine
    from semifl_core.net import frozen
    from semifl_core.models import make_model
    from semifl_core.tasks import make_tasks
    data, cfg = synthetic(), profile("smoke", local_epochs=2.0)
    torch.manual_seed(0)
    model = make_model(cfg, 3)
    rng, g = np.random.default_rng(0), torch.Generator().manual_seed(0)
    specs = [{"x": data.x_train[a:a + n], "y": data.y_train[a:a + n]} for a, n in ((0, 23), (30, 12))]
    tasks = make_tasks(specs, 10, 2.0, rng, g, flip=True)
    state = {k: 0.01 * torch.ones_like(v) for k, v in model.named_parameters()}
    cls = SequentialEngine if engine == "sequential" else VectorizedEngine
    params, states, _ = cls(cfg, data.mean, data.std).train(model, tasks, frozen(semifl.supervised_loss, "fc."), 0.05,
                                                             [state, None])
    start = dict(model.named_parameters())
    for i in range(2):
        assert torch.equal(params["fc.weight"][i], start["fc.weight"].detach())
        assert torch.equal(params["fc.bias"][i], start["fc.bias"].detach())
        assert not torch.equal(params["features.0.weight"][i], start["features.0.weight"].detach())
    assert torch.equal(states[0]["fc.weight"], state["fc.weight"]) and not states[1]["fc.weight"].any()
    assert not torch.equal(states[0]["features.0.weight"], state["features.0.weight"])


@pytest.mark.parametrize("remedy", [dict(vls_lambda=0.1, vls_variant="released"), dict(frozen_head=True)])
def test_a_part3_run_trains_otherwise_both_engines_agree_and_off_keeps_the_run_key(tmp_path, remedy):
    from semifl_core.data import synthetic
    from semifl_core.run import run
    cfg = profile("smoke", rounds=1, threshold=0.0)
    assert cfg.replace(vls_variant="term", frozen_head=False).key() == cfg.key() != cfg.replace(**remedy).key()
    out = {name: run(c, tmp_path / name, device="cpu", progress=False, data=synthetic())
           for name, c in (("plain", cfg), ("seq", cfg.replace(**remedy)),
                           ("vec", cfg.replace(engine="vectorized", **remedy)))}
    loss = {k: pd.read_csv(f"{v['path']}/metrics.csv").client_loss.to_numpy() for k, v in out.items()}
    tol = rtol(19, longest_sum(cfg.client_batch, (3, 16, 16)))
    assert abs(loss["seq"][0] / loss["plain"][0] - 1) > 10 * tol
    assert_near(loss["vec"][0], loss["seq"][0], tol, "round 0 client loss, vectorized vs sequential")


@pytest.mark.parametrize("changes, field", [
    (dict(vls_variant="released"), "vls_variant="), (dict(vls_variant="paper", vls_lambda=0.1), "vls_variant="),
    (dict(frozen_head=True, fedrs_alpha=0.5), "frozen_head="),
    (dict(frozen_head=True, algorithm="fl2"), "frozen_head="),
    (dict(frozen_head=True, vls_lambda=0.1, vls_variant="released"), "frozen_head="),
    (dict(local_epochs=0.0), "local_epochs="), (dict(local_epochs=-1.0), "local_epochs=")])
def test_bad_part3_input_is_one_line(changes, field):
    with pytest.raises(ConfigError) as err:
        profile("smoke", **changes)
    msg = str(err.value)
    assert msg.startswith(field) and "\n" not in msg


def test_a_frozen_head_on_a_model_without_one_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^frozen_head=True: .*allowed with it: False$"):
        skew_losses.check_head(torch.nn.Sequential(torch.nn.Linear(3, 2)))
