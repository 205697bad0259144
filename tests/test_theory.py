"""The theorem1 notebook's model of appendix E (its own code, the cells tagged `definitions`): the exponents of
Theorem 1 and (8), the synthetic task's exponents (margin alpha, Hoelder q, tail s, coverage v), the box-kernel
plug-in (4), Steps 1-3 and the excess risk (2)."""
from types import SimpleNamespace

import numpy as np
import pytest

from notebook_code import load

theory = SimpleNamespace(**load("theorem1"))   # the notebook's own code
Task = theory.Task


# ---------------------------------------------------------------------------------------------- the exponents

def test_rate_exponent_and_critical_zeta_on_given_numbers():
    # alpha = q = d = 1: labeled-only 2/5 (v = s = 0), SSL with v = s = 1: 2/7, zeta* = 5/7
    assert theory.rate_exponent(1, 1, 1) == pytest.approx(0.4)
    assert theory.rate_exponent(1, 1, 1, v=1, s=1) == pytest.approx(2 / 7)
    assert theory.critical_zeta(1, 1, 1, 1, 1) == pytest.approx(5 / 7)
    # alpha = 2, q = 0.5, d = 3, v = 0.5, s = 1: 0.5*3 / (0.5*6.5 + 3) = 1.5 / 6.25
    assert theory.rate_exponent(2, 0.5, 3, 0.5, 1) == pytest.approx(0.24)
    assert theory.critical_zeta(2, 0.5, 3, 0.5, 1) == pytest.approx((0.5 * 5 + 3) / 6.25)
    # (8) is e_ssl / e_l, and v = s = 0 puts the critical zeta at 1
    assert theory.critical_zeta(2, 0.5, 3, 0.5, 1) == pytest.approx(
        theory.rate_exponent(2, 0.5, 3, 0.5, 1) / theory.rate_exponent(2, 0.5, 3))
    assert theory.critical_zeta(1, 1, 1, 0, 0) == 1
    # the appendix's remarks: alpha -> infinity gives 1; large v + s gives about (alpha + 1)/(v + s)
    assert theory.rate_exponent(1e6, 1, 1, 1, 1) == pytest.approx(1, rel=1e-5)
    assert theory.rate_exponent(1, 1, 1, 1e4, 1e4) * 2e4 == pytest.approx(2, rel=1e-3)


def test_bandwidth_follows_the_proofs_power():
    h = [theory.bandwidth(n, 1, 1, 1, 1, 1, c=0.5) for n in (1e3, 1e6)]
    assert h[0] == pytest.approx(0.5 * 1e3 ** (-1 / 7))
    assert np.log(h[0] / h[1]) / np.log(1e3) == pytest.approx(1 / 7)


def test_fit_exponent_recovers_a_power_law():
    n = np.logspace(3, 6, 7)
    assert theory.fit_exponent(n, 3 * n ** -0.37) == pytest.approx(0.37)
    rate, boot = theory.bootstrap_exponents(n, np.tile(2 * n ** -0.5, (5, 1)), resamples=20)
    assert rate == pytest.approx(0.5) and np.allclose(boot, 0.5)


# ---------------------------------------------------------------------------------------------- the task

@pytest.mark.parametrize("alpha, q", [(1, 1), (2, 1), (0.5, 1), (2, 0.5), (3, 0.5)])
def test_margin_exponent_is_alpha(alpha, q):
    """(A4): P_l(|m(X) - 1/2| <= t) ~ t^alpha, in closed form and on a sample."""
    task = Task(alpha=alpha, q=q)
    t = np.array([0.01, 0.02, 0.05, 0.1, 0.2])
    slope = np.polyfit(np.log(t), np.log(task.margin_cdf(t)), 1)[0]
    assert slope == pytest.approx(alpha, abs=1e-9)
    n = 1_000_000
    x, _ = task.sample_labeled(n, np.random.default_rng(0))
    margin = np.abs(task.m(x) - 0.5)
    t = np.array([0.05, 0.1, 0.2, 0.3, 0.4])
    expected = task.margin_cdf(t)
    empirical = np.array([(margin <= ti).mean() for ti in t])
    assert np.all(np.abs(empirical - expected) <= 4 * np.sqrt(expected / n))      # 4 binomial sds
    assert np.polyfit(np.log(t), np.log(empirical), 1)[0] == pytest.approx(alpha, abs=0.05)


