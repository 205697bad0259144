"""The seed plan: how many seeds each open claim gets, decided by a rule written before the new seeds ran
(docs/verdicts.md, "The seed plan").

The claims planned: every row of the README's headline (a method against Partially Supervised) and every label-skew
`long` claim at Non-IID K=2 (a part-3 remedy against Partially Supervised and against SemiFL's fixed rule) that
RULE, with its family's Holm correction, leaves within noise at the committed seeds 0-2. For each, the fewest
seeds at which its observed per-seed differences would be decided at the family's strictest level
(rule.seeds_to_decide), capped at CAP; a claim the cap cannot decide gets no runs (the plan says so). The runs are
queued claim by claim, the one decided for the fewest new CPU hours first (runs another claim already queued cost
nothing), new seeds numbered on from 3, every arm of a claim at the same seeds, until LONG_BUDGET runs of 300
rounds or more are queued. The plan reads seeds 0-2 only, so it stays what it was when written, whatever seeds land
later.

    python -m semifl_core.report.seed_plan            # the plan's table (markdown), as docs/verdicts.md shows it
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from ..results import open_run
from . import configs as C
from .paper import PARTITION_NAMES
from .rule import holm, paired, seeds_to_decide
from .runs import REPO, final_accs, train_minutes

PLANNED_FROM = (0, 1, 2)       # the seeds the plan was computed from (committed before it was written)
CAP = {"small": 10, "long": 8}  # most seeds a claim may get: `small` (30 rounds), `long` (more rounds)
LONG_BUDGET = 20                # most runs of 300 rounds or more the plan queues (Partially Supervised's too)


@dataclass
class Claim:
    """One planned claim: 'a above b', its family (the claims of one table that share a baseline), its arms."""
    name: str
    family: str
    a: Config
    b: Config
    values: tuple = (dict(), dict())       # {seed: final accuracy} of a and b at PLANNED_FROM
    verdict: str = ""
    interval: str = ""
    seeds: int | None = None               # the seeds the plan gives it (None: not decided by CAP)
    runs: list = field(default_factory=list)
    m: int = 0                             # its family's size (claims with runs at seeds 0-2)
    over_budget: bool = False              # planned, but its runs did not fit LONG_BUDGET
    hours: float | None = None             # the new CPU hours it was queued for

    @property
    def length(self) -> str:
        return "small" if self.a.rounds <= 30 else "long"


def _finals(cfg: Config, results_dir=None) -> dict:
    return final_accs(cfg, PLANNED_FROM, results_dir)


def claims(results_dir=None) -> list[Claim]:
    """The claims the plan looks at, families in table order, judged at PLANNED_FROM."""
    out = []
    for r in C.headline_configs(results_dir):
        fam = f"README headline, {r['study']}" + (f", {r['method']}" if r["study"] == "few labels" else "")
        c = Claim(f"{r['method']} above Partially Supervised, R={r['R']}, {PARTITION_NAMES[r['partition']]}", fam,
                  r["cfg_a"], r["cfg_psl"])
        if r["study"] != "few labels" or r["R"] == 30 or _finals(c.a, results_dir):   # as the headline shows them
            out.append(c)
    judges = C.label_skew_judges("long", "fashionmnist", 100, tuple(C.PART3_NAMES))
    psl = judges[C.label_of(PARTIALLY_SUPERVISED)]
    for base in ("Partially Supervised", "SemiFL's fixed rule"):
        for remedy in C.PART3_REMEDIES:
            for part, cfg in zip(C.PART3_NAMES, C.label_skew_long_configs("long", "fashionmnist", 100, remedy,
                                                                        tuple(C.PART3_NAMES)).values()):
                b = psl if base == "Partially Supervised" else judges[f"{C.label_of(SEMIFL)} | {part}"]
                out.append(Claim(f"SemiFL + {remedy} above {base}, `long`, {C.PART3_NAMES[part]}",
                                 f"label_skew `long`, vs {base}",
                                 cfg, b))
    for c in out:
        c.values = (_finals(c.a, results_dir), _finals(c.b, results_dir))
    families = {}
    for c in out:
        families.setdefault(c.family, []).append(c)
    for fam in families.values():
        for c, j in zip(fam, holm([paired(*c.values, c.name) for c in fam])):
            c.verdict, c.interval = j.verdict, j.interval()
            c.m = sum(1 for x in fam if x.values[0] and x.values[1])
    return out


def _asks(c: Claim) -> bool:
    """Whether the plan gives this claim seeds: within noise at seeds 0-2, a headline row or a K=2 label-skew one."""
    return c.verdict == "within noise" and (c.family.startswith("README") or c.a.partition == C.SKEW_PARTITION)


def _minutes(cfg: Config, results_dir=None) -> float:
    store = REPO / "results" if results_dir is None else results_dir
    done = [open_run(store, cfg.replace(seed=s)) for s in PLANNED_FROM]
    return float(np.mean([train_minutes(i.path) for i in done if i.state == "complete"]))


def _budgeted(cfg: Config) -> bool:
    """A run LONG_BUDGET counts: one of the `long` profile's 300 rounds or more (a 100-round run is not `long`)."""
    return cfg.rounds >= 300


