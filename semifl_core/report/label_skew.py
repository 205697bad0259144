"""The label-skew study (notebooks/label_skew, notebooks/label_skew.ipynb): why the client-adaptive rule that beats Partially
Supervised under IID stops doing so under Non-IID K=2, measured on instrumented runs, and the fix it names
(notebooks/label_skew.ipynb). Runs in (report.run_all's frames), tables, curves and claims out (the written takeaway is
report.takeaway of the claims).

Each instrumented run is summarised by the mean of each measure over its rounds (fixed before the runs: every
evaluated round counts alike); a row of the mechanism table is the mean (population std) over seeds of those run
means, and the claims judge the per-seed run means by the package's rule (report.rule)."""
from __future__ import annotations


import numpy as np
import pandas as pd

from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from ..methods.pseudo_labels import CLIENT_ADAPTIVE, FIXED, GLOBAL_ADAPTIVE
from .claims import INTERVAL, Takeaway, claims as make_claims
from . import configs
from .configs import (PART3_NAMES, FEDRS, NTD, PART3_GATE, PART3_IID_CHECK, PART3_LONG_PARTITIONS,
                      NO_GLOBAL_MOMENTUM, PART3_LONG_REGARDLESS, PART3_REMEDIES, REMEDY_GATE, SKEW_PARTITION, VLS, label_of)
from .paper import IID, NON_IID_K2
from .rule import (ONE_SEED_LESS, above, at_least, at_seeds, family, loss_ruled_out, one_seed_less,
                   read_as_not_worse, separation, upper_end)
from .runs import curves, stored_runs
from .tables import mean_std, seed_values, seeded   # "mean (std) n=k", one decimal: shares and thresholds in percent

# measure -> (display name, scale): shares are shown in percent. A client's own classes are "its classes" (the
# measures' "held") and the rest "the other classes" ("unheld"): held / not held are the claims' verdicts, nothing else.
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


def mechanism_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows: the instrumented rules; columns: the measures' display names, 'mean (std) n=k' over seeds."""
    means = run_means(df)
    rows = []
    for row in dict.fromkeys(means.row):
        m = means[means.row == row]
        rows.append({"rule": row, **{name: mean_std(m[c] * scale) if c in m else "not run"
                                     for c, (name, scale) in MEASURES.items()}})
    return pd.DataFrame(rows).set_index("rule").T.rename_axis("measure") if rows else pd.DataFrame()


# the figure's panels: (title, column stem, scale), and each panel's y range
MECHANISM_PANELS = (("threshold tau_c (%)", "skew_tau", 100), ("pass rate (%)", "skew_pass", 100),
                    ("accuracy change (points)", "skew_dacc", 1))
MECHANISM_BOUNDS = {"threshold tau_c (%)": (0, 100), "pass rate (%)": (0, 100),
                    "accuracy change (points)": (-100, 100)}


