"""RULE: how a claim is judged from per-seed values (the gap against both seed spreads): `above`, `at_least` and
`every` return its verdicts, "held", "not held" or "within noise" (or why there is none: "not run", one seed)."""
from __future__ import annotations

import numpy as np


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