@pytest.mark.parametrize("q", [1.0, 0.5, 0.25])
def test_m_is_q_hoelder_and_no_smoother(q):
    """(A5): sup |m(x) - m(x')| / |x - x'|^q is finite (it is w^-q, reached across the boundary), and for q < 1 it
    is infinite with a larger power."""
    task = Task(q=q)
    rng = np.random.default_rng(1)
    x, x2 = rng.random(200_000), rng.random(200_000)
    near = 0.5 + np.r_[0, rng.random(20_000) * 1e-6]            # pairs straddling the boundary, very close
    x, x2 = np.r_[x, near], np.r_[x2, near[::-1]]
    keep = x != x2
    ratio = np.abs(task.m(x) - task.m(x2))[keep] / np.abs(x - x2)[keep] ** q
    assert ratio.max() <= task.w ** -q * (1 + 1e-6)
    assert ratio.max() >= task.w ** -q * 0.99
    if q < 1:                                                   # a q' > q fails at the boundary
        eps = 1e-8
        assert (task.m(0.5 + eps) - task.m(0.5)) / eps ** (q + 0.2) > 10


def test_labeled_density_is_asymmetric_only_near_the_boundary():
    task = Task(rho=0.5, eps=0.2)
    x, y = task.sample_labeled(400_000, np.random.default_rng(2))
    inner_right, inner_left = ((x >= 0.5) & (x < 0.7)).mean(), ((x < 0.5) & (x > 0.3)).mean()
    assert inner_right / inner_left == pytest.approx(3, rel=0.03)            # (1 + rho) / (1 - rho)
    assert (x >= 0.7).mean() == pytest.approx((x <= 0.3).mean(), rel=0.02)  # symmetric beyond eps
    assert y.mean() == pytest.approx(task.pi1, abs=0.003)                    # pi1's closed form
    quantiles = task.pl_quantile(np.linspace(0, 1, 1001))
    assert np.all(np.diff(quantiles) >= 0) and quantiles[0] == 0 and quantiles[-1] == 1


@pytest.mark.parametrize("s", [0.5, 1.0, 2.0])
def test_unlabeled_tail_exponent_is_s(s):
    """(A1): P_u(min{m, 1 - m} <= delta) = (2 delta)^s."""
    task = Task(s=s)
    conf = task.confidence(task.sample_unlabeled(400_000, np.random.default_rng(3)))
    for delta in (0.02, 0.05, 0.1, 0.3):
        assert (conf <= delta).mean() == pytest.approx((2 * delta) ** s, rel=0.05, abs=5e-4)


@pytest.mark.parametrize("v", [0.0, 1.0, 2.0])
def test_augmentation_coverage_exponent_is_v_and_copies_follow_m(v):
    """(A3): given u <= delta, the transmitted share is s/(s+v) (2 delta)^v; the balanced channel's transmitted
    copies have sides in proportion pi1 and P(side 1 | X~ in a bin) = m there (A2 and the appendix's stipulation)."""
    task = Task(v=v, s=1.0)
    rng = np.random.default_rng(4)
    x_u = task.sample_unlabeled(1_000_000, rng)
    for delta in (0.05, 0.2):
        xs = x_u[task.confidence(x_u) <= delta]
        x_t, transmitted = task.augment(xs, rng, balanced=False)
        share = 1 / (1 + v) * (2 * delta) ** v
        assert abs(transmitted.mean() - share) <= 4 * np.sqrt(share / xs.size)
        assert np.array_equal(x_t[~transmitted], xs[~transmitted])           # untransmitted copies stay put
    xs = x_u[task.confidence(x_u) <= 0.3]
    x_t, transmitted = task.augment(xs, rng, balanced=True)
    side = task.bayes(xs)[transmitted]
    assert side.mean() == pytest.approx(task.pi1, abs=1e-3)
    bins = np.linspace(0.3, 0.7, 9)
    where = np.digitize(x_t[transmitted], bins)
    for b in range(1, len(bins)):
        inside = where == b
        mid = (bins[b - 1] + bins[b]) / 2
        assert side[inside].mean() == pytest.approx(task.m(mid), abs=0.04)


def test_a_bad_task_is_refused():
    for bad in (dict(q=1.5), dict(alpha=0), dict(v=-1), dict(rho=1.0), dict(w=0)):
        with pytest.raises(ValueError):
            Task(**bad)


# ---------------------------------------------------------------------------------------------- the plug-in (4)

def test_plug_in_is_the_box_kernel_nadaraya_watson_estimate():
    rng = np.random.default_rng(5)
    x, y = rng.random(300), rng.random(300) < 0.4
    x[:3] = [0.2, 0.3, 0.45]                                       # queries at exactly h from these points
    clf = theory.PlugIn(x, y, 0.05)
    queries = np.r_[rng.random(200), 0.25, 0.35, 0.4, -1.0]
    inside = np.abs(queries[:, None] - x[None, :]) <= 0.05 * (1 + 1e-12)
    counts, sums = inside.sum(1), (inside * y).sum(1)
    brute = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    assert np.allclose(clf.m(queries), brute, equal_nan=True)
    assert np.isnan(clf.m([-1.0]))[0] and not clf.predict([-1.0])[0]   # no neighbour: m_n = 0, class 0
    assert np.array_equal(clf.predict(queries), (counts > 0) & (2 * sums >= counts))


