"""The pseudo-label selection rules beside SemiFL's Eq. (3) (methods/pseudo_labels.py), checked against hand
computations; a run with the stateful rule resumes exactly; bad values give one line."""
import math
import statistics

import numpy as np
import pandas as pd
import pytest

from semifl_core import run as run_mod
from semifl_core.config import ConfigError, profile
from semifl_core.data import synthetic
from semifl_core.methods import pseudo_labels as PL
from interrupt import interrupted

DATA = synthetic()


def test_class_balanced_thresholds_equal_a_hand_computation():
    counts = [30, 10, 10, 10, 10, 10, 10, 5, 5, 0]          # shares 0.3, 0.1 x 6, 0.05 x 2, 0
    p = [c / 100 for c in counts]
    sd = statistics.stdev(p)                                 # unbiased, as CBAFed's torch.std
    want = [min(pc + 0.84 - sd, 0.95) for pc in p]
    got = PL.class_balanced_thresholds(np.array(counts), 0.95)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert got[0] == 0.95 and got[9] < got[7] < got[1] < 0.95   # the head class is capped, rarer classes lower
    assert math.isclose(got[1], 0.1 + 0.84 - sd)


def test_class_balanced_selection_adds_the_labeled_counts_to_the_last_rounds():
    probs = [np.array([[0.90, 0.10], [0.20, 0.80]])]
    labeled, last = np.array([10, 10]), np.array([30, 0])
    got = PL.select(PL.CLASS_BALANCED, probs, 0.95, labeled, {"counts": last})[0]
    p = [40 / 50 * 0.2, 10 / 50 * 0.2]                       # two classes: the code's C / 10 scaling
    sd = statistics.stdev(p)
    assert np.allclose(got["tau"], [min(p[0] + 0.84 - sd, 0.95), min(p[1] + 0.84 - sd, 0.95)])
    first = PL.select(PL.CLASS_BALANCED, probs, 0.95, labeled, {})[0]      # round 1: the labeled counts alone
    assert np.allclose(first["tau"], 0.2 / 2 + 0.84)


def test_aligned_with_a_mean_equal_to_the_prior_leaves_probabilities_unchanged():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(10), size=50)
    prior = np.full(10, 0.1)
    assert np.allclose(PL.align(probs, prior, prior), probs, rtol=0, atol=1e-15)
    skewed = PL.align(probs, prior, np.array([0.5] + [0.5 / 9] * 9))   # class 0 over-predicted: pushed down
    assert (skewed[:, 0] < probs[:, 0]).all() and np.allclose(skewed.sum(1), 1)


def test_client_adaptive_thresholds_equal_a_hand_computation():
    probs = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.5, 0.4, 0.1]])
    t = (0.7 + 0.6 + 0.8 + 0.5) / 4                          # mean max probability
    level = [(0.7 + 0.6 + 0.1 + 0.5) / 4, (0.2 + 0.3 + 0.1 + 0.4) / 4, (0.1 + 0.1 + 0.8 + 0.1) / 4]
    want = [t * lc / max(level) for lc in level]
    assert np.allclose(PL.client_adaptive_thresholds(probs), want, rtol=0, atol=1e-12)
    got = PL.select(PL.CLIENT_ADAPTIVE, [probs], 0.95, np.array([1, 1, 1]), {})[0]
    assert np.allclose(got["tau"], [want[0], want[0], want[2], want[0]])
    assert list(got["conf"] >= got["tau"]) == [True, False, True, False]   # 0.6 < t = 0.65: below its client's level


def test_fixed_is_eq_3():
    probs = [np.array([[0.96, 0.04], [0.5, 0.5], [0.01, 0.99]])]
    got = PL.select(PL.FIXED, probs, 0.95, np.array([5, 5]), {})[0]
    assert list(got["pseudo"]) == [0, 0, 1] and got["tau"] == 0.95
    assert list(got["conf"] >= got["tau"]) == [True, False, True]
    assert list(PL.confident_counts([got], 2)) == [1, 1]


def test_a_class_balanced_run_resumes_exactly(tmp_path):
    """The rule's state (last round's counts) is in the checkpoint: stopped after round 2 and resumed, the run equals
    an uninterrupted one."""
    cfg = profile("smoke", rounds=4, threshold=0.2, pseudo_label_rule=PL.CLASS_BALANCED)
    whole = run_mod.run(cfg, tmp_path / "whole", device="cpu", progress=False, data=DATA)
    interrupted(cfg, tmp_path / "cut", after=2, data=DATA)
    resumed = run_mod.run(cfg, tmp_path / "cut", device="cpu", progress=False, data=DATA)
    a, b = (pd.read_csv(f"{r['path']}/metrics.csv") for r in (whole, resumed))
    keep = [c for c in a.columns if not c.startswith("time_")]
    pd.testing.assert_frame_equal(a[keep], b[keep])
    assert a.client_samples.sum() > 0                        # clients trained: the rule's thresholds were used