def mechanism_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Long frame for the figure: round, rule, seed, measure (thresholds, pass rates, accuracy change), class group
    (OWN / OTHER), value."""
    cur = curves(with_rows(df), keep=("row", "seed"))
    parts = []
    for measure, stem, scale in MECHANISM_PANELS:
        for group, suffix in ((OWN, "held"), (OTHER, "unheld")):
            col = f"{stem}_{suffix}"
            if col in cur:
                parts.append(cur[["round", "row", "seed"]].assign(measure=measure, classes=group,
                                                                  value=cur[col] * scale))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["round", "row", "seed", "measure", "classes", "value"])


def _judged_table(df: pd.DataFrame, fix: tuple[str, str], rival: tuple[str, str],
                  vs: tuple[str, str], partitions: dict = PARTITION_NAMES) -> pd.DataFrame:
    """Per partition, the final-round accuracy of Partially Supervised, of the rival and of the fix (each a (row as
    the run labels name it, column name) pair; their runs are 'row | SemiFL | partition'), and the fix's verdicts
    against both (columns '<vs[0]> vs Partially Supervised' and '<vs[0]> vs <vs[1]>')."""
    psl = seed_values(df, label=label_of(PARTIALLY_SUPERVISED))
    rows = []
    for part, name in partitions.items():
        f, r = (seed_values(df, label=f"{row} | {label_of(SEMIFL)} | {part}") for row, _ in (fix, rival))
        rows.append({"partition": name, "Partially Supervised": mean_std(psl), rival[1]: mean_std(r),
                     fix[1]: mean_std(f), f"{vs[0]} vs Partially Supervised": above(f, psl),
                     f"{vs[0]} vs {vs[1]}": above(f, r)})
    return pd.DataFrame(rows).set_index("partition")


def fix_table(df: pd.DataFrame) -> pd.DataFrame:
    """Final-round accuracy of the fix (global-adaptive), client-adaptive and Partially Supervised per partition,
    with the verdicts of the fix against both."""
    return _judged_table(df, (GLOBAL_ADAPTIVE, "global-adaptive (the fix)"), (CLIENT_ADAPTIVE, "client-adaptive"),
                         ("fix", "client-adaptive"))


def fedrs_table(df: pd.DataFrame) -> pd.DataFrame:
    """The second fix (df: run_all over configs.label_skew_fedrs_configs): final-round accuracy of SemiFL with FedRS's
    restricted softmax, SemiFL with plain softmax (the fixed rule both) and Partially Supervised per partition, with
    the verdicts of FedRS against both."""
    return _judged_table(df, (FEDRS, "SemiFL + FedRS"), (FIXED, "SemiFL (fixed rule)"), ("FedRS", "SemiFL"))


def remedy_table(df: pd.DataFrame, remedy: str) -> pd.DataFrame:
    """A distillation remedy's cells (df: run_all over configs.label_skew_remedy_configs): final-round accuracy of
    SemiFL with it, SemiFL without (the fixed rule both) and Partially Supervised at K=2, Dir(0.1) and IID, with the
    remedy's verdicts against both."""
    return _judged_table(df, (remedy, f"SemiFL + {remedy}"), (FIXED, "SemiFL (fixed rule)"), ("remedy", "SemiFL"),
                         REMEDY_PARTITION_NAMES)


# the gate's rows: the instrumented runs of the fixed rule with plain softmax, FedRS and the two distillations; its
# column says whether a remedy's accuracy cells are trained (a rule for spending CPU, not a verdict)
GATE_ROWS = {SEMIFL_FIXED: "fixed rule, plain softmax", FEDRS: "FedRS, alpha 0.5", NTD: NTD, VLS: VLS}
GATE, PASSED, FAILED = "gate (train the accuracy cells?)", "gate passed", "gate failed"


def gate_table(mech: pd.DataFrame) -> pd.DataFrame:
    """The remedies' gate (configs.REMEDY_GATE, fixed before their runs): per instrumented row, one client update's
    test-accuracy change on its classes and on the other classes (mean (std) n of the runs' means over their
    rounds), and, for the two distillations, whether the n=seeds means pass the gate (PASSED / FAILED; 'not run'
    without runs)."""
    means, rows = run_means(mech), []
    for row, name in GATE_ROWS.items():
        held, unheld = _values(means, row, "skew_dacc_held"), _values(means, row, "skew_dacc_unheld")
        gate = "" if row not in (NTD, VLS) else "not run" if not len(held) else (
            PASSED if unheld.mean() > REMEDY_GATE["skew_dacc_unheld"] and held.mean() >= REMEDY_GATE["skew_dacc_held"]
            else FAILED)
        rows.append({"instrumented runs (Non-IID K=2)": name, f"{OWN}, points": mean_std(held),
                     f"{OTHER}, points": mean_std(unheld), GATE: gate})
    return pd.DataFrame(rows).set_index("instrumented runs (Non-IID K=2)")


def passed_gates(gates: pd.DataFrame) -> list[str]:
    """The remedies whose gate passed (gate_table's GATE column): only those get their cells trained."""
    return [row for row in (NTD, VLS) if gates.loc[row, GATE] == PASSED]


# ---------------------------------------------------------------------- part 3 (notebooks/label_skew.ipynb, "Part 3")
FINAL = "remedy's final"


