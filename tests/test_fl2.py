"""(FL)^2 (methods/fl2.py): the SAM step, ASAM's variant, the consistency loss's gradient, the aggregation weights."""
import copy

import pytest
import torch
import torch.nn.functional as F

from float_bound import assert_near, rtol
from semifl_core.config import ConfigError, profile
from semifl_core.engine import module_net
from semifl_core.methods import fl2


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def _batch(confident):
    torch.manual_seed(1)
    return {"x": torch.randn(6, 4), "y": torch.tensor([0, 1, 2, 0, 1, 2]), "truth": torch.tensor([0, 1, 2, 1, 1, 0]),
            "confident": torch.tensor(confident)}


def test_sam_moves_the_weights_by_rho_along_the_normalized_gradient():
    params = {"a.weight": torch.tensor([[1.0, -2.0]]), "a.bias": torch.tensor([0.5])}
    grads = {"a.weight": torch.tensor([[3.0, 0.0]]), "a.bias": torch.tensor([4.0])}     # ||g|| = 5
    eps = fl2.perturbation(params, grads, rho=0.1)
    assert torch.allclose(eps["a.weight"], torch.tensor([[0.06, 0.0]])) and torch.allclose(eps["a.bias"],
                                                                                          torch.tensor([0.08]))
    assert torch.isclose(torch.sqrt(sum((e ** 2).sum() for e in eps.values())), torch.tensor(0.1))
    asam = fl2.perturbation(params, grads, rho=0.1, variant="code")   # T = |w| + 0.01 on weights, 1 on biases
    t = torch.tensor([[1.01, 2.01]])
    norm = torch.sqrt(((t * grads["a.weight"]) ** 2).sum() + 16.0)
    assert torch.allclose(asam["a.weight"], 0.1 * t ** 2 * grads["a.weight"] / norm)
    assert torch.allclose(asam["a.bias"], 0.1 * grads["a.bias"] / norm)


def test_the_step_gradient_is_la_at_w_plus_the_consistency_gradient_at_the_perturbed_weights():
    """Eq. (14) as the code runs it: grad L_a(W) + grad_{W*} L_cs(W*), W* = W + rho g_p / ||g_p|| (Eq. 11-13)."""
    b, rho = _batch([True, True, False, True, False, False]), 0.5
    model = Tiny()
    loss, counts = fl2.sacr_loss(rho)(module_net(model), b)
    got = torch.autograd.grad(loss, list(model.parameters()))
    # by hand: L_p's gradient, the perturbed copy, L_cs's gradient there, L_a's at W
    m = b["confident"]
    w = Tiny()
    lp = F.cross_entropy(w(b["x"])[m], b["y"][m])
    gp = torch.autograd.grad(lp, list(w.parameters()))
    norm = torch.sqrt(sum((g ** 2).sum() for g in gp))
    star = copy.deepcopy(w)
    with torch.no_grad():
        for p, g in zip(star.parameters(), gp):
            p += rho * g / norm
    q = F.softmax(w(b["x"]), 1).detach()
    kl = (q * (q.log() - F.log_softmax(star(b["x"]), 1))).sum(1)
    g_cs = torch.autograd.grad((kl * m.float()).mean(), list(star.parameters()))
    g_a = torch.autograd.grad(F.cross_entropy(w(b["x"]), b["y"]), list(w.parameters()))
    for a, ga, gc in zip(got, g_a, g_cs):   # three gradients one after the other (tests/float_bound.py)
        assert_near(a, ga + gc, rtol(3, b["x"].numel()), "SACR gradient")
    assert counts.tolist() == [6, 4, 3, 2]   # seen, right, high-confidence, right and high-confidence


def test_without_high_confidence_images_the_step_is_the_pseudo_label_loss_alone():
    b, model = _batch([False] * 6), Tiny()
    loss, _ = fl2.sacr_loss(0.1)(module_net(model), b)
    assert torch.allclose(loss, F.cross_entropy(model(b["x"]), b["y"]))


def test_learning_status_aware_weights():
    w = fl2.lsaa_weights([0.9, 0.6, 0.5])                  # 1 - tau: 0.1, 0.4, 0.5
    assert torch.allclose(w, torch.tensor([0.1, 0.4, 0.5], dtype=torch.float64))
    assert torch.allclose(fl2.lsaa_weights([1.0, 1.0]), torch.tensor([0.5, 0.5], dtype=torch.float64))


def test_its_profile_and_refusals():
    cfg = profile("small", algorithm="fl2")
    assert (cfg.pseudo_label_rule, cfg.mix_loss, cfg.engine, cfg.client_batch, cfg.sam_rho) == \
        ("client-adaptive", False, "auto", 32, 0.1)
    for over, says in ((dict(sam_rho=0.0), "sam_rho=0.0: must be > 0"),
                       (dict(fl2_variant="asam"), "fl2_variant='asam': allowed are paper, code")):
        with pytest.raises(ConfigError, match=says):
            profile("small", algorithm="fl2", **over)


def test_both_engines_train_a_round_of_fl2_alike(tmp_path):
    """(FL)^2's loss reads the weights from its Net, so the vectorized engine trains it as the sequential one (its
    engine was forced to the sequential one before): round 0's client loss of both, to the float bound."""
    import pandas as pd
    from float_bound import longest_sum
    from semifl_core.data import synthetic
    from semifl_core.run import run
    cfg = profile("smoke", algorithm="fl2", rounds=1)
    loss = {e: pd.read_csv(
        f"{run(cfg.replace(engine=e), tmp_path / e, device='cpu', progress=False, data=synthetic())['path']}"
        "/metrics.csv").client_loss[0] for e in ("sequential", "vectorized")}
    assert_near(loss["vectorized"], loss["sequential"], rtol(2 * 19, longest_sum(32, (3, 16, 16))), "fl2 round 0 loss")