def test_plug_in_with_infinite_data_is_the_bayes_rule():
    """Labels replaced by their means m(X) on a dense P_l sample: with a symmetric task (rho = 0) the plug-in is the
    Bayes classifier for every bandwidth; with rho > 0 its excess risk is ~ h^{q(1+alpha)} -> 0."""
    sym = Task(rho=0.0)
    xs = sym.test_grid(2 ** 18)
    grid = sym.test_grid(2 ** 13)
    for h in (0.2, 0.05, 0.01):
        assert np.array_equal(theory.PlugIn(xs, sym.m(xs), h).predict(grid), sym.bayes(grid))
        assert theory.excess_risk(sym, theory.PlugIn(xs, sym.m(xs), h), grid) == 0
    task = Task()
    xs = task.test_grid(2 ** 20)
    hs = np.array([0.1, 0.05, 0.025])
    risks = [theory.excess_risk(task, theory.PlugIn(xs, task.m(xs), h)) for h in hs]
    assert risks[-1] < 1e-4
    assert np.polyfit(np.log(hs), np.log(risks), 1)[0] == pytest.approx(task.q * (1 + task.alpha), abs=0.1)


def test_excess_risk_of_the_bayes_rule_is_zero_and_of_a_constant_is_closed_form():
    task = Task(rho=0.0)
    grid = task.test_grid()
    bayes = theory.PlugIn(np.array([0.25, 0.75]), np.array([0.0, 1.0]), 0.25)   # predicts x >= 1/2 on [0, 1]
    assert np.array_equal(bayes.predict(grid), task.bayes(grid))
    assert theory.excess_risk(task, bayes, grid) == 0
    zero = theory.PlugIn(np.array([0.5]), np.array([0.0]), 1.0)                  # always class 0
    # E_l |2m - 1| 1{x >= 1/2} = int_0^{1/2} min(1, 2y/w) dy = w/4 + (1 - w)/2 for alpha = q = 1, rho = 0
    assert theory.excess_risk(task, zero, grid) == pytest.approx(task.w / 4 + (1 - task.w) / 2, rel=1e-6)


# ---------------------------------------------------------------------------------------------- Steps 1-3

def test_steps_select_confident_points_with_their_bayes_labels():
    task = Task()
    rng = np.random.default_rng(6)
    x_l, y_l = task.sample_labeled(20_000, rng)
    m0 = theory.PlugIn(x_l, y_l, 0.05)
    x_u = task.sample_unlabeled(50_000, rng)
    xs, y_hat = theory.select(m0, x_u, 0.1)
    m0_s = m0.m(xs)
    assert np.all(np.minimum(m0_s, 1 - m0_s) <= 0.1) and np.array_equal(y_hat, m0_s >= 0.5)
    assert np.mean(task.confidence(xs) <= 0.2) > 0.95 and np.mean(y_hat != task.bayes(xs)) < 1e-3
    h = theory.bandwidth(50_000, 1, 1, 1, 1, 1, c=0.5)
    clf, info = theory.ssl_plug_in(task, m0, x_l, y_l, x_u, h, 0.1, rng, selection=(xs, y_hat))
    assert info["n_selected"] == xs.size and 0 < info["n_transmitted"] < xs.size
    assert info["side1_share"] == pytest.approx(task.pi1, abs=2e-3)
    assert clf.x.size == x_l.size + xs.size
    assert theory.excess_risk(task, clf) < 2e-3


def test_run_cell_is_seeded_and_uses_the_proofs_choices():
    task = Task()
    a = theory.run_cell(task, 3000, 0.7, [0, 1], c_h=0.5, c_delta=1.0)
    b = theory.run_cell(task, 3000, 0.7, [0, 1], c_h=0.5, c_delta=1.0)
    assert a == b
    assert a["n_l"] == round(3000 ** 0.7)
    assert a["h_l"] == pytest.approx(0.5 * a["n_l"] ** (-1 / 5))
    assert a["h_ssl"] == pytest.approx(0.5 * (a["n_l"] + 3000) ** (-1 / 7))
    assert a["delta"] == pytest.approx(a["h_ssl"])
    assert a["risk_l"] >= 0 and a["risk_ssl"] >= 0 and a["risk_naive"] >= 0
    only = theory.run_cell(task, 3000, 1.0, [0, 2], ssl=False)
    assert only["n_l"] == 3000 and "risk_ssl" not in only


def test_bootstrap_ratio_on_power_laws():
    n = np.logspace(3, 6, 7)
    a, b = np.tile(2 * n ** -0.3, (4, 1)), np.tile(n ** -0.4, (4, 1))
    out = theory.bootstrap_ratio(n, a, b, resamples=10)
    assert out["slope"] == pytest.approx(0.1) and np.allclose(out["slope_boot"], 0.1)
    assert out["log_ratio_last"] == pytest.approx(np.log(2) + 0.1 * np.log(1e6))