def _finals(df, label) -> np.ndarray:
    return seed_values(df, label=label) if len(df) else np.array([])


def part3_gate_table(gates: pd.DataFrame, judges: pd.DataFrame) -> pd.DataFrame:
    """Part 3's gate (configs.PART3_GATE, fixed before its runs), per remedy (gates: its instrumented K=2 `small`
    runs; judges: configs.label_skew_judges at `small`): one update's change on a client's own and the other classes
    (mean (std) n of the runs' means over their rounds), its K=2 `small` final beside the fixed rule's (Table 1's
    cell), and the gate: passed by the mechanism (the other classes' drop under 14.5 points with its own classes up
    at least 3) or by the final (held above the fixed rule's by the separation rule, the package's rule when the gate
    was fixed and ran: a gate keeps the rule it was written with), failed otherwise; 'not run' until three seeds are
    in."""
    means, fixed = run_means(gates), _finals(judges, f"{label_of(SEMIFL)} | {SKEW_PARTITION}")
    rows = []
    for r in PART3_REMEDIES:
        own, other = _values(means, r, "skew_dacc_held"), _values(means, r, "skew_dacc_unheld")
        final = _finals(gates, f"{r} | {label_of(SEMIFL)} | {SKEW_PARTITION} (instrumented)")
        vs = separation(final, fixed)   # the gate's rule: the package's rule when the gate was fixed (docs/verdicts.md)
        gate = "not run" if len(own) < 3 else (
            "passed (mechanism)" if other.mean() > PART3_GATE["skew_dacc_unheld"]
            and own.mean() >= PART3_GATE["skew_dacc_held"] else "passed (final)" if vs == "held" else "failed")
        rows.append({"remedy": r, OWN: mean_std(own), OTHER: mean_std(other), "final": mean_std(final),
                     "fixed rule": mean_std(fixed), "above it": vs, "gate": gate})
    return pd.DataFrame(rows).set_index("remedy")


