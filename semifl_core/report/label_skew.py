"""The label-skew study's shared part (notebooks/label_skew.ipynb holds its tables, figures and claims): the measures
of the instrumented runs, each run summarised by each measure's mean over its rounds (fixed before the runs: every
evaluated round counts alike), and part 3's gate (committed_part3_gate) and `long` cells."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from ..methods.pseudo_labels import CLIENT_ADAPTIVE, FIXED
from . import configs
from .configs import (PART3_NAMES, PART3_GATE, PART3_LONG_PARTITIONS, NO_GLOBAL_MOMENTUM, PART3_LONG_REGARDLESS,
                      PART3_REMEDIES, SKEW_PARTITION, label_of)
from .paper import IID, NON_IID_K2
from .rule import ONE_SEED_LESS, above, at_seeds, holm, one_seed_less, separation
from .runs import curves, stored_runs
from .tables import mean_std, seed_values, seeded   # "mean (std) n=k", one decimal: shares and thresholds in percent

# measure -> (display name, scale), shares in percent. A client's own classes are "its classes" (the measures' "held"),
# the rest "the other classes" ("unheld"): held / not held are the claims' verdicts, nothing else.
OWN, OTHER = "its classes", "the other classes"
MEASURES = {
    "skew_held": ("its classes, how many", 1),
    "skew_tau_held": (f"threshold tau_c, {OWN}, %", 100),
    "skew_tau_unheld": (f"threshold tau_c, {OTHER}, %", 100),
    "skew_pred_unheld": (f"labels in {OTHER}, % (all wrong)", 100),
    "skew_pass_held": (f"pass rate, {OWN}, %", 100),
    "skew_pass_unheld": (f"pass rate, {OTHER}, %", 100),
    "skew_fix_unheld": (f"fix set in {OTHER}, %", 100),
    "skew_fix_acc_held": (f"fix-set accuracy, {OWN}, %", 1),
    "threshold_acc": ("fix-set accuracy, all, %", 1),
    "skew_dacc_held": (f"client update: test accuracy change, {OWN} (points)", 1),
    "skew_dacc_unheld": (f"client update: test accuracy change, {OTHER} (points)", 1),
}
SEMIFL_CA, SEMIFL_FIXED, FL2_ROW = f"SemiFL, {CLIENT_ADAPTIVE}", f"SemiFL, {FIXED}", "(FL)²"
PARTITION_NAMES = {IID: "IID", NON_IID_K2: "Non-IID, K=2"}
REMEDY_PARTITION_NAMES = {NON_IID_K2: "Non-IID, K=2", "dir-0.1": "Dir(0.1)", IID: "IID"}


def with_rows(df: pd.DataFrame) -> pd.DataFrame:
    """df with 'row' (the label's first part: the rule or method)."""
    return df.assign(row=df.label.str.split(" | ", regex=False).str[0]) if len(df) else df.assign(row=[])


def run_means(df: pd.DataFrame) -> pd.DataFrame:
    """One row per instrumented run (row, seed) with each measure's mean over the run's rounds."""
    keys = ["row", "seed", *(["draw"] if "draw" in df.columns else [])]   # the labeled-set draw: what pairs two rows
    cur = curves(with_rows(df), keep=keys)
    cols = [c for c in MEASURES if c in cur.columns]
    return cur.groupby(keys, as_index=False)[cols].mean() if len(cur) else pd.DataFrame(columns=["row", "seed"])


# ---------------------------------------------------------------------- part 3 (notebooks/label_skew.ipynb, "Part 3")
FINAL = "remedy's final"


def finals(df, label) -> np.ndarray:
    return seed_values(df, label=label) if len(df) else np.array([])


def part3_gate_table(gates: pd.DataFrame, judges: pd.DataFrame) -> pd.DataFrame:
    """Part 3's gate (configs.PART3_GATE, fixed before its runs) per remedy (gates: its instrumented K=2 `small` runs;
    judges: configs.label_skew_judges at `small`): one update's change on a client's own and other classes (mean (std)
    n of the run means), the K=2 `small` final beside the fixed rule's (Table 1's cell), and the gate: passed by the
    mechanism (PART3_GATE) or by the final (held above the fixed rule's: separation), else failed; 'not run' if n<3."""
    means, fixed = run_means(gates), finals(judges, f"{label_of(SEMIFL)} | {SKEW_PARTITION}")
    rows = []
    for r in PART3_REMEDIES:
        own, other = measure_values(means, r, "skew_dacc_held"), measure_values(means, r, "skew_dacc_unheld")
        final = finals(gates, f"{r} | {label_of(SEMIFL)} | {SKEW_PARTITION} (instrumented)")
        vs = separation(final, fixed)   # the package's rule when the gate was fixed: a gate keeps it (docs/verdicts.md)
        gate = "not run" if len(own) < 3 else (
            "passed (mechanism)" if other.mean() > PART3_GATE["skew_dacc_unheld"]
            and own.mean() >= PART3_GATE["skew_dacc_held"] else "passed (final)" if vs == "held" else "failed")
        rows.append({"remedy": r, OWN: mean_std(own), OTHER: mean_std(other), "final": mean_std(final),
                     "fixed rule": mean_std(fixed), "above it": vs, "gate": gate})
    return pd.DataFrame(rows).set_index("remedy")


def part3_long_plan(gate: pd.DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    """The `long` cells part 3 trains, as (remedy, partitions): the fewer-steps remedies at K=2 regardless, and each
    remedy whose gate passed at K=2 and Dir(0.1); the notebook asks for it so its campaign queues exactly these."""
    passed = {r for r in PART3_REMEDIES if str(gate.loc[r, "gate"]).startswith("passed")}
    plan = [(r, PART3_LONG_PARTITIONS if r in passed else (SKEW_PARTITION,)) for r in PART3_LONG_REGARDLESS]
    return plan + [(r, PART3_LONG_PARTITIONS) for r in PART3_REMEDIES if r in passed and r not in PART3_LONG_REGARDLESS]


def committed_part3_gate(p, ds, n, results_dir=None) -> pd.DataFrame:
    """part3_gate_table on the committed runs at seeds 0-2, whatever seeds a render uses: the notebook plans its `long`
    runs from it. stored_runs is quiet, where run_all's lines would count the gate's runs twice in the README."""
    gates = pd.concat([stored_runs(configs.label_skew_gate_configs(p, ds, n, r), (0, 1, 2), results_dir)
                       for r in PART3_REMEDIES], ignore_index=True)
    return part3_gate_table(gates, stored_runs(configs.label_skew_judges(p, ds, n), (0, 1, 2), results_dir))


def part3_long_table(long: pd.DataFrame, judges: pd.DataFrame, seeds=(0, 1, 2)) -> pd.DataFrame:
    """Part 3's `long` cells (long: configs.label_skew_long_configs' runs; judges: configs.label_skew_judges at `long`):
    per remedy and partition with runs, its final accuracy beside Partially Supervised's and the fixed rule's, and its
    verdicts against both (paired by seed; each column one Holm family). A cell is the mean at `seeds` (every claim's:
    0-2); a verdict's `evidence`: both arms there, and which seed left out turns a decided one (rule.one_seed_less)."""
    psl = finals(judges, label_of(PARTIALLY_SUPERVISED))
    rows, shown, vs_psl, vs_fixed = [], [], [], []
    for r in PART3_REMEDIES:
        for part, name in PART3_NAMES.items():
            own = finals(long, f"{r} | {label_of(SEMIFL)} | {part}")
            if not len(own):
                continue
            fixed = finals(judges, f"{label_of(SEMIFL)} | {part}")
            pairs = {base: at_seeds(own, other, seeds) for base, other in (("psl", psl), ("fixed", fixed))}
            claim = f"SemiFL + {r} above {{}} under {name} at 300 rounds"
            vs_psl.append(above(*pairs["psl"], claim.format("Partially Supervised")))
            vs_fixed.append(above(*pairs["fixed"], claim.format("SemiFL's fixed rule")))
            both = {**pairs["psl"][0], **pairs["fixed"][0]}   # the remedy at the seeds either claim reads
            rows.append({"remedy": r, "partition": name, FINAL: mean_std([both[s] for s in sorted(both)]),
                         "Partially Supervised": mean_std(pairs["psl"][1].values()),
                         "SemiFL, fixed rule": mean_std(pairs["fixed"][1].values())})
            shown.append(pairs)
    for row, pairs, a, b in zip(rows, shown, holm(vs_psl), holm(vs_fixed)):
        for v, (x, y) in ((a, pairs["psl"]), (b, pairs["fixed"])):   # each arm at the seeds its claim was judged on
            turns = one_seed_less(x, y, v)
            v.evidence = f"{mean_std(x.values())} vs {mean_std(y.values())}" + (
                f"; {ONE_SEED_LESS}: {turns}" if turns else "")
        row.update({"vs Partially Supervised": a, "vs SemiFL": b})
    columns = ["remedy", "partition", FINAL, "Partially Supervised", "SemiFL, fixed rule",
               "vs Partially Supervised", "vs SemiFL"]
    return pd.DataFrame(rows, columns=columns).set_index(["remedy", "partition"])


PART3_IID_SENT = (NO_GLOBAL_MOMENTUM,)   # sent to IID on 2026-11-29 (held above Partially Supervised at n=8 then)


def part3_iid_plan(long_table: pd.DataFrame) -> list[str]:
    """The remedies part 3's rule, fixed before its runs, sends to IID at `long`: those held above Partially Supervised
    under K=2 there (a remedy must not lose what SemiFL gains under IID). The rule read the seed plan's eight seeds, no
    confirmation (docs/verdicts.md): the one it sent (PART3_IID_SENT) keeps its IID check; any held at 0-2 joins it."""
    k2 = PART3_NAMES[SKEW_PARTITION]
    held = [r for (r, part), row in long_table.iterrows()
            if part == k2 and str(row["vs Partially Supervised"]) == "held"]
    return [r for r in PART3_REMEDIES if r in PART3_IID_SENT or r in held]


def measure_values(means, row, col, scale=1.0) -> np.ndarray:
    """One row's measure per seed (times `scale`; -1 for a drop), a tables.seeded array (paired by seed, draw) or []."""
    m = means[means.row == row]
    return seeded(m.assign(**{col: m[col] * scale}), col) if col in m and len(m) else np.array([])


