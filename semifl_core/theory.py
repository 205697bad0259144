"""Theorem 1 of SemiFL in numbers (appendix E of the ICLR 2022 submission; `notebooks/theorem1`). numpy only.

The appendix studies a binary task with regression function m(x) = P(Y = 1 | X = x), the box-kernel Nadaraya-Watson
plug-in classifier (4), and a generic SSL classifier (E.3, Steps 1-3): an initial estimate m0 from labels; the
unlabeled points whose m0 is within delta of 0 or 1 (3); their hard pseudo-labels and strongly augmented copies; the
plug-in retrained on the labels plus those copies. Theorem 1 (7) bounds its excess risk (2) by
C n_u^{-q(alpha+1)/{q(alpha+3+v+s)+d}}; the labeled-only plug-in's bound is the same exponent with v = s = 0, in n_l;
and (8) says that, for n_l ~ n_u^zeta, the SSL bound decays faster iff zeta < (q(alpha+3)+d)/(q(alpha+3+v+s)+d).

Here: `rate_exponent` (7), `critical_zeta` (8), `bandwidth` (the proof's h_n, after (30)); `Task`, a task on [0, 1]
meeting (A1)-(A5) with chosen exponents; `PlugIn` / `plug_in` (4); `select` (Step 1), `ssl_plug_in` (Steps 1-3);
`excess_risk` (2), (9); `run_cell`, `fit_exponent`, `bootstrap_exponents`, `bootstrap_ratio`: the experiment.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


# ---------------------------------------------------------------------------------------------- the exponents

def rate_exponent(alpha: float, q: float, d: int, v: float = 0.0, s: float = 0.0) -> float:
    """Theorem 1 (7): R(C_ssl) <= C n_u^{-e} with e = q(alpha+1) / {q(alpha+3+v+s) + d}. With v = s = 0 it is the
    exponent of the labeled-only plug-in's bound R(C_l) <= C' n_l^{-q(alpha+1)/{q(alpha+3)+d}} quoted after the
    theorem (Kohler & Krzyzak, 2007)."""
    return q * (alpha + 1) / (q * (alpha + 3 + v + s) + d)


def critical_zeta(alpha: float, q: float, d: int, v: float, s: float) -> float:
    """Inequality (8): with n_l ~ n_u^zeta the bound of R(C_l) is n_u^{-zeta e_l}, and the bound of R(C_ssl),
    n_u^{-e_ssl}, decays faster iff zeta < (q(alpha+3)+d) / (q(alpha+3+v+s)+d) = e_ssl / e_l."""
    return (q * (alpha + 3) + d) / (q * (alpha + 3 + v + s) + d)


def bandwidth(n: float, alpha: float, q: float, d: int, v: float = 0.0, s: float = 0.0, c: float = 1.0) -> float:
    """The proof's bandwidth (after (30)): h_n = c n^{-1/{q(alpha+3+v+s)+d}}; n is the sample size (the proof's
    n = n_l + n_u for C_ssl; v = s = 0 and n = n_l for C_l). The rate fixes the power only: c is free."""
    return c * float(n) ** (-1.0 / (q * (alpha + 3 + v + s) + d))


# ---------------------------------------------------------------------------------------------- the task

@dataclass(frozen=True)
class Task:
    """A binary task on [0, 1] (d = 1) satisfying (A1)-(A5) with chosen exponents alpha, q, s, v.

    Write y = x - 1/2: the Bayes boundary is x = 1/2.
    Regression function: m(x) = 1/2 + sign(y) min(1, |2y/w|^q) / 2: the q-th power of the distance to the boundary,
    exactly 0 for x <= (1-w)/2 and 1 for x >= (1+w)/2.
    Labeled (and test) distribution P_l: density b(y) (1 + rho sign(y) 1{|y| < eps}), b(y) = (beta + 1) |2y|^beta,
    beta = alpha q - 1: symmetric about 1/2 except that within eps of it the right side has (1 + rho)/(1 - rho) times
    the left's density.

    - Smoothness (A5): t -> min(1, t^q) is q-Hoelder with constant 1 and a^q + b^q <= 2^(1-q) (a + b)^q, so
      |m(x) - m(x')| <= w^-q |x - x'|^q (c7 = w^-q, reached across 1/2): m is q-Hoelder (q <= 1, as in the
      appendix), and no better at 1/2.
    - Margin (A4): for t < 1/2, |m - 1/2| <= t iff |2y| <= w (2t)^(1/q); rho cancels between the two sides and
      P_l(|2y| <= r) = r^(beta+1), so P_l(|m(X) - 1/2| <= t) = w^(alpha q) (2t)^alpha exactly (`margin_cdf`): margin
      exponent alpha, c6 = 2^alpha w^(alpha q). alpha and q are set independently: q by m's power, alpha by the
      density's power alpha q - 1.
    - rho > 0 makes the box kernel's local average at 1/2 off by ~ rho h^q (more mass right of the boundary, where
      m > 1/2): the bias the proof bounds by c7 h^q (13), which moves the plug-in's boundary by ~ h and costs
      ~ h^{q(1+alpha)} of risk, the theorem's rate at its bandwidth. With rho = 0 the bias cancels by symmetry and the
      plug-in beats the theorem's rate (variance only).

    Unlabeled distribution P_u (A1): a side (Bayes class) 1 with probability pi1 = P_l(Y = 1), else 0; a confidence
    u = min(m, 1 - m) with P(u <= delta) = (2 delta)^s; the point X_u of that side where m = u or 1 - u, i.e.
    |y| = (w/2)(1 - 2u)^(1/q). So P_u(min{1 - m(X), m(X)} <= delta) = (2 delta)^s for delta <= 1/2: (A1) with
    g_s(delta) = 2^s delta^s, and no smaller exponent works. s = 0: every unlabeled point is at |y| = w/2 (u = 0).

    Strong augmentation X_u -> X~ (A2, A3; `augment`): a simulated channel, not an image transformation. With
    probability (2u)^v it "transmits" X_u, drawing X~ from P_l( . | Y = the side of X_u); otherwise X~ = X_u (the copy
    stays in the easy region). X~ depends on X_u, not on its label Y, so X~ -> X_u -> Y is a Markov chain (A2). Given
    u <= delta the transmitted share is E[(2u)^v | u <= delta] = s/(s+v) (2 delta)^v, and transmitted copies are
    distributed as P_l, so P_u(X~ in B | selected) / P_l(B) >= c2 delta^v for every ball B: (A3) with exponent v, and
    no smaller one (for a ball nearer 1/2 than the selected points, which only transmitted copies reach).
    """
    alpha: float = 1.0
    q: float = 1.0
    v: float = 1.0
    s: float = 1.0
    w: float = 0.8
    rho: float = 0.5
    eps: float = 0.5
    d: int = field(default=1, init=False)

    def __post_init__(self):
        if not 0 < self.q <= 1:
            raise ValueError(f"q={self.q}: the appendix's Hoelder exponent is in (0, 1]")
        if not self.alpha > 0:
            raise ValueError(f"alpha={self.alpha}: the margin exponent must be > 0")
        if self.v < 0 or self.s < 0:
            raise ValueError(f"v={self.v}, s={self.s}: must be >= 0")
        if not (0 <= self.rho < 1 and 0 < self.eps <= 0.5 and 0 < self.w <= 1):
            raise ValueError(f"rho={self.rho}, eps={self.eps}, w={self.w}: need 0 <= rho < 1, 0 < eps <= 1/2, "
                             f"0 < w <= 1")

    # -- the regression function and the exponents
    @property
    def beta(self) -> float:
        """The power of P_l's density at 1/2: alpha q - 1."""
        return self.alpha * self.q - 1

    def m(self, x):
        """m(x) = P(Y = 1 | X = x)."""
        y = np.asarray(x, float) - 0.5
        return 0.5 + 0.5 * np.sign(y) * np.minimum(1.0, np.abs(2 * y / self.w) ** self.q)

    def bayes(self, x):
        """The Bayes classifier (1): 1{m(x) >= 1/2}, i.e. x >= 1/2."""
        return np.asarray(x, float) >= 0.5

    def margin_cdf(self, t):
        """P_l(|m(X) - 1/2| <= t), closed form: w^(alpha q) (2t)^alpha for t < 1/2, and 1 from t = 1/2 on."""
        t = np.asarray(t, float)
        return np.where(t < 0.5, self.w ** (self.alpha * self.q) * (2 * np.clip(t, 0, 0.5)) ** self.alpha, 1.0)

    def rate(self, labeled: bool = False) -> float:
        """Theorem 1's exponent for this task (labeled=True: the labeled-only plug-in's, v = s = 0)."""
        return rate_exponent(self.alpha, self.q, self.d, 0.0 if labeled else self.v, 0.0 if labeled else self.s)

    def zeta_star(self) -> float:
        """The critical zeta of (8) for this task."""
        return critical_zeta(self.alpha, self.q, self.d, self.v, self.s)

    # -- P_l
    def _g(self, r):
        """b's mass on [0, r] (one side of 1/2): (2r)^(beta+1) / 2."""
        return (2 * np.asarray(r, float)) ** (self.beta + 1) / 2

    def _g_inv(self, g):
        return (2 * np.clip(g, 0, 0.5)) ** (1 / (self.beta + 1)) / 2

    def pl_quantile(self, p):
        """The inverse of P_l's distribution function (closed form, piecewise)."""
        p, ge, r = np.asarray(p, float), self._g(self.eps), self.rho
        a, b, c = 0.5 - ge, 0.5 - r * ge, 0.5 + ge           # P_l's distribution function at y = -eps, 0, eps
        y = np.select([p < a, p < b, p < c],
                      [-self._g_inv(0.5 - p), -self._g_inv(ge - (p - a) / (1 - r)), self._g_inv((p - b) / (1 + r))],
                      self._g_inv(p - 0.5))
        return np.clip(0.5 + y, 0.0, 1.0)

    @cached_property
    def pi1(self) -> float:
        """P_l(Y = 1) = E_l m(X) = 1/2 + (rho/2) int_0^{2 eps} (beta+1) z^beta min(1, (z/w)^q) dz, closed form."""
        b1, z, w, q = self.beta + 1, 2 * self.eps, self.w, self.q
        if z <= w:
            integral = b1 * z ** (b1 + q) / ((b1 + q) * w ** q)
        else:
            integral = b1 * w ** b1 / (b1 + q) + z ** b1 - w ** b1
        return 0.5 + 0.5 * self.rho * integral

    def sample_labeled(self, n: int, rng: np.random.Generator):
        """n IID labeled pairs (X, Y): X ~ P_l, Y ~ Bernoulli(m(X)). Returns (x, y), y boolean."""
        x = self.pl_quantile(rng.random(n))
        return x, rng.random(n) < self.m(x)

    def test_grid(self, size: int = 2 ** 15):
        """Quadrature nodes for E_l: the midpoints of `size` cells of equal P_l mass (each weighs 1/size)."""
        return self.pl_quantile((np.arange(size) + 0.5) / size)

    # -- P_u and the strong augmentation
    def confidence(self, x):
        """min{m(x), 1 - m(x)}: the distance of m from 0 or 1 (small = confident)."""
        mx = self.m(x)
        return np.minimum(mx, 1 - mx)

    def sample_unlabeled(self, n: int, rng: np.random.Generator):
        """n IID unlabeled points X_u ~ P_u (class docstring), sorted (for fast binary searches)."""
        side = rng.random(n) < self.pi1
        u = 0.5 * rng.random(n) ** (1 / self.s) if self.s > 0 else np.zeros(n)
        r = 0.5 * self.w * (1 - 2 * u) ** (1 / self.q)     # |x - 1/2| where |m - 1/2| = 1/2 - u
        return np.sort(np.where(side, 0.5 + r, 0.5 - r))

    def class_conditional(self, label: bool, n: int, rng: np.random.Generator):
        """n draws from P_l( . | Y = label) (density p_l m / pi1, or p_l (1 - m) / (1 - pi1)), by rejection."""
        out = np.empty(0)
        while out.size < n:
            x = self.pl_quantile(rng.random(2 * (n - out.size) + 16))
            keep = rng.random(x.size) < (self.m(x) if label else 1 - self.m(x))
            out = np.concatenate([out, x[keep]])
        return out[:n]

    def augment(self, x_u, rng: np.random.Generator, balanced: bool = True):
        """Step 2's strong augmentation of the selected points x_u (A2, A3): the class docstring's channel. Returns
        (x_tilde, transmitted mask).

        balanced=True realizes the appendix's stipulation (E.3, used in (19)) that the augmented data's label has
        conditional mean m(X~): the channel transmits the two sides in proportion pi1 : 1 - pi1, leaving a random few of
        the over-represented side untransmitted, so the transmitted copies are distributed as P_l and
        P(side 1 | X~ = x) = m(x) whatever Step 1 selected. balanced=False (naive) keeps every transmitted point: when
        Step 1's selection is class-imbalanced (m0's errors at the two ends differ), P(side 1 | X~) is not m and C_ssl
        is biased."""
        x_u = np.asarray(x_u, float)
        transmitted = rng.random(x_u.size) < (2 * self.confidence(x_u)) ** self.v
        side = self.bayes(x_u)
        if balanced:
            ones, zeros = np.flatnonzero(transmitted & side), np.flatnonzero(transmitted & ~side)
            keep1 = min(ones.size, int(np.floor(zeros.size * self.pi1 / (1 - self.pi1) + 0.5)))
            keep0 = min(zeros.size, int(np.floor(ones.size * (1 - self.pi1) / self.pi1 + 0.5)))
            if keep1 < ones.size:
                transmitted[rng.choice(ones, ones.size - keep1, replace=False)] = False
            elif keep0 < zeros.size:
                transmitted[rng.choice(zeros, zeros.size - keep0, replace=False)] = False
        x_t = x_u.copy()
        for label in (False, True):
            idx = np.flatnonzero(transmitted & (side == label))
            x_t[idx] = self.class_conditional(label, idx.size, rng)
        return x_t, transmitted


