"""The claims table each notebook ends with (claims: what the paper states, its verdict on our runs by RULE and the
evidence) and the takeaway written from it, and the diagnosis' findings. Each notebook's own claims (its `*_claims`
function) are built in that notebook."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from . import paper
from .configs import INSTRUMENTED, SUSPECTS, label_of
from .rule import Verdict, above, every
from .tables import (STAGE_STEPS, mean_std, seeded, split_table, stage_change, stage_halves, stage_table,
                     suspects_table)

INTERVAL = "A - B [95 % interval], n, test"   # rule.Verdict.interval()
FINAL = "final_acc"                          # every claim is judged at the final round (the best one is picked on test)
CLAIM_COLUMNS = ["claim", "verdict", INTERVAL, "evidence"]


def claims(items: list) -> pd.DataFrame:
    """items: (claim, verdict, evidence); a verdict is a rule.Verdict (its interval and the separation rule's verdict
    fill their columns), another RULE string, or a bool for exact claims (held / not held: no interval)."""
    rows = []
    for c, h, e in items:
        if isinstance(h, (bool, np.bool_)):
            h = "held" if h else "not held"
        judged = isinstance(h, Verdict)
        rows.append({"claim": c, "verdict": str(h), INTERVAL: h.interval() if judged else "exact" if h in (
            "held", "not held") else "-", "evidence": e})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


class Takeaway(str):
    """Markdown text that a notebook shows as rendered markdown (and as itself anywhere else)."""

    def _repr_markdown_(self):
        return str(self)


# verdicts in the order a takeaway lists them; anything else (a finding's value) is listed under "found"
VERDICT_ORDER = [("held", "Held"), ("not held", "Not held"), ("within noise", "Within noise"),
                 ("fewer than three seeds: no verdict", "Fewer than three seeds: no verdict"),
                 ("not all run", "Not all run yet"), ("not run", "Not run yet")]


def takeaway(table: pd.DataFrame) -> Takeaway:
    """The written takeaway of a claims table (claims(...) or diagnosis_findings(...)), generated from it so that it
    cannot disagree: how many claims held, then each claim under its verdict."""
    claim, verdict = table.columns[0], table.columns[1]
    groups: dict[str, list[str]] = {}
    for c, v in zip(table[claim], table[verdict]):
        name = dict(VERDICT_ORDER).get(str(v))
        groups.setdefault(name or "Found", []).append(c if name else f"{c}: **{v}**")
    order = list(dict.fromkeys([name for _, name in VERDICT_ORDER] + ["Found"]))
    word = lambda g: "with fewer than three seeds (no verdict)" if g.startswith("Fewer") else g.lower()  # noqa: E731
    counts = ", ".join(f"{len(groups[g])} {word(g)}" for g in order if g in groups and g != "Found")
    lines = [f"**Takeaway** ({len(table)} {claim}s; by the package's rule, from the table below): {counts or 'none judged'}."]
    for g in order:
        if g in groups:
            lines += ["", f"*{g}:*", *(f"- {c}" for c in groups[g])]
    return Takeaway("\n".join(lines))


def _prefix(pairs, ds, n):
    """'[dataset, N_S=n] ' before a claim when the notebook shows several (dataset, N_S) pairs."""
    return f"[{paper.DATASET_NAMES.get(ds, ds)}, N_S={n}] " if len(pairs) > 1 else ""


def diagnosis_findings(df, splits, ns_list) -> pd.DataFrame:
    """The diagnosis in claims form: per N_S, 'SemiFL ends above Partially Supervised', 'the stage of a round that
    loses most is <the one that does in the mean>' (held when each other stage loses less by RULE), and '<suspect>
    ends above the profile' for each suspect (verdicts by RULE), with the labeled-set spread beside."""
    items = []
    stages = stage_table(df)
    late_rounds = {n: g for (n, h), g in stage_halves(df) if h == "rounds T/2-T"}
    spread = split_table(splits)
    for n in ns_list:
        d = df[df.num_supervised == n]
        semi = seeded(d[d.label == INSTRUMENTED], "final_acc")
        part = seeded(d[d.label == label_of(PARTIALLY_SUPERVISED)], "final_acc")
        sp = spread[(spread.N_S == n) & (spread.method == label_of(SEMIFL))]
        n_splits = ((splits.num_supervised == n) & splits.label.str.startswith(f"{label_of(SEMIFL)} | ")).sum()
        items.append((f"N_S={n}: SemiFL ({mean_std(semi)}) ends above Partially Supervised ({mean_std(part)})",
                      above(semi, part), f"labeled-set draw alone moves SemiFL by {sp['range'].iloc[0]} points "
                      f"({n_splits} of split seeds 0-4 run)" if n_splits > 1
                      else "labeled-set spread: fewer than 2 splits run"))
        late = stages[(stages.N_S == n) & (stages.rounds == "rounds T/2-T")]
        if len(late):   # the stage that loses most in the mean, judged against each other stage (per seed)
            g = late_rounds[n]
            change = {name: stage_change(g, after, before) for name, after, before in STAGE_STEPS}
            change = {name: {int(s): x for s, x in v.dropna().items()}   # the same runs' stages: paired by seed
                      for name, v in change.items() if v.notna().any()}   # (a stage that never happened: left out)
            worst = min(change, key=lambda k: np.mean(list(change[k].values()))) if change else None
            items.append((f"N_S={n}: the stage of a round that loses most test accuracy (second half of training) "
                          f"is {worst or 'not known'}",
                          every(above(v, change[worst]) for k, v in change.items() if k != worst) if worst
                          else "not run", ", ".join(f"{name} {late[name].iloc[0]}" for name, _, _ in STAGE_STEPS)))
        table = suspects_table(df, n).set_index("run")
        for name in SUSPECTS:
            if name in table.index:
                row = table.loc[name]
                items.append((f"N_S={n}: {name} ends above the profile", row["above the profile"],
                              f"{row['final accuracy']} vs profile "
                              f"{table.loc[INSTRUMENTED, 'final accuracy']} (difference {row['difference to profile']})"))
    return pd.DataFrame(items, columns=["finding", "verdict", "evidence"])


