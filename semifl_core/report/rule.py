"""The package's rule: how a claim is judged from per-seed values (docs/verdicts.md, "The rule": in words, and why).

The difference of the two arms with a 95 % interval, paired by seed where the arms share each seed's draws (`paired`:
scipy.stats.ttest_rel), Welch's where they do not (`welch`: ttest_ind, equal_var=False), one-sample against a paper's
number (`at_least`: ttest_1samp); Holm's correction over a family of claims that share a baseline (`holm`). The claims
tables call `above`, `at_least`, `not_worse` and `every`, each returning a Verdict: the verdict's text carrying its
interval. For 'A not worse than B' (`not_worse`) an interval holding zero is within noise, never 'not worse': no
loss found is not a loss ruled out (loss_ruled_out)."""
from __future__ import annotations

import numpy as np
from scipy import stats

ALPHA = 0.05      # one claim's error rate; a family of m claims shares it (Holm)
MIN_SEEDS = 3     # fewer seeds than this: no verdict (a t interval from two values has one degree of freedom)

PARTS = dict(diff=float("nan"), low=float("nan"), high=float("nan"), n=0, test="", p=float("nan"),
             level=1 - ALPHA, se=float("nan"), df=float("nan"), seeds=())
DECIDED = ("held", "not held", "within noise")


class Verdict(str):
    """One claim under the rule: the verdict's text as a table cell shows it ("held", "not held", "within noise", or a
    no-verdict text naming why), with the mean difference A - B (`diff`), its interval (`low`, `high`) at `level`, the
    seeds it rests on (`n`; `seeds` if paired), the test and its two-sided p; `se` and `df` let a family correction
    widen the interval. `evidence`, where a table sets it: the two arms' means at the seeds it was judged on."""

    def __new__(cls, verdict: str, **parts):
        unknown = sorted(set(parts) - set(PARTS))
        if unknown:
            raise TypeError(f"Verdict has no part {unknown[0]!r}; its parts: {', '.join(PARTS)}")
        out = super().__new__(cls, verdict)
        out.__dict__.update(PARTS, **parts)
        out.evidence = None
        return out

    def replace(self, verdict: str | None = None, **parts) -> "Verdict":
        """This verdict with some parts replaced (the evidence is not carried: it belongs to the table that set it)."""
        old = {k: getattr(self, k) for k in PARTS}
        return Verdict(str(self) if verdict is None else verdict, **{**old, **parts})

    @property
    def decided(self) -> bool:
        return str(self) in DECIDED

    def at(self, level: float) -> "Verdict":
        """The same claim with its interval at `level` (and the verdict that interval gives)."""
        half = 0.0 if self.se == 0 else float(stats.t.ppf(0.5 + level / 2, self.df)) * self.se
        low, high = self.diff - half, self.diff + half
        return self.replace("held" if low > 0 else "not held" if high < 0 else "within noise",
                            low=low, high=high, level=level)

    def span(self) -> str:
        """'+2.6 [+0.3, +4.8]' (points); '-' without a verdict."""
        return f"{self.diff:+.1f} [{self.low:+.1f}, {self.high:+.1f}]" if self.decided else "-"

    def interval(self) -> str:
        """'+2.6 [+0.3, +4.9], n=3, paired t' (the level when a family widened it); '-' without a verdict."""
        if not self.decided:
            return "-"
        level = "" if abs(self.level - (1 - ALPHA)) < 1e-9 else f" at {100 * self.level:.1f} %"
        return f"{self.span()}{level}, n={self.n}, {self.test}"


def loss_ruled_out(v: Verdict) -> str:
    """What a 'not worse' claim within noise says (not_worse): a loss beyond its interval's lower end is ruled out."""
    return f"no loss was found, and a loss of more than {max(-v.low, 0.0):.1f} points is ruled out"