@pytest.mark.parametrize("overrides, says", [
    (dict(pseudo_label_rule="balanced"), "pseudo_label_rule='balanced': allowed are fixed, class-balanced, aligned, "
                                         "client-adaptive, global-adaptive (did you mean 'class-balanced'?)"),
    (dict(pseudo_label_rule="aligned", algorithm="fedavg-fixmatch"), "pseudo_label_rule='aligned': selects the "
                                                                     "global model's pseudo-labels"),
    (dict(pseudo_label_rule="aligned", global_pseudo_labels=False), "global_pseudo_labels=false"),
    (dict(pseudo_label_rule="client-adaptive", threshold=0.0), "threshold=0.0: must be in (0, 1]"),
    (dict(pseudo_label_rule="class-balanced", rng_streams="client"), "the Flower app runs 'fixed'"),
])
def test_bad_rules_give_one_line(overrides, says):
    with pytest.raises(ConfigError) as err:
        profile("smoke", **overrides)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_default_rule_leaves_the_run_key_unchanged():
    cfg = profile("small")
    assert cfg.pseudo_label_rule == PL.FIXED and cfg.key() == "56fba584081a"   # the committed small-profile runs' key
    assert profile("small", pseudo_label_rule=PL.ALIGNED).key() != cfg.key()


# ---------------------------------------------------------------------- label skew diagnostics
def _client(truth, probs, rule=PL.CLIENT_ADAPTIVE, tau=0.95):
    lab = PL.select(rule, [np.asarray(probs, dtype=np.float64)], tau, np.ones(3), {})[0]
    return {**lab, "truth": np.asarray(truth)}


def test_every_rule_reports_the_threshold_of_each_class_it_applies():
    probs = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    for rule in PL.RULES:
        lab = PL.select(rule, [probs], 0.95, np.array([5, 3, 2]), {"counts": np.array([4, 1, 0])})[0]
        assert lab["tau_class"].shape == (3,)
        assert np.allclose(np.broadcast_to(lab["tau"], (3,)), lab["tau_class"][lab["pseudo"]])   # the one it applies


def test_skew_measures_on_a_client_that_holds_two_of_three_classes():
    # the client holds classes 0 and 1; image 3 is pseudo-labeled 2, a class it does not hold
    probs = [[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]
    lab = _client([0, 1, 1, 0], probs)
    level, per_class = np.max(probs, 1).mean(), np.mean(probs, 0)
    tau_c = level * per_class / per_class.max()               # (FL)^2's rule by hand
    got = PL.skew_measures([lab], 3)
    assert got["skew_held"] == 2
    assert np.isclose(got["skew_tau_held"], tau_c[:2].mean()) and np.isclose(got["skew_tau_unheld"], tau_c[2])
    assert np.isclose(got["skew_pred_unheld"], 1 / 4)
    fix = np.max(probs, 1) >= tau_c[np.argmax(probs, 1)]
    assert fix.tolist() == [True, True, False, True]           # class 2's low threshold lets the wrong image 3 in
    assert np.isclose(got["skew_fix_unheld"], 1 / 3) and got["skew_pass_unheld"] == 1.0
    assert np.isclose(got["skew_pass_held"], 2 / 3) and got["skew_fix_acc_held"] == 100.0


def test_skew_measures_average_clients_and_leave_iid_unheld_cells_empty():
    iid = _client([0, 1, 2, 0, 1, 2], np.eye(3)[[0, 1, 2, 0, 1, 2]] * 0.97 + 0.01, rule=PL.FIXED)
    got = PL.skew_measures([iid], 3)
    assert got["skew_held"] == 3 and math.isnan(got["skew_tau_unheld"]) and math.isnan(got["skew_pass_unheld"])
    assert got["skew_fix_unheld"] == 0.0
    skewed = _client([0, 0, 1, 1], [[0.97, 0.02, 0.01]] * 2 + [[0.01, 0.02, 0.97]] * 2, rule=PL.FIXED)
    both = PL.skew_measures([iid, skewed], 3)
    assert both["skew_held"] == 2.5                             # one vote per client
    assert np.isclose(both["skew_pred_unheld"], (0 + 0.5) / 2)
    assert np.isclose(both["skew_fix_unheld"], (0 + 0.5) / 2)
    assert both["skew_pass_unheld"] == 1.0                      # the IID client has no not-held case: nan is skipped


def test_class_shift_splits_held_and_not_held_classes():
    held = np.array([True, False, False])
    start, client = {0: 50.0, 1: 60.0, 2: 70.0}, {0: 80.0, 1: 30.0, 2: 40.0}
    assert PL.class_shift(client, start, held) == (30.0, -30.0)
    assert math.isnan(PL.class_shift(client, start, np.ones(3, bool))[1])


def test_global_adaptive_is_client_adaptive_on_all_clients_images_together():
    a = np.array([[0.9, 0.05, 0.05], [0.8, 0.1, 0.1]])          # a client that sees class 0 only
    b = np.array([[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]])
    got = PL.select(PL.GLOBAL_ADAPTIVE, [a, b], 0.95, np.ones(3), {})
    want = PL.client_adaptive_thresholds(np.concatenate([a, b]))
    for lab in got:
        assert np.array_equal(lab["tau_class"], want) and np.array_equal(lab["tau"], want[lab["pseudo"]])
    own = PL.select(PL.CLIENT_ADAPTIVE, [a, b], 0.95, np.ones(3), {})[0]["tau_class"]
    assert own[1] < got[0]["tau_class"][1] and own[2] < got[0]["tau_class"][2]   # client a's rare classes: no longer ~0