# ---------------------------------------------------------------------------------------------- the plug-in (4)

class PlugIn:
    """The Nadaraya-Watson estimate with the box kernel K(u) = 1{|u| <= 1} (4) in one dimension, and its plug-in
    classifier C_n(x) = 1{m_n(x) >= 1/2}. Exact: sorted points, label prefix sums, [x - h, x + h] by binary search."""

    def __init__(self, x, y, h: float):
        if not h > 0:
            raise ValueError(f"h={h}: the bandwidth must be > 0")
        order = np.argsort(x, kind="stable")
        self.x = np.asarray(x, float)[order]
        self.cum = np.concatenate([[0.0], np.cumsum(np.asarray(y, float)[order])])
        self.h = float(h)

    def counts(self, xq):
        """(the number of training points within h of each query, the sum of their labels)."""
        xq = np.asarray(xq, float)
        lo = np.searchsorted(self.x, xq - self.h, side="left")
        hi = np.searchsorted(self.x, xq + self.h, side="right")
        return hi - lo, self.cum[hi] - self.cum[lo]

    def m(self, xq):
        """m_n(x): the mean label of the training points within h of x; NaN where there is none (the appendix sets
        m_n = 0 there: `predict` does; `select` does not count such a point as confident)."""
        n, s = self.counts(xq)
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)

    def predict(self, xq):
        """C_n(x) = 1{m_n(x) >= 1/2}, with m_n = 0 (class 0) where no training point is within h."""
        n, s = self.counts(xq)
        return (n > 0) & (2 * s >= n)


