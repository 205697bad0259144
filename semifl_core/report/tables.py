"""One function per table that more than one notebook shows, or that a study reads (Table 1, the gap closed, the
diagnosis' suspects, stages, classes and splits), and the cells they share: runs in, a DataFrame out, with
"mean (std) n=k" cells and the paper's numbers beside ours. A table only one notebook shows (Tables 2-5, Figure 2's,
the scale study's sizing rule, points and cost) is built in that notebook."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ..methods import (FEDAVG_FIXMATCH, FEDAVG_SUPERVISED, FIXMATCH, FULLY_SUPERVISED, PARTIALLY_SUPERVISED,
                       SEMIFL)
from . import paper
from .configs import BASELINE_METHODS, BASELINES, INSTRUMENTED, SUSPECTS, label_of
from .paper import ABLATION_PARTITIONS, PARTITIONS
from .rule import Seeded, above
from .runs import curves

# Table 1's row for fedavg-supervised: the paper calls it HeteroFL (supervised FL with fully labeled clients).
HETEROFL_ROW = "HeteroFL (supervised FedAvg, every client labeled)"


def mean_std(values, unit: str = "") -> str:
    """'mean (std) n=k' with the population std over seeds, one decimal, a unit before n ('23.4 (9.3) % n=3'); one
    seed: 'value (n=1)' (no spread); no values: 'not run'; only NaN (undefined, e.g. a gap closed when the gap is
    zero): 'n/a'."""
    v = np.asarray([x for x in values if x is not None], float)
    if len(v) == 0:
        return "not run"
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return "n/a"
    u = f" {unit}" if unit else ""
    return f"{v.mean():.1f}{u} (n=1)" if len(v) == 1 else f"{v.mean():.1f} ({v.std(ddof=0):.1f}){u} n={len(v)}"


def seed_values(df, metric: str = "final_acc", **match) -> Seeded:
    """`metric` of the rows of df whose columns equal `match` (e.g. method=..., R=...), ordered by seed, knowing
    their seeds and labeled draw (rule.Seeded: a claim between two such pairs by seed); empty where none (or df is an
    empty store's frame)."""
    for column, value in match.items():
        df = df[df[column] == value]
    return seeded(df, metric)


def seeded(df, metric: str) -> Seeded:
    """df's `metric` in seed order as a rule.Seeded (its draw None unless every row shares one and seeds are unique)."""
    df = df.sort_values("seed")
    draws = set(df["draw"]) if "draw" in df.columns else {None}
    one = len(draws) == 1 and df["seed"].is_unique
    return Seeded(df[metric].to_numpy(float), df["seed"].to_numpy(int), next(iter(draws)) if one else None)


def side_by_side(rows: list[dict], paper_label: str, ours_label: str = "this run") -> pd.DataFrame:
    """rows: dicts with index columns plus 'paper' and 'ours' -> DataFrame with the paper's column (named
    paper_label, e.g. 'paper (CIFAR-10, N_S=250)') next to 'this run'."""
    out = pd.DataFrame(rows).assign(paper=lambda d: d.paper.map(paper_cell))
    return out.rename(columns={"paper": paper_label, "ours": ours_label})


def _table(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """DataFrame(rows); with no rows (no runs), an empty frame that still has the columns callers select on."""
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


def select(df, ds, n, **where):
    """The runs of df at (dataset, N_S) whose columns have the values `where` gives."""
    sel = df[(df.dataset == ds) & (df.num_supervised == n)]
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel


def accuracy(df, ds, n, method, part=None, metric="best_acc"):
    """(mean, 'mean (std) n=k', per-seed values in seed order) of one method's runs."""
    sel = select(df, ds, n, method=method)
    if part is not None and method not in BASELINES:
        sel = sel[sel.partition == part]
    v = seeded(sel, metric)
    return float(v.mean()) if len(v) else math.nan, mean_std(v), v


def paper_cell(text, n=paper.SEMIFL_RUNS):
    """A paper's cell in our format, 'mean (spread) n=k', one decimal: '95.3(0.1)' -> '95.3 (0.1) n=4' (SemiFL's
    spread is a standard error over its four seeds), '85.34' -> '85.3 n=4' (no spread printed), n=None -> 'n not
    given'; words after the number stay; None (the paper has none) -> '-'."""
    if text is None or text != text:   # None or NaN
        return "-"
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(?:\((\d+(?:\.\d+)?)\))?(.*)$", str(text))
    if not m:
        return str(text)
    value, spread, rest = m.groups()
    cell = f"{float(value):.1f}" + (f" ({spread})" if spread else "") + (f" n={n}" if n else " n not given")
    return cell + (f" {rest.strip()}" if rest.strip() else "")


def table1(df, ds, n, methods=()) -> pd.DataFrame:
    """Table 1's rows we run: ours ('mean (std) n=k') at the best round (as the paper reports) and at the final round
    (what the claims judge), beside the paper's number; the rows the paper
    has and we do not run are table1_paper_only's. `methods` (configs.check_methods): more methods, each in its own
    rows (per partition if federated), their paper cells empty."""
    from ..methods import METHODS
    pds, pn = paper.paper_column_for(ds, n)

    def row(group, method, theirs, label, part=None):   # ours at the best round ("ours") and at the final round
        return {"group": group, "method": method, "paper": theirs, "ours": accuracy(df, ds, n, label, part)[1],
                "final": accuracy(df, ds, n, label, part, "final_acc")[1]}

    rows = [row("Baseline", label_of(m), paper.table1(m, None, pds, pn), label_of(m)) for m in BASELINE_METHODS]
    # FixMatch is run (methods/fixmatch.py, the same budget as SemiFL's clients)
    rows.append(row("SSL (centralized)", label_of(FIXMATCH), paper.table1("FixMatch", None, pds, pn),
                    label_of(FIXMATCH)))
    rows += [row("Added", label_of(m), None, label_of(m)) for m in methods if not METHODS[m].federated]
    for part in PARTITIONS:
        g = paper.PARTITION_NAMES[part]
        rows.append(row(g, HETEROFL_ROW, paper.table1(FEDAVG_SUPERVISED, part, pds, pn), label_of(FEDAVG_SUPERVISED),
                        part))
        rows.append(row(g, label_of(FEDAVG_FIXMATCH), None, label_of(FEDAVG_FIXMATCH), part))
        rows.append(row(g, label_of(SEMIFL), paper.table1(SEMIFL, part, pds, pn), label_of(SEMIFL), part))
        rows += [row(g, label_of(m), None, label_of(m), part) for m in methods if METHODS[m].federated]
    where = f"({paper.DATASET_NAMES.get(ds, ds)}, N_S={n})"
    return side_by_side(rows, paper.label(pds, pn), f"this run, best round {where}").rename(
        columns={"final": f"this run, final round {where}"})


def gap_closed(semifl, partial, full) -> float:
    """The share of the Partially -> Fully Supervised gap that SemiFL closes, in percent (100 = all of it): the one
    unit every table, claim and figure of the package gives it in."""
    return 100 * (semifl - partial) / (full - partial)


def left_out(methods, table: str, why: str) -> None:
    """One line under a table that shows the paper's methods only: which of the notebook's `methods` it leaves out,
    and why (nothing when there are none)."""
    if methods:
        from ..methods import METHODS
        print(f"{table} leaves out {', '.join(METHODS[m].label for m in methods)}: {why}")


def gap_table(df, ds, n) -> pd.DataFrame:
    """Per partition: SemiFL, Partially and Fully Supervised (final round and best round), and the fraction of the
    Partially -> Fully Supervised gap that SemiFL closes, computed seed by seed (the same seed's baselines)."""
    semifl = label_of(SEMIFL)
    methods = (semifl, label_of(PARTIALLY_SUPERVISED), label_of(FULLY_SUPERVISED))
    rows = []
    for part in PARTITIONS:
        row = {"partition": paper.PARTITION_NAMES[part]}
        for metric, name in (("final_acc", "final round"), ("best_acc", "best round")):
            by_seed = {m: select(df, ds, n, method=m, **({} if m in BASELINES else {"partition": part}))
                       .set_index("seed")[metric] for m in methods}
            semi, psl, fsl = pd.concat(by_seed, axis=1, join="inner").to_numpy(float).T   # seeds all three have
            row[f"{semifl}, {name}"] = mean_std(by_seed[semifl])
            row[f"SemiFL - Partially, {name}"] = mean_std(semi - psl)
            row[f"gap closed (%), {name}"] = mean_std(gap_closed(semi, psl, fsl))
        pds, pn = paper.paper_column_for(ds, n)
        paper_closed = paper_gap_points().query("partition == @part and num_supervised == @pn")
        paper_closed = paper_closed[paper_closed.dataset == paper.DATASET_NAMES[pds]]
        row[f"gap closed (%), {paper.label(pds, pn)}"] = f"{paper_closed.closed.iloc[0]:.0f}"
        rows.append(row)
    return pd.DataFrame(rows)


def paper_gap_points() -> pd.DataFrame:
    """The paper's Table 1 as (dataset, N_S, partition, gain, gap closed in percent), means as printed."""
    rows = []
    for ds, n in paper.TABLE1_COLUMNS:
        full = paper.value(paper.table1(FULLY_SUPERVISED, None, ds, n))
        part = paper.value(paper.table1(PARTIALLY_SUPERVISED, None, ds, n))
        for p in PARTITIONS:
            semi = paper.value(paper.table1(SEMIFL, p, ds, n))
            rows.append({"dataset": paper.DATASET_NAMES[ds], "num_supervised": n, "partition": p,
                         "gain": semi - part, "closed": gap_closed(semi, part, full)})
    return pd.DataFrame(rows)


def _ablation_columns(row: dict, paper_by_partition: dict, paper_label: str, df, ds, n, method) -> dict:
    """Adds, per ablation partition, the paper's value and ours ("mean (std) n=k") side by side to row."""
    for part in ABLATION_PARTITIONS:
        pn = paper.PARTITION_NAMES[part]
        row[f"{pn}: {paper_label}"] = paper_cell(paper_by_partition[part])
        row[f"{pn}: this run"] = accuracy(df, ds, n, method, part)[1]
    return row


def suspects_table(df, n) -> pd.DataFrame:
    """Each suspect's final accuracy against the instrumented profile run (same seeds), with RULE's verdict on
    '<suspect> ends above the profile'; Partially Supervised beside."""
    d = df[df.num_supervised == n]
    base = seeded(d[d.label == INSTRUMENTED], "final_acc")
    rows = []
    for label in [INSTRUMENTED, label_of(PARTIALLY_SUPERVISED), *SUSPECTS]:
        v = seeded(d[d.label == label], "final_acc")
        rows.append({"N_S": n, "run": label, "n": len(v), "final accuracy": mean_std(v),
                     "difference to profile": f"{v.mean() - base.mean():+.1f}" if len(v) and len(base) else "n/a",
                     "above the profile": "-" if label == INSTRUMENTED else above(v, base)})
    return pd.DataFrame(rows)


ROUND_STAGES = [("acc_start", "global model at the start"), ("acc_client_mean", "client models (their mean accuracy)"),
                ("acc_average", "average of the client weights"), ("acc_aggregate", "after global momentum"),
                ("acc_finetuned", "after the server fine-tune")]


def instrumented_curves(df) -> pd.DataFrame:
    """Per-round metrics of the instrumented runs; a stage that never happened (no client above the threshold in
    any round: no client models) is a column of NaN."""
    c = curves(df[df.label == INSTRUMENTED])
    need = [k for k, _ in ROUND_STAGES] + ["server_loss_first", "server_loss_last", "label_ratio", "threshold_acc",
                                           "mix_acc", "round", "seed", "num_supervised"]
    return c.reindex(columns=list(c.columns) + [k for k in need if k not in c])


# The stages of a round as (name, accuracy after it, accuracy before it).
STAGE_STEPS = [("client training", "acc_client_mean", "acc_start"), ("averaging", "acc_average", "acc_client_mean"),
               ("global momentum", "acc_aggregate", "acc_average"),
               ("server fine-tune", "acc_finetuned", "acc_aggregate")]


def stage_halves(df):
    """The instrumented runs' rounds grouped by (N_S, half of training)."""
    c = instrumented_curves(df)
    half = np.where(c["round"] <= c["round"].max() / 2, "rounds 1-T/2", "rounds T/2-T")
    return c.assign(half=half).groupby(["num_supervised", "half"])


def stage_change(g, after, before) -> pd.Series:
    """Per seed, the mean change of test accuracy across one stage of a round."""
    return (g[after] - g[before]).groupby(g.seed).mean()


STAGE_PARTS = {"accuracy": ["N_S", "rounds", "start", *(name for name, _, _ in STAGE_STEPS)],
               "pseudo-labels": ["N_S", "rounds", "fine-tune loss, first -> last step", "label ratio",
                                 "threshold accuracy", "mix-label accuracy"]}


def stage_table(df, part=None) -> pd.DataFrame:
    """Where a round loses accuracy: the change at each stage, averaged over rounds (first half and second half of
    training) and seeds, per N_S; then the fine-tune's loss and the pseudo-labels' measures. part: 'accuracy' or
    'pseudo-labels' (STAGE_PARTS' columns: two tables that each fit a page) or None (all columns)."""
    rows = []
    for (n, h), g in stage_halves(df):
        row = {"N_S": n, "rounds": h, "start": mean_std(g.groupby("seed").acc_start.mean())}
        for name, after, before in STAGE_STEPS:
            row[name] = mean_std(stage_change(g, after, before))
        row["fine-tune loss, first -> last step"] = (f"{g.server_loss_first.mean():.2f} -> "
                                                     f"{g.server_loss_last.mean():.2f}")
        row["label ratio"] = f"{g.label_ratio.mean():.2f}"
        row["threshold accuracy"] = f"{g.threshold_acc.mean():.1f}"
        row["mix-label accuracy"] = f"{g.mix_acc.mean():.1f}"
        rows.append(row)
    out = _table(rows, STAGE_PARTS["accuracy"])
    return out if part is None else out.reindex(columns=STAGE_PARTS[part])


def class_table(df, class_names) -> pd.DataFrame:
    """Per class, over the second half of training (instrumented runs): its share of the fix set (pseudo-labels
    above the threshold; 10% would be balanced), and its test accuracy at the start of a round, after aggregation
    and after the fine-tune."""
    c = instrumented_curves(df)
    c = c[c["round"] > c["round"].max() / 2]
    rows = []
    for n, g in c.groupby("num_supervised"):
        for k, name in enumerate(class_names):
            rows.append({"N_S": n, "class": name, "fix-set share (%)": 100 * g[f"fix_share_c{k}"].mean(),
                         "acc at start": g[f"start_acc_c{k}"].mean(),
                         "after aggregation": g[f"aggregate_acc_c{k}"].mean(),
                         "after fine-tune": g[f"acc_c{k}"].mean()})
    return pd.DataFrame(rows).round(1)


def split_table(splits) -> pd.DataFrame:
    """Per N_S and method: final accuracy for each split seed (the labeled-set draw alone), their mean(std) and
    range (max - min)."""
    d = splits.assign(method=splits.label.str.split(" | ", regex=False).str[0])
    rows = []
    for (n, method), g in d.groupby(["num_supervised", "method"], sort=False):
        g = g.assign(split=g.label.str.rsplit(" ", n=1).str[-1].astype(int)).sort_values("split")
        v = g.final_acc
        rows.append({"N_S": n, "method": method, **{f"split {k}": round(a, 1) for k, a in zip(g.split, v)},
                     "mean(std)": mean_std(v), "range": round(v.max() - v.min(), 1) if len(v) > 1 else "n/a"})
    return _table(rows, ["N_S", "method", "mean(std)", "range"])
