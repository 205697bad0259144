"""The claims table each notebook ends with (what the paper states, the rule's verdict on our runs, the evidence) and
the takeaway written from it. Each notebook builds its own claims (its `*_claims` function; the diagnosis' findings)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import paper
from .rule import Verdict

INTERVAL = "A - B [95 % interval], n, test"   # rule.Verdict.interval()
FINAL = "final_acc"                          # every claim is judged at the final round (the best one is picked on test)
CLAIM_COLUMNS = ["claim", "verdict", INTERVAL, "evidence"]


def claims(items: list) -> pd.DataFrame:
    """items: (claim, verdict, evidence); verdict: a rule.Verdict (its interval fills its column, the cell keeps the
    Verdict), a verdict's text ("not run", ...), or a bool for exact claims (held / not held, no interval)."""
    rows = []
    for c, h, e in items:
        if isinstance(h, (bool, np.bool_)):
            h = "held" if h else "not held"
        judged = isinstance(h, Verdict)
        interval = h.interval() if judged else "exact" if h in ("held", "not held") else "-"
        rows.append({"claim": c, "verdict": h if judged else str(h), INTERVAL: interval, "evidence": e})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


class Takeaway(str):
    """Markdown text that a notebook shows as rendered markdown (and as itself anywhere else)."""

    def _repr_markdown_(self):
        return str(self)


# verdicts in the order a takeaway lists them; anything else (a finding's value) is listed under "found"
VERDICT_ORDER = [("confirmed", "Confirmed on fresh seeds"), ("not confirmed", "Not confirmed on fresh seeds"),
                 ("held", "Held"), ("not held", "Not held"), ("within noise", "Within noise"),
                 ("fewer than three seeds: no verdict", "Fewer than three seeds: no verdict"),
                 ("not all run", "Not all run yet"), ("not run", "Not run yet")]


def takeaway(table: pd.DataFrame) -> Takeaway:
    """The takeaway of a claims table (or the diagnosis' findings), generated from it so that it cannot disagree."""
    claim, verdict = table.columns[0], table.columns[1]
    groups: dict[str, list[str]] = {}
    for c, v in zip(table[claim], table[verdict]):
        name = dict(VERDICT_ORDER).get(str(v))
        groups.setdefault(name or "Found", []).append(c if name else f"{c}: **{v}**")
    order = list(dict.fromkeys([name for _, name in VERDICT_ORDER] + ["Found"]))
    word = lambda g: "with fewer than three seeds (no verdict)" if g.startswith("Fewer") else g.lower()  # noqa: E731
    counts = ", ".join(f"{len(groups[g])} {word(g)}" for g in order if g in groups and g != "Found")
    lines = [f"**Takeaway** ({len(table)} {claim}s; by the package's rule, from the table below): "
             f"{counts or 'none judged'}."]
    for g in order:
        if g in groups:
            lines += ["", f"*{g}:*", *(f"- {c}" for c in groups[g])]
    return Takeaway("\n".join(lines))


def pair_prefix(pairs, ds, n):
    """'[dataset, N_S=n] ' before a claim when the notebook shows several (dataset, N_S) pairs."""
    return f"[{paper.DATASET_NAMES.get(ds, ds)}, N_S={n}] " if len(pairs) > 1 else ""