def plug_in(x, y, h: float) -> PlugIn:
    """The kernel plug-in classifier (4) trained on (x, y) with bandwidth h."""
    return PlugIn(x, y, h)


def select(m0: PlugIn, x_u, delta: float):
    """Step 1 (3): (the unlabeled points with min{1 - m0(x), m0(x)} <= delta, their Step 2 pseudo-labels
    Y^ = 1{m0(x) >= 1/2}); a point with no labeled point within m0's bandwidth has no estimate and is not taken."""
    m0_u = m0.m(x_u)
    with np.errstate(invalid="ignore"):
        chosen = np.minimum(m0_u, 1 - m0_u) <= delta            # NaN compares False
    return np.asarray(x_u, float)[chosen], m0_u[chosen] >= 0.5


def ssl_plug_in(task: Task, m0: PlugIn, x_l, y_l, x_u, h: float, delta: float, rng: np.random.Generator,
                balanced: bool = True, selection=None):
    """The generic SSL classifier with strong augmentation (appendix E.3), given the initial estimate m0:
    - Step 1: the unlabeled points with min{1 - m0(x), m0(x)} <= delta (3) (`select`, or its result `selection`);
    - Step 2: their pseudo-labels Y^ = 1{m0(X) >= 1/2} and strongly augmented copies X~ (`Task.augment`): D_aug;
    - Step 3: the plug-in (4) trained on D_ssl = D_l + D_aug with bandwidth h.
    Returns (classifier, dict: n_selected, n_transmitted, side1_share (among the transmitted), pseudo_label_error (the
    share of D_aug whose pseudo-label is not the Bayes label of its X_u))."""
    xs, y_hat = select(m0, x_u, delta) if selection is None else selection
    x_t, transmitted = task.augment(xs, rng, balanced)
    clf = plug_in(np.concatenate([x_l, x_t]), np.concatenate([y_l, y_hat]), h)
    side = task.bayes(xs)
    info = dict(n_selected=int(xs.size), n_transmitted=int(transmitted.sum()),
                side1_share=float(side[transmitted].mean()) if transmitted.any() else float("nan"),
                pseudo_label_error=float(np.mean(y_hat != side)) if xs.size else 0.0)
    return clf, info