def plan(results_dir=None) -> tuple[list[Claim], list[tuple[str, Config]]]:
    """The claims (each with its planned seeds and runs) and the queue of runs, in the order they train."""
    cs = claims(results_dir)
    for c in cs:
        if _asks(c):
            d = [c.values[0][s] - c.values[1][s] for s in PLANNED_FROM]
            c.seeds = seeds_to_decide(d, c.m, CAP[c.length])
            c.runs = [cfg.replace(seed=s) for s in range(len(PLANNED_FROM), c.seeds or 0) for cfg in (c.a, c.b)]
    queued, order, budget = {}, [], LONG_BUDGET
    open_ = [c for c in cs if c.runs]
    cost = lambda c: sum(_minutes(r, results_dir) for r in c.runs if r.key() not in queued)  # noqa: E731
    long = lambda runs: sum(1 for r in runs if _budgeted(r) and r.key() not in queued)  # noqa: E731
    while open_:
        c = min(open_, key=cost)
        open_.remove(c)
        if long(c.runs) > budget:
            c.over_budget = True
            continue
        budget -= long(c.runs)
        c.hours = cost(c) / 60
        for r in sorted(c.runs, key=lambda r: (r.seed, r.algorithm != PARTIALLY_SUPERVISED)):
            if r.key() not in queued:
                queued[r.key()] = r
                arm = c.name.split(" above ")[0 if r.key() == c.a.replace(seed=r.seed).key() else 1].split(",")[0]
                order.append((f"seed plan: {arm}, for '{c.name}' (seed {r.seed})", r))
    return cs, order


def table(results_dir=None) -> str:
    """The plan as markdown: one row per claim it gave seeds (or would have, but for the `long` budget); the claims
    it looked at and gave none, counted by why."""
    cs, order = plan(results_dir)
    rows = ["| claim | family (m) | seeds 0-2: difference [interval] | seeds planned | new CPU hours |",
            "| --- | --- | ---: | --- | ---: |"]
    none: dict[str, int] = {}
    for c in cs:
        if not _asks(c) or c.seeds is None:
            why = ("decided at seeds 0-2" if c.verdict in ("held", "not held") else "not run"
                   if c.verdict == "not run" else "not a K=2 claim" if not _asks(c) else
                   f"not decided by the cap ({CAP[c.length]} seeds)")
            none[why] = none.get(why, 0) + 1
            continue
        planned = f"{c.seeds} (over the `long` budget: not queued)" if c.over_budget else str(c.seeds)
        hours = "" if c.hours is None else f"{c.hours:.1f}"
        rows.append(f"| {c.name} | {c.family} ({c.m}) | {c.interval} | {planned} | {hours} |")
    n_long = sum(1 for _, r in order if _budgeted(r))
    rows += ["", f"Given no seeds: {sum(none.values())} of the {len(cs)} claims looked at ("
                 + "; ".join(f"{why}: {k}" for why, k in none.items()) + f"). Queued: {len(order)} runs ({n_long} of "
                 f"300 rounds or more), about {sum(_minutes(r, results_dir) for _, r in order) / 60:.0f} CPU hours at "
                 "the committed runs' pace."]
    return "\n".join(rows)

if __name__ == "__main__":
    sys.exit(print(table()))
