"""One function per table that more than one notebook shows (Table 1, the gap closed, the paper's gap points), and the
cells they share: runs in, a DataFrame out, "mean (std) n=k" cells, the paper's numbers beside ours. A table one
notebook shows (Tables 2-5, Figure 2's, the scale study's and the diagnosis' tables) is built in that notebook."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ..methods import (FEDAVG_FIXMATCH, FEDAVG_SUPERVISED, FIXMATCH, FULLY_SUPERVISED, PARTIALLY_SUPERVISED,
                       SEMIFL)
from . import paper
from .configs import BASELINE_METHODS, BASELINES, label_of
from .paper import ABLATION_PARTITIONS, PARTITIONS
from .rule import Seeded

# Table 1's row for fedavg-supervised: the paper calls it HeteroFL (supervised FL with fully labeled clients).
HETEROFL_ROW = "HeteroFL (supervised FedAvg, every client labeled)"


def mean_std(values, unit: str = "") -> str:
    """'mean (std) n=k': population std over seeds, one decimal, a unit before n ('23.4 (9.3) % n=3'); one seed:
    'value (n=1)'; no values: 'not run'; only NaN (undefined, e.g. a gap closed when the gap is zero): 'n/a'."""
    v = np.asarray([x for x in values if x is not None], float)
    if len(v) == 0:
        return "not run"
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return "n/a"
    u = f" {unit}" if unit else ""
    return f"{v.mean():.1f}{u} (n=1)" if len(v) == 1 else f"{v.mean():.1f} ({v.std(ddof=0):.1f}){u} n={len(v)}"


def seed_values(df, metric: str = "final_acc", **match) -> Seeded:
    """`metric` of df's rows whose columns equal `match` (e.g. method=..., R=...) as a rule.Seeded; empty where none."""
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
    """rows: dicts with index columns, 'paper' and 'ours' -> the paper's column (named paper_label) beside ours."""
    out = pd.DataFrame(rows).assign(paper=lambda d: d.paper.map(paper_cell))
    return out.rename(columns={"paper": paper_label, "ours": ours_label})


def rows_frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
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
    """A paper's cell in our format, one decimal: '95.3(0.1)' -> '95.3 (0.1) n=4' (SemiFL's spread: a standard error
    over its four seeds), '85.34' -> '85.3 n=4', n=None -> 'n not given'; words after the number stay; None -> '-'."""
    if text is None or text != text:   # None or NaN
        return "-"
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(?:\((\d+(?:\.\d+)?)\))?(.*)$", str(text))
    if not m:
        return str(text)
    value, spread, rest = m.groups()
    cell = f"{float(value):.1f}" + (f" ({spread})" if spread else "") + (f" n={n}" if n else " n not given")
    return cell + (f" {rest.strip()}" if rest.strip() else "")


def table1(df, ds, n, methods=()) -> pd.DataFrame:
    """Table 1's rows we run, ours ('mean (std) n=k') at the best round (as the paper reports) and at the final round
    (what the claims judge) beside the paper's number (rows we do not run: notebooks/table1.py, table1_paper_only);
    `methods` (configs.check_methods) add rows (per partition if federated), their paper cells empty."""
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
    """The share of the Partially -> Fully Supervised gap SemiFL closes, in percent: the package's one unit for it."""
    return 100 * (semifl - partial) / (full - partial)


def left_out(methods, table: str, why: str) -> None:
    """One line under a table of the paper's methods only: the notebook's `methods` it leaves out, and why (if any)."""
    if methods:
        from ..methods import METHODS
        print(f"{table} leaves out {', '.join(METHODS[m].label for m in methods)}: {why}")


def gap_table(df, ds, n) -> pd.DataFrame:
    """Per partition: SemiFL, Partially and Fully Supervised (final, best round), the gap SemiFL closes seed by seed."""
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
    for part in ABLATION_PARTITIONS:
        pn = paper.PARTITION_NAMES[part]
        row[f"{pn}: {paper_label}"] = paper_cell(paper_by_partition[part])
        row[f"{pn}: this run"] = accuracy(df, ds, n, method, part)[1]
    return row
