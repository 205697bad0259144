"""How a claim is judged from per-seed values.

PAIRED_RULE (the package's rule): the difference of the two arms with a 95 % interval, paired by seed where the arms
share each seed's draws (`paired`), Welch's interval where they do not (`welch`), a one-sample interval against a
paper's number (`versus`), Holm's correction over a family of claims that share a baseline (`holm`), and the rule that
plans how many seeds a claim gets (`seeds_to_decide`).

RULE (the separation rule, kept one more release as a named column so that a reader sees what changed): the gap
against both seed spreads; `above`, `at_least` and `every` return its verdicts, "held", "not held" or "within noise"
(or why there is none: "not run", one seed)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats


RULE = ("A claim 'A above B' is held when A's mean exceeds B's by more than the two seed spreads (population std "
        "over seeds) together, not held when B's exceeds A's by that much, and within noise otherwise; with one "
        "seed there is no spread, so a claim with one seed reads 'one seed: no verdict'; a claim whose runs are not "
        "in the results store yet is 'not run'.")


def differs(a, b) -> bool:
    """RULE's test: the means differ by more than the two groups' seed spreads (population std) together."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return abs(a.mean() - b.mean()) > a.std() + b.std()


def above(a, b) -> str:
    """The verdict of the claim 'a above b' (per-seed values) under RULE."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0:
        return "not run"
    if len(a) < 2 or len(b) < 2:
        return "one seed: no verdict"
    if differs(a, b):
        return "held" if a.mean() > b.mean() else "not held"
    return "within noise"


NOT_WORSE_RULE = ("A one-sided claim 'A not worse than B' is held unless B is above A by the rule: it is not held "
                  "when B's mean exceeds A's by more than the two seed spreads together, and held otherwise (A above "
                  "B, or the two within noise: a lower mean of A within the spreads is not worse).")


def not_worse(a, b) -> str:
    """The verdict of the one-sided claim 'a not worse than b' (NOT_WORSE_RULE): not held when above(b, a) is held,
    held when it is not held or within noise."""
    v = above(b, a)
    return {"held": "not held", "not held": "held", "within noise": "held"}.get(v, v)


def at_least(v, x: float) -> str:
    """RULE against a fixed number x (which has no spread): held when the mean exceeds x by more than the seeds'
    spread, not held when it falls short by that much."""
    v = np.asarray(v, float)
    if len(v) == 0:
        return "not run"
    if len(v) < 2:
        return "one seed: no verdict"
    if abs(v.mean() - x) > v.std():
        return "held" if v.mean() > x else "not held"
    return "within noise"


def every(verdicts) -> str:
    """A claim made for several cases: held if held in each, not held if not held in any, else within noise."""
    verdicts = list(verdicts)
    if any(v == "not held" for v in verdicts):
        return "not held"
    if all(v == "held" for v in verdicts):
        return "held"
    if any(v == "not run" for v in verdicts):
        return "not all run"
    return "one seed: no verdict" if any(v.startswith("one seed") for v in verdicts) else "within noise"


# ---------------------------------------------------------------------- the paired rule (intervals, by seed)
ALPHA = 0.05      # one claim's error rate; a family of m claims shares it (Holm)
MIN_SEEDS = 3     # fewer seeds than this: no verdict (a t interval from two values has one degree of freedom)

PAIRED_RULE = (
    "A claim 'A above B' is judged on the difference A - B with a 95 % interval. Where A and B share each seed's "
    "draws (the same labeled set, and the same model start where the architecture is the same: docs/verdicts.md), "
    "the difference is taken seed by seed and the interval is Student's t on those per-seed differences (paired t); "
    "otherwise (different labeled sets, or a number from a paper) Welch's t interval. Held when the interval lies "
    "above zero, not held when it lies below, within noise when it holds zero; fewer than three seeds: no verdict. "
    "Where one table compares several arms with one baseline, the claims are one family and Holm's correction keeps "
    "the family's error at 5 %: the interval of the k-th smallest p-value is widened to level 1 - 0.05 / (m - k + 1), "
    "up to the first claim the correction leaves within noise (the rest share that claim's level).")


@dataclass(frozen=True)
class Judged:
    """One claim under PAIRED_RULE: the mean difference A - B (`diff`), its interval (`low`, `high`) at `level`, the
    seeds it rests on (`n`, and `seeds` for a paired claim), the test and its two-sided p-value; `verdict` is "held",
    "not held", "within noise" or a no-verdict text ("not run", "fewer than three seeds: no verdict", "no verdict:
    ..." naming why). `se` and `df` keep the t statistic's parts so that a family correction can widen the interval."""
    verdict: str
    diff: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    n: int = 0
    test: str = ""
    p: float = float("nan")
    level: float = 1 - ALPHA
    se: float = float("nan")
    df: float = float("nan")
    seeds: tuple = ()

    @property
    def judged(self) -> bool:
        return self.verdict in ("held", "not held", "within noise")

    def at(self, level: float) -> "Judged":
        """The same claim with its interval at `level` (and the verdict that interval gives)."""
        half = 0.0 if self.se == 0 else float(stats.t.ppf(0.5 + level / 2, self.df)) * self.se
        low, high = self.diff - half, self.diff + half
        verdict = "held" if low > 0 else "not held" if high < 0 else "within noise"
        return replace(self, low=low, high=high, level=level, verdict=verdict)

    def interval(self) -> str:
        """'+2.6 [+0.3, +4.8]' (points); '-' without a verdict."""
        if not self.judged:
            return "-"
        return f"{self.diff:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"


def _t(diff: float, se: float, df: float, n: int, test: str, seeds=()) -> Judged:
    p = (0.0 if diff != 0 else 1.0) if se == 0 else float(2 * stats.t.sf(abs(diff) / se, df))
    return Judged("", float(diff), n=n, test=test, p=p, se=float(se), df=float(df), seeds=tuple(seeds)).at(1 - ALPHA)


def _too_few(a_n: int, b_n: int) -> Judged | None:
    if a_n == 0 or b_n == 0:
        return Judged("not run", n=min(a_n, b_n))
    if min(a_n, b_n) < MIN_SEEDS:
        return Judged("fewer than three seeds: no verdict", n=min(a_n, b_n))
    return None


def paired(a: dict, b: dict, claim: str = "") -> Judged:
    """PAIRED_RULE for arms that share each seed's draws: a, b map seed -> value. Both arms must hold the same seeds;
    otherwise no verdict, and the reason names the claim and both arms' seeds."""
    if a and b and set(a) != set(b):
        return Judged(f"no verdict: {claim or 'the claim'}'s arms have different seeds (A: {_seeds(a)}; "
                      f"B: {_seeds(b)}); a paired claim needs both arms at the same seeds", n=len(set(a) & set(b)))
    short = _too_few(len(a), len(b))
    if short is not None:
        return short
    seeds = sorted(a)
    d = np.array([a[s] - b[s] for s in seeds], float)
    return _t(d.mean(), d.std(ddof=1) / np.sqrt(len(d)), len(d) - 1, len(d), "paired t", seeds)


def welch(a, b) -> Judged:
    """PAIRED_RULE for arms that share no draws (per-seed values, in any order): Welch's t interval."""
    a, b = (np.asarray(list(x.values()) if isinstance(x, dict) else x, float) for x in (a, b))
    short = _too_few(len(a), len(b))
    if short is not None:
        return short
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    return _t(a.mean() - b.mean(), se, df, min(len(a), len(b)), "Welch t")


def versus(v, x: float) -> Judged:
    """PAIRED_RULE against a fixed number x (a paper's mean, which comes without its seeds): the one-sample t
    interval of mean(v) - x."""
    v = np.asarray(list(v.values()) if isinstance(v, dict) else v, float)
    short = _too_few(len(v), len(v) if np.isfinite(x) else 0)
    if short is not None:
        return short
    return _t(v.mean() - x, v.std(ddof=1) / np.sqrt(len(v)), len(v) - 1, len(v), "one-sample t")


def holm(family: list[Judged]) -> list[Judged]:
    """Holm's correction over one family (claims comparing several arms with one baseline), in the family's order:
    the judged claims sorted by p; the k-th (from 1) of m gets its interval at level 1 - ALPHA / (m - k + 1), until the
    first one whose interval then holds zero; it and every later one get that claim's level (so that each verdict is
    what its shown interval says). Claims without a verdict are left as they are and do not count in m."""
    idx = sorted((i for i, j in enumerate(family) if j.judged), key=lambda i: family[i].p)
    out, m, stop = list(family), len(idx), None
    for k, i in enumerate(idx):
        level = 1 - ALPHA / (m - (k if stop is None else stop))
        out[i] = family[i].at(level)
        if stop is None and out[i].verdict == "within noise":
            stop = k
    return out


def seeds_to_decide(diffs, m: int = 1, cap: int = 10) -> int | None:
    """The planning rule (docs/verdicts.md): the fewest seeds n (at least MIN_SEEDS, at most `cap`) at which the
    observed per-seed differences `diffs` would be decided, if their mean and standard deviation stayed as observed,
    by an interval at the family's strictest level 1 - ALPHA / m (Holm's first step; a claim decided there is
    decided by Holm too); None when even `cap` seeds would not do."""
    d = np.asarray(diffs, float)
    mean, sd = abs(d.mean()), d.std(ddof=1)
    for n in range(MIN_SEEDS, cap + 1):
        if float(stats.t.ppf(1 - ALPHA / m / 2, n - 1)) * sd / np.sqrt(n) < mean:
            return n
    return None


def _seeds(d: dict) -> str:
    return ", ".join(map(str, sorted(d))) or "none"