def part3_long_plan(gate: pd.DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    """The `long` cells part 3 trains, from its gate table (part3_gate_table), as (remedy, partitions), remedy by
    remedy: the fewer-steps remedies at Non-IID K=2 regardless of their gate, and every remedy whose gate passed at
    Non-IID K=2 and Dir(0.1). The campaign trains this plan and the notebook asks for it: a remedy whose gate failed
    has no `long` runs to wait for."""
    passed = {r for r in PART3_REMEDIES if str(gate.loc[r, "gate"]).startswith("passed")}
    plan = [(r, PART3_LONG_PARTITIONS if r in passed else (SKEW_PARTITION,)) for r in PART3_LONG_REGARDLESS]
    return plan + [(r, PART3_LONG_PARTITIONS) for r in PART3_REMEDIES if r in passed and r not in PART3_LONG_REGARDLESS]


def committed_part3_gate(p, ds, n, results_dir=None) -> pd.DataFrame:
    """part3_gate_table on the committed runs, seeds 0-2 (what the campaign plans its `long` runs from): a remedy's
    gate reads 'not run' until its three gate runs are in. Read with stored_runs (quiet: in a notebook run_all's store
    lines would count the gate's runs a second time in the README's run count)."""
    gates = pd.concat([stored_runs(configs.label_skew_gate_configs(p, ds, n, r), (0, 1, 2), results_dir)
                       for r in PART3_REMEDIES], ignore_index=True)
    return part3_gate_table(gates, stored_runs(configs.label_skew_judges(p, ds, n), (0, 1, 2), results_dir))


def part3_long_table(long: pd.DataFrame, judges: pd.DataFrame, seeds=(0, 1, 2)) -> pd.DataFrame:
    """Part 3's cells at `long` (long: configs.label_skew_long_configs' runs; judges: configs.label_skew_judges at
    `long`): per remedy and partition with runs, its final-round accuracy beside Partially Supervised's and SemiFL's
    fixed rule's, and its verdicts against both (RULE, paired by seed; each column one family, Holm-corrected). The
    remedy's cell is its mean at `seeds` (every claim's: 0-2); each verdict's `evidence` holds both arms there, and,
    for a decided verdict that some seed left out turns, which (rule.one_seed_less)."""
    psl = _finals(judges, label_of(PARTIALLY_SUPERVISED))
    rows, shown, vs_psl, vs_fixed = [], [], [], []
    for r in PART3_REMEDIES:
        for part, name in PART3_NAMES.items():
            own = _finals(long, f"{r} | {label_of(SEMIFL)} | {part}")
            if not len(own):
                continue
            fixed = _finals(judges, f"{label_of(SEMIFL)} | {part}")
            pairs = {base: at_seeds(own, other, seeds) for base, other in (("psl", psl), ("fixed", fixed))}
            claim = f"SemiFL + {r} above {{}} under {name} at 300 rounds"
            vs_psl.append(above(*pairs["psl"], claim.format("Partially Supervised")))
            vs_fixed.append(above(*pairs["fixed"], claim.format("SemiFL's fixed rule")))
            both = {**pairs["psl"][0], **pairs["fixed"][0]}   # the remedy at the seeds either claim reads
            rows.append({"remedy": r, "partition": name, FINAL: mean_std([both[s] for s in sorted(both)]),
                         "Partially Supervised": mean_std(pairs["psl"][1].values()),
                         "SemiFL, fixed rule": mean_std(pairs["fixed"][1].values())})
            shown.append(pairs)
    for row, pairs, a, b in zip(rows, shown, family(vs_psl), family(vs_fixed)):
        for v, (x, y) in ((a, pairs["psl"]), (b, pairs["fixed"])):   # each arm at the seeds its claim was judged on
            turns = one_seed_less(x, y, v)
            v.evidence = f"{mean_std(x.values())} vs {mean_std(y.values())}" + (
                f"; {ONE_SEED_LESS}: {turns}" if turns else "")
        row.update({"vs Partially Supervised": a, "vs SemiFL": b})
    columns = ["remedy", "partition", FINAL, "Partially Supervised", "SemiFL, fixed rule",
               "vs Partially Supervised", "vs SemiFL"]
    return pd.DataFrame(rows, columns=columns).set_index(["remedy", "partition"])


def committed_part3_long_table(p, ds, n, gate_profile="small", results_dir=None) -> pd.DataFrame:
    """part3_long_table on the committed runs at profile p (`long`), seeds 0-2 (what the campaign plans part 3's IID
    follow-up from; read quietly, as committed_part3_gate)."""
    plan = part3_long_plan(committed_part3_gate(gate_profile, ds, n, results_dir))
    seeds = (0, 1, 2)
    long = [stored_runs(configs.label_skew_long_configs(p, ds, n, r, parts), seeds, results_dir) for r, parts in plan]
    judges = stored_runs(configs.label_skew_judges(p, ds, n, PART3_LONG_PARTITIONS), seeds, results_dir)
    return part3_long_table(pd.concat(long, ignore_index=True) if long else judges.iloc[:0], judges)


PART3_IID_SENT = (NO_GLOBAL_MOMENTUM,)   # sent to IID on 2026-11-29 (held above Partially Supervised at n=8 then)


def part3_iid_plan(long_table: pd.DataFrame) -> list[str]:
    """The remedies part 3's rule, fixed before its runs, sends to IID at `long`: those held above Partially
    Supervised under Non-IID K=2 there (a remedy must not lose what SemiFL gains under IID). The rule read the seed
    plan's eight seeds, which are no confirmation (docs/verdicts.md): the remedy it sent then (PART3_IID_SENT) keeps
    its IID check, and a remedy now held at seeds 0-2 joins it."""
    k2 = PART3_NAMES[SKEW_PARTITION]
    held = [r for (r, part), row in long_table.iterrows()
            if part == k2 and str(row["vs Partially Supervised"]) == "held"]
    return [r for r in PART3_REMEDIES if r in PART3_IID_SENT or r in held]


def part3_iid_table(iid: pd.DataFrame, judges: pd.DataFrame, remedies) -> pd.DataFrame:
    """Part 3's IID follow-up at `long` (iid: configs.label_skew_long_configs' IID runs of `remedies`, from
    part3_iid_plan; judges: configs.label_skew_judges at IID): each remedy's final beside SemiFL's fixed rule's, seeds
    0-2, and the claim that it is not worse (NOT_WORSE_RULE, paired by seed; the remedies one family, Holm: an
    interval that holds zero reads within noise, its lower end the largest loss left open)."""
    fixed = _finals(judges, f"{label_of(SEMIFL)} | iid")
    rows, worse = [], []
    for r in remedies:
        own, base = at_seeds(_finals(iid, f"{r} | {label_of(SEMIFL)} | iid"), fixed)
        if own:   # while its runs come in: both arms at the seeds the remedy has (fewer than three: no verdict)
            base = {s: v for s, v in base.items() if s in own}
        worse.append(above(base, own, f"SemiFL's fixed rule above SemiFL + {r} under IID"))
        rows.append({"remedy": r, FINAL: mean_std(own.values()) if own else "not run",
                     "SemiFL, fixed rule": mean_std(base.values()) if base else "not run"})
    for row, v in zip(rows, family(worse)):   # Holm on 'the fixed rule above it', then read as 'not worse'
        row["not worse than SemiFL"] = read_as_not_worse(v)
    return pd.DataFrame(rows, columns=["remedy", FINAL, "SemiFL, fixed rule", "not worse than SemiFL"]
                        ).set_index("remedy")


def part3_iid_claims(iid_table: pd.DataFrame) -> list:
    """One claim per row of part3_iid_table: the remedy is not worse than SemiFL's fixed rule under IID."""
    return [(f"SemiFL + {r}{PART3_IID_CHECK}",
             row["not worse than SemiFL"], f"{row[FINAL]} vs {row['SemiFL, fixed rule']}")
            for r, row in iid_table.iterrows()]


def part3_claims(gates: pd.DataFrame, mech: pd.DataFrame, long_table: pd.DataFrame) -> list:
    """Part 3's claims: each remedy's update lowers the other classes less than the fixed rule's (its instrumented
    runs against the fixed rule's, mech), and at `long` it beats Partially Supervised and SemiFL's fixed rule."""
    g, m = run_means(gates), run_means(mech)
    fx_drop = _values(m, SEMIFL_FIXED, "skew_dacc_unheld", -1.0)
    items = []
    for r in PART3_REMEDIES:
        drop = _values(g, r, "skew_dacc_unheld", -1.0)
        items.append((f"SemiFL + {r}: a client's update lowers {OTHER} less than the fixed rule's",
                      above(fx_drop, drop), f"drop, points {mean_std(drop)} vs {mean_std(fx_drop)}"))
    return items + part3_long_claims(long_table)


def part3_long_claims(long_table: pd.DataFrame) -> list:
    """Two claims per row of part3_long_table: the remedy beats Partially Supervised, and SemiFL's fixed rule."""
    return [item for (r, part), row in long_table.iterrows() for item in (
        (f"SemiFL + {r} beats Partially Supervised under {part} at 300 rounds", row["vs Partially Supervised"],
         row["vs Partially Supervised"].evidence),
        (f"SemiFL + {r} beats SemiFL's fixed rule under {part} at 300 rounds", row["vs SemiFL"],
         row["vs SemiFL"].evidence))]


def advice(claims_table: pd.DataFrame) -> Takeaway:
    """A paragraph for a user choosing settings under label skew, written from the claims (so it cannot disagree
    with them): the remedies held above Partially Supervised under K=2 at `long` (or that none is), those held above
    SemiFL's fixed rule there, each saying when one seed less would leave it within noise; then every `long` claim at
    K=2 with its verdict and evidence, one bullet each."""
    return Takeaway("**For a user choosing settings under label skew.** " + _advice(claims_table))


def _advice(claims_table: pd.DataFrame) -> str:
    rows = claims_table.reset_index() if "claim" not in claims_table else claims_table
    at_long = rows[rows["claim"].str.contains("under Non-IID, K=2 at 300 rounds", regex=False)]
    if not len(at_long):
        return ("No remedy has its `long` runs in yet, so this study has no advice beyond its measurements; the gate "
                "table above says which remedies train at `long`.")
    claims_ = list(zip(at_long["claim"], at_long["verdict"], at_long[INTERVAL], at_long["evidence"]))
    held = lambda rival: [c.split(" beats ")[0].removeprefix("SemiFL + ")   # noqa: E731
                          for c, v, _, _ in claims_ if v == "held" and f"beats {rival}" in c]
    final = all(v in ("held", "not held", "within noise") and "planned" not in i for _, v, i, _ in claims_)
    fixed_rule = "SemiFL's fixed rule"
    over_psl, over_fixed = " or ".join(held("Partially Supervised")), " or ".join(held(fixed_rule))
    thin = lambda rival: (", though the evidence is thin (one seed less and the lead is within noise)"  # noqa: E731
                          if any(v == "held" and f"beats {rival}" in c and ONE_SEED_LESS in e
                                 for c, v, _, e in claims_) else "")
    if over_psl:
        lead = (f"Under Non-IID K=2 at 300 rounds, SemiFL with {over_psl} is held above Partially Supervised"
                f"{thin('Partially Supervised')}: with it, the clients' unlabeled images add to what the server's "
                "labels give alone.")
    else:
        vs_psl = [(c, v, i) for c, v, i, _ in claims_ if "beats Partially Supervised" in c]
        highs = [h for _, v, i in vs_psl if v == "within noise" for h in [upper_end(i)] if h is not None]
        lead = ("Under Non-IID K=2 at 300 rounds, no remedy tried here is held above Partially Supervised"
                + ("" if final else " so far")
                + (f": the server's labels alone do as well, within the seeds' noise, and the intervals rule out a "
                   f"lead of more than {max(highs):+.1f} points over them" if highs and {v for _, v, _ in vs_psl}
                   == {"within noise"} else "") + ".")
    iid = rows[rows["claim"].str.endswith(PART3_IID_CHECK)]
    for c, v, i in zip(iid["claim"], iid["verdict"], iid[INTERVAL]):
        remedy = c.removeprefix("SemiFL + ").removesuffix(PART3_IID_CHECK)
        check = (f" {remedy[0].upper()}{remedy[1:]}'s IID check (by the rule fixed before the runs, it must not be "
                 "worse than SemiFL's fixed rule under IID at 300 rounds)")
        if v in ("held", "not held"):
            lead += f"{check}: {v} (difference {i})."
        elif v == "within noise":   # NOT_WORSE_RULE: no loss found is not no loss; the interval bounds it
            lead += f"{check}: within noise (difference {i}): {loss_ruled_out(i)}."
        else:
            lead += f"{check} is not in yet."
    if over_fixed:
        lead += (f" Against SemiFL's fixed rule, SemiFL with {over_fixed} holds a lead{thin(fixed_rule)}: if SemiFL"
                 " is run under label skew, that is the change with evidence that it helps SemiFL itself.")
    tail = "" if final else ("\n\nA claim without a verdict, or whose planned seeds are not all in (its interval says "
                             "how many are), is not final.")
    said = "\n".join(f"- {c.removeprefix('SemiFL + ')}: {v} (difference {i}; {e})" for c, v, i, e in claims_)
    return f"{lead} The `long` claims, final round:\n\n{said}{tail}"


def _judged_claims(table: pd.DataFrame, beats_psl: str, beats_rival: str) -> list:
    """Two claims per partition of a _judged_table: the fix beats Partially Supervised, and beats its rival."""
    psl, rival, fix, vs_psl, vs_rival = table.columns
    return [item for name, r in table.iterrows() for item in (
        (f"{name}: {beats_psl}", r[vs_psl], f"{r[fix]} vs {r[psl]}"),
        (f"{name}: {beats_rival}", r[vs_rival], f"{r[fix]} vs {r[rival]}"))]


def _values(means, row, col, scale=1.0) -> np.ndarray:
    """One row's measure per seed (times `scale`; -1 for a drop), knowing its seeds and labeled-set draw (a
    tables.seeded array: two rows at one seed and draw are paired by the rule), or empty."""
    m = means[means.row == row]
    return seeded(m.assign(**{col: m[col] * scale}), col) if col in m and len(m) else np.array([])


def claims(mech: pd.DataFrame, fix: pd.DataFrame, fedrs: pd.DataFrame | None = None,
           remedies: dict | None = None, part3: list | None = None) -> pd.DataFrame:
    """The study's claims: the mechanism (from the instrumented runs, FedRS's among them), the fix (from the plain
    runs) and, with `fedrs` (fedrs_table), the second fix, each with its verdict by the package's rule and its
    evidence."""
    means = run_means(mech)
    v = lambda row, col, scale=1.0: _values(means, row, col, scale)   # noqa: E731
    ev = lambda a, b: f"{mean_std(a)} vs {mean_std(b)}"   # noqa: E731
    items = []
    for row in (SEMIFL_CA, FL2_ROW):
        held, unheld = v(row, "skew_tau_held", 100), v(row, "skew_tau_unheld", 100)
        items.append((f"{row}: a client's threshold is lower for the other classes than for its classes",
                      above(held, unheld), f"tau_c, %: {OWN} {mean_std(held)}, {OTHER} {mean_std(unheld)}"))
    p_un, p_held = v(SEMIFL_CA, "skew_pass_unheld", 100), v(SEMIFL_CA, "skew_pass_held", 100)
    items.append((f"{SEMIFL_CA}: a larger share of the labels in the other classes (all wrong) passes than of those in "
                  "its classes", above(p_un, p_held), f"pass rate, % {ev(p_un, p_held)}"))
    f_un = v(SEMIFL_FIXED, "skew_pass_unheld", 100)
    items.append((f"{SEMIFL_CA} passes more of those wrong labels than the fixed rule (tau 0.95)", above(p_un, f_un),
                  f"pass rate, {OTHER}, % {ev(p_un, f_un)}"))
    for row in (SEMIFL_CA, SEMIFL_FIXED):
        drop = v(row, "skew_dacc_unheld", -1.0)
        items.append((f"{row}: a client's update lowers the test accuracy of the other classes",
                      at_least(drop, 0.0), f"drop, points {mean_std(drop)}"))
    ca_drop, fx_drop = v(SEMIFL_CA, "skew_dacc_unheld", -1.0), v(SEMIFL_FIXED, "skew_dacc_unheld", -1.0)
    items.append((f"{SEMIFL_CA}'s updates lower those classes more than the fixed rule's", above(ca_drop, fx_drop),
                  f"drop, points {ev(ca_drop, fx_drop)}"))
    if fedrs is not None:
        rs_drop = v(FEDRS, "skew_dacc_unheld", -1.0)
        items.append(("SemiFL + FedRS: a client's update lowers the other classes less than the fixed "
                      "rule's with plain softmax", above(fx_drop, rs_drop), f"drop, points {ev(rs_drop, fx_drop)}"))
    items += _judged_claims(fix, "the global-adaptive rule (the fix) beats Partially Supervised",
                            "the global-adaptive rule beats the client-adaptive rule")
    if fedrs is not None:
        items += _judged_claims(fedrs, "SemiFL + FedRS (the second fix) beats Partially Supervised",
                                "SemiFL + FedRS beats SemiFL (fixed rule, plain softmax)")
    for remedy, table in (remedies or {}).items():   # the distillations: their mechanism, then their cells (if run)
        drop = v(remedy, "skew_dacc_unheld", -1.0)
        if len(drop):
            items.append((f"SemiFL + {remedy}: a client's update lowers the other classes less than the "
                          "fixed rule's with plain softmax", above(fx_drop, drop), f"drop, points {ev(drop, fx_drop)}"))
        if table is not None:
            items += _judged_claims(table, f"SemiFL + {remedy} beats Partially Supervised",
                                    f"SemiFL + {remedy} beats SemiFL (fixed rule)")
    return make_claims(items + list(part3 or ()))