def _t(res, diff: float, n: int, test: str, seeds=()) -> Verdict:
    """A Verdict from scipy.stats' t test result `res` for the mean difference `diff`: p, df and the se behind scipy's
    95 % interval, which at() rescales to any level (Holm). Zero spread: se 0 and p 0, or 1 where `diff` is 0."""
    low, high = res.confidence_interval(1 - ALPHA)
    se = 0.0 if not np.isfinite(high - low) else (high - low) / 2 / stats.t.ppf(1 - ALPHA / 2, res.df)
    p = float(res.pvalue) if se > 0 else 0.0 if diff != 0 else 1.0
    return Verdict("", diff=float(diff), n=n, test=test, p=p, se=float(se), df=float(res.df),
                   seeds=tuple(seeds)).at(1 - ALPHA)


def _too_few(a_n: int, b_n: int) -> Verdict | None:
    if a_n == 0 or b_n == 0:
        return Verdict("not run", n=min(a_n, b_n))
    if min(a_n, b_n) < MIN_SEEDS:
        return Verdict("fewer than three seeds: no verdict", n=min(a_n, b_n))
    return None


def paired(a: dict, b: dict, claim: str = "") -> Verdict:
    """The rule for arms that share each seed's draws (a, b: seed -> value); arms at different seeds get no verdict."""
    if a and b and set(a) != set(b):
        return Verdict(f"no verdict: {claim or 'the claim'}'s arms have different seeds (A: {_seeds(a)}; "
                       f"B: {_seeds(b)}); a paired claim needs both arms at the same seeds", n=len(set(a) & set(b)))
    short = _too_few(len(a), len(b))
    if short is not None:
        return short
    seeds = sorted(a)
    va, vb = (np.array([x[s] for s in seeds], float) for x in (a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        res = stats.ttest_rel(va, vb)
    return _t(res, (va - vb).mean(), len(seeds), "paired t", seeds)


def welch(a, b) -> Verdict:
    """The rule for arms that share no draws (per-seed values, in any order): Welch's t interval."""
    a, b = _values(a), _values(b)
    short = _too_few(len(a), len(b))
    if short is not None:
        return short
    with np.errstate(divide="ignore", invalid="ignore"):
        res = stats.ttest_ind(a, b, equal_var=False)
    return _t(res, a.mean() - b.mean(), min(len(a), len(b)), "Welch t")


def at_least(v, x: float) -> Verdict:
    """The one-sample t interval of mean(v) - x, x fixed (a paper's mean, which comes without seeds, or a bound)."""
    v = _values(v)
    short = _too_few(len(v), len(v) if np.isfinite(x) else 0)
    if short is not None:
        return short
    with np.errstate(divide="ignore", invalid="ignore"):
        res = stats.ttest_1samp(v, x)
    return _t(res, v.mean() - x, len(v), "one-sample t")


def holm(family: list[Verdict]) -> list[Verdict]:
    """Holm's correction over one family (claims comparing several arms with one baseline), in its order: judged claims
    sorted by p, the k-th (from 1) of m at level 1 - ALPHA / (m - k + 1) until the first whose interval then holds zero;
    it and all later ones get its level (each verdict is what its shown interval says). Claims without a verdict stay
    as they are and do not count in m. Returns new Verdicts."""
    idx = sorted((i for i, j in enumerate(family) if j.decided), key=lambda i: family[i].p)
    out, m, stop = [v.replace() for v in family], len(idx), None
    for k, i in enumerate(idx):
        level = 1 - ALPHA / (m - (k if stop is None else stop))
        out[i] = family[i].at(level)
        if stop is None and out[i] == "within noise":
            stop = k
    return out


def _seeds(d: dict) -> str:
    return ", ".join(map(str, sorted(d))) or "none"


# ---------------------------------------------------------------------- per-seed values that know their seeds
class Seeded(np.ndarray):
    """Per-seed values (a float array in seed order) that know their seeds and labeled-set draw (partition.labeled_draw
    without the seed; None if unknown or mixed): `above` pairs two by seed when their draws are equal. Arithmetic on
    them gives plain arrays (a derived value pairs with nothing)."""

    def __new__(cls, values, seeds, draw=None):
        out = np.asarray(values, float).view(cls)
        out.seeds, out.draw = tuple(int(s) for s in seeds), draw
        return out

    def __array_finalize__(self, obj):
        self.seeds, self.draw = getattr(obj, "seeds", None), getattr(obj, "draw", None)

    def __array_wrap__(self, out, context=None, return_scalar=False):
        out = np.asarray(out)
        return out[()] if return_scalar else out


def _by_seed(v) -> dict | None:
    """{seed: value} of a Seeded array whose seeds match its values, else None."""
    if isinstance(v, dict):
        return v
    if isinstance(v, Seeded) and v.seeds is not None and len(v.seeds) == len(v) and v.draw is not None:
        return dict(zip(v.seeds, np.asarray(v, float).tolist()))
    return None


def at_seeds(a, b, seeds=(0, 1, 2)) -> tuple[dict, dict]:
    """A claim's two arms ({seed: value}, or Seeded) at `seeds`, as each holds them (an arm lacking one: no verdict)."""
    a, b = (v if isinstance(v, dict) else {} if not len(v) else dict(zip(v.seeds, np.asarray(v, float).tolist()))
            for v in (a, b))   # an arm with no runs (an empty array, no seeds) holds no seed
    return {s: a[s] for s in seeds if s in a}, {s: b[s] for s in seeds if s in b}


def _values(v) -> np.ndarray:
    return np.asarray(list(v.values()) if isinstance(v, dict) else v, float)


# ---------------------------------------------------------------------- verdicts as the claims tables use them
def above(a, b, claim: str = "") -> Verdict:
    """'a above b' under the rule: paired by seed if both are Seeded on the same labeled draw (or dicts), else Welch."""
    pa, pb = _by_seed(a), _by_seed(b)
    same_draw = isinstance(a, dict) or isinstance(b, dict) or getattr(a, "draw", None) == getattr(b, "draw", None)
    return paired(pa, pb, claim) if pa is not None and pb is not None and same_draw else welch(a, b)


def not_worse(a, b, claim: str = "") -> Verdict:
    """'a not worse than b': 'b above a' read from a's side (held when a is held above b, not held when b is held above
    a, else within noise). A family's 'b above a' claims are Holm-corrected first (holm), then each read so (flip)."""
    return flip(above(b, a, claim))


def flip(v) -> Verdict:
    """'a above b' read as 'b above a': held <-> not held, the difference and its interval negated."""
    v = v if isinstance(v, Verdict) else Verdict(str(v))
    return v.replace({"held": "not held", "not held": "held"}.get(str(v), str(v)), diff=-v.diff, low=-v.high,
                     high=-v.low)


def every(verdicts) -> Verdict:
    """A claim made for several cases (Verdicts): held if held in each (no correction needed: every case must pass), not
    held if not held in any, else within noise, 'not all run' or no verdict; shown with the deciding case's interval
    (the not-held one, else the weakest: lowest lower end)."""
    vs = [v if isinstance(v, Verdict) else Verdict(str(v)) for v in verdicts]
    if not vs:
        return Verdict("not run")
    texts = [str(v) for v in vs]
    if "not held" in texts:
        pick, text = vs[texts.index("not held")], "not held"
    elif all(t == "held" for t in texts):
        pick, text = min(vs, key=lambda v: v.low), "held"
    elif "not run" in texts:
        pick, text = Verdict("not all run"), "not all run"
    else:
        lacking = [v for v in vs if not v.decided]
        pick = lacking[0] if lacking else min((v for v in vs if v == "within noise"), key=lambda v: v.low)
        text = str(pick)
    weakest = f"{pick.test}, weakest of {len(vs)}" if text in DECIDED and len(vs) > 1 else pick.test
    return pick.replace(text, test=weakest)