def excess_risk(task: Task, clf: PlugIn, grid=None) -> float:
    """R(C) = P(Y != C(X)) - P(Y != C*(X)) (2) = E_l |2m(X) - 1| 1{C(X) != C*(X)} (9), by the midpoint rule on cells
    of equal P_l mass (`Task.test_grid`)."""
    grid = task.test_grid() if grid is None else grid
    wrong = clf.predict(grid) != task.bayes(grid)
    return float(np.mean(np.abs(2 * task.m(grid) - 1) * wrong))


# ---------------------------------------------------------------------------------------------- the experiment

def run_cell(task: Task, n_u: int, zeta: float, seed, c_h: float = 0.5, c_delta: float = 1.5, grid=None,
             ssl: bool = True) -> dict:
    """One repetition at (n_u, zeta), seeded by `seed` (anything numpy's SeedSequence takes):
    - n_l = round(n_u^zeta) labels (at least 8) and the labeled-only plug-in C_l, bandwidth
      h_l = c_h n_l^{-1/{q(alpha+3)+d}}; C_l's estimate is also Step 1's m0 (the appendix's n0 initial labels);
    - (ssl=True) n_u unlabeled points and the SSL plug-in C_ssl of Steps 1-3 with the proof's choices (after (30)):
      bandwidth h = c_h (n_l + n_u)^{-1/{q(alpha+3+v+s)+d}} and threshold delta = c_delta h^q (at most 1/2); once with
      the balanced channel (risk_ssl) and once, on the same selection, with the naive one (risk_naive); and, as a
      control, the plug-in on the n_l labels alone at C_ssl's bandwidth h (risk_l_at_h: the smaller bandwidth without
      any unlabeled point).
    Returns the sizes, bandwidths, delta, excess risks and Steps 1-2's counts."""
    rng, rng_aug, rng_naive = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    grid = task.test_grid() if grid is None else grid
    a, q, d, v, s = task.alpha, task.q, task.d, task.v, task.s
    n_l = max(int(round(n_u ** zeta)), 8)
    x_l, y_l = task.sample_labeled(n_l, rng)
    h_l = bandwidth(n_l, a, q, d, c=c_h)
    clf_l = plug_in(x_l, y_l, h_l)
    out = dict(n_u=n_u, zeta=zeta, n_l=n_l, h_l=h_l, risk_l=excess_risk(task, clf_l, grid))
    if not ssl:
        return out
    x_u = task.sample_unlabeled(n_u, rng)
    h = bandwidth(n_l + n_u, a, q, d, v, s, c=c_h)
    delta = min(c_delta * h ** q, 0.5)
    chosen = select(clf_l, x_u, delta)
    clf_ssl, info = ssl_plug_in(task, clf_l, x_l, y_l, x_u, h, delta, rng_aug, True, chosen)
    clf_naive, info_naive = ssl_plug_in(task, clf_l, x_l, y_l, x_u, h, delta, rng_naive, False, chosen)
    out.update(h_ssl=h, delta=delta, risk_ssl=excess_risk(task, clf_ssl, grid),
               risk_l_at_h=excess_risk(task, plug_in(x_l, y_l, h), grid),
               risk_naive=excess_risk(task, clf_naive, grid), **info, side1_share_naive=info_naive["side1_share"])
    return out


