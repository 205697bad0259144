"""The claims each notebook ends with: per paper item, what the paper states, its verdict on our runs by RULE and the
evidence (the `*_claims` functions), and the diagnosis' findings."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from . import paper
from .configs import INSTRUMENTED, SCALE_NS, SUSPECTS, label_of
from .rule import Verdict, above, at_least, every
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


def scale_claims(table, cfg) -> pd.DataFrame:
    """What the study shows, each verdict by RULE on the seeds (at_least for the study's goal of half the gap)."""
    t = table.set_index("point")
    prof = f"N_S={cfg.num_supervised}"
    col = lambda k, c: t.loc[k, c] if k in t.index else np.array([])
    shown_ = lambda k, c: t.loc[k, c] if k in t.index else "not run"
    semi, psl = label_of(SEMIFL), label_of(PARTIALLY_SUPERVISED)
    # {seed: value}: points at one N_S share each seed's labeled set (paired); points at two N_S do not (Welch)
    by_seed = lambda k, c: t.loc[k, "_by_seed"][c] if k in t.index else {}
    items = [(f"At the profile ({prof}, IID) SemiFL is above Partially Supervised",
              above(by_seed(prof, semi), by_seed(prof, psl)),
              f"SemiFL {shown_(prof, semi)} vs Partially Supervised {shown_(prof, psl)}"),
             ("At the profile SemiFL closes at least half of the gap (the study's goal)",
              at_least(col(prof, "_closed"), 50.0), f"gap closed {mean_std(col(prof, '_closed'), '%')}")]
    ran = [m for m in SCALE_NS if len(col(f"N_S={m}", "_gain"))] or [SCALE_NS[-1], SCALE_NS[0]]
    for name, a, b in ((f"more rounds ({5 * cfg.rounds} vs {cfg.rounds})", f"rounds={5 * cfg.rounds}", prof),
                       ("more local epochs (E=5 vs E=1)", prof, "E=1.0"),
                       ("a wider model (cnn-w2 vs cnn)", "model=cnn-w2", prof),
                       (f"more labels (N_S={max(ran)} vs {min(ran)}, the extremes with SemiFL runs)",
                        f"N_S={max(ran)}", f"N_S={min(ran)}")):
        same_labels = not (a.startswith("N_S=") and b.startswith("N_S="))
        gains = (by_seed(a, "gain"), by_seed(b, "gain")) if same_labels else (col(a, "_gain"), col(b, "_gain"))
        items.append((f"The gain SemiFL - Partially Supervised grows with {name}", above(*gains),
                      f"gain {shown_(a, 'SemiFL - Partially')} vs {shown_(b, 'SemiFL - Partially')}"))
    return claims(items)


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