def fit_exponent(n, risk) -> float:
    """The rate e of risk ~ n^{-e}: minus the least-squares slope of log(risk) on log(n)."""
    n, risk = np.asarray(n, float), np.asarray(risk, float)
    return float(-np.polyfit(np.log(n), np.log(risk), 1)[0])


def bootstrap_exponents(n, risks, resamples: int = 200, seed=0) -> tuple[float, np.ndarray]:
    """(rate, replicates): `fit_exponent(n, risks.mean(0))` of risks (repetitions, len(n)) (the expected excess risk,
    as in (30)), and its bootstrap replicates over the repetitions resampled with replacement (seeded by `seed`)."""
    risks = np.asarray(risks, float)
    rng = np.random.default_rng(seed)
    reps = risks.shape[0]
    boot = np.array([fit_exponent(n, risks[rng.integers(0, reps, reps)].mean(0)) for _ in range(resamples)])
    return fit_exponent(n, risks.mean(0)), boot


def bootstrap_ratio(n, risk_a, risk_b, resamples: int = 200, seed=0) -> dict:
    """How one classifier's mean risk (risk_a: (repetitions, len(n))) compares with another's on the same draws
    (risk_b): the slope of log(mean risk_a / mean risk_b) on log(n) (negative: a gains on b as n grows; (8) predicts
    zeta e_l - e_ssl for C_ssl against C_l) and that log ratio at the largest n, each with bootstrap replicates (the
    same resampled repetitions for a and b; seeded by `seed`).
    Returns dict(slope, slope_boot, log_ratio_last, log_ratio_last_boot)."""
    a, b, ln = np.asarray(risk_a, float), np.asarray(risk_b, float), np.log(np.asarray(n, float))
    rng = np.random.default_rng(seed)

    def stats(idx):
        lr = np.log(a[idx].mean(0)) - np.log(b[idx].mean(0))
        return np.polyfit(ln, lr, 1)[0], lr[-1]

    slope, last = stats(np.arange(a.shape[0]))
    boot = np.array([stats(rng.integers(0, a.shape[0], a.shape[0])) for _ in range(resamples)])
    return dict(slope=float(slope), slope_boot=boot[:, 0], log_ratio_last=float(last), log_ratio_last_boot=boot[:, 1])
