"""Helpers the notebooks share, so that each notebook stays short: build configs per profile, run a set of labelled
configs over seeds (reusing complete runs), tidy the results, format "mean(std)", set the paper's numbers beside
ours, state claims, save figures."""
from __future__ import annotations

import math
import os
import platform
from pathlib import Path

import numpy as np
import pandas as pd

from . import paper
from .config import PROFILE_GRID, TRAIN_SIZE, Config, profile
from .results import load_metrics


# ---------------------------------------------------------------------- parameters
def seeds_of(seed=None, seeds=(0, 1, 2)) -> list[int]:
    """The seeds a notebook runs: [seed] when a single seed is given (`papermill ... -p seed 2`), else `seeds`."""
    return [int(seed)] if seed is not None else [int(s) for s in seeds]


def grid(profile_name: str, dataset=None) -> list[tuple[str, int]]:
    """(dataset, N_S) pairs to run: the profile's PROFILE_GRID, restricted to `dataset` (a name or a list) if given.
    A dataset outside the grid runs with the profile's default N_S."""
    pairs = PROFILE_GRID[profile_name]
    if dataset is None:
        return list(pairs)
    wanted = [dataset] if isinstance(dataset, str) else list(dataset)
    out = [p for p in pairs if p[0] in wanted]
    for ds in wanted:
        if not any(p[0] == ds for p in out):
            out.append((ds, profile(profile_name, ds).num_supervised))
    return out


def make(profile_name: str, dataset: str, num_supervised: int, rounds=None, **overrides) -> Config:
    """profile(profile_name, dataset, num_supervised=..., [rounds=...], **overrides)."""
    if rounds is not None:
        overrides["rounds"] = int(rounds)
    return profile(profile_name, dataset, num_supervised=num_supervised, **overrides)


def describe(profile_name: str, pairs, device: str = "auto", seeds=(0,), rounds=None) -> str:
    """One line: which profile, data, device and seeds this notebook uses."""
    from .run import pick_device
    dev = pick_device(device)
    cfg = make(profile_name, pairs[0][0], pairs[0][1], rounds)
    data = ", ".join(f"{paper.DATASET_NAMES.get(d, d)} N_S={n}" for d, n in pairs)
    return (f"profile={profile_name!r} | data: {data} | model={cfg.model}, M={cfg.num_clients}, C={cfg.active_rate}, "
            f"T={cfg.rounds}, E={cfg.local_epochs} | device: {dev} ({platform.processor() or platform.machine()}) "
            f"| seeds: {list(seeds)}")


# ---------------------------------------------------------------------- running
REPO = Path(__file__).resolve().parents[1]


def repo_path(name: str, given=None) -> Path:
    """`given` if set, else <repository>/name: the committed results/ and figures/ (or ./name outside a checkout), so
    a notebook reads and writes the same folders whether it runs from the repository root or from notebooks/."""
    if given is not None:
        return Path(given)
    return REPO / name if (REPO / "pyproject.toml").exists() else Path.cwd() / name


def shown(path) -> str:
    """A path as notebooks print it: relative to the repository when inside it (no machine-specific prefix)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def no_train() -> bool:
    """SEMIFL_NO_TRAIN=1: render from the results store only; runs not in it are left out (and said so), not
    trained. CI renders the committed notebooks this way."""
    return os.environ.get("SEMIFL_NO_TRAIN", "0") not in ("", "0")


COLUMNS = ["label", "seed", "algorithm", "dataset", "num_supervised", "partition", "finetune", "global_pseudo_labels",
           "mix_loss", "local_epochs", "global_momentum", "sbn_source", "rounds", "model", "final_acc", "best_acc",
           "best_round", "wall_time_s", "reused", "path"]


def _row(label, cfg, s) -> dict:
    return {"label": label, "seed": cfg.seed, "algorithm": cfg.algorithm, "dataset": cfg.dataset,
            "num_supervised": cfg.num_supervised, "partition": cfg.partition, "finetune": cfg.finetune,
            "global_pseudo_labels": cfg.global_pseudo_labels, "mix_loss": cfg.mix_loss,
            "local_epochs": cfg.local_epochs, "global_momentum": cfg.global_momentum, "sbn_source": cfg.sbn_source,
            "rounds": cfg.rounds, "model": cfg.model, "final_acc": s["final_acc"], "best_acc": s["best_acc"],
            "best_round": s["best_round"], "wall_time_s": s["wall_time_s"], "reused": s["reused"], "path": s["path"]}


def _worker_init():
    import torch
    torch.set_num_threads(1)   # two 1-thread processes beat one 2-thread process on a CPU (BENCHMARKS.md)


def _train(cfg, results_dir, device, data_root) -> dict:
    from .run import run
    return run(cfg, results_dir, device=device, data_root=data_root, progress=False)


def workers_for(device: str, jobs: int) -> int:
    """Parallel training processes: one per CPU core (each with one thread) on a CPU, one on a GPU."""
    from .run import pick_device
    if pick_device(device).type != "cpu":
        return 1
    return max(1, min(os.cpu_count() or 1, jobs))


def run_all(configs: dict, seeds, results_dir=None, device="auto", data_root=None, workers=None) -> pd.DataFrame:
    """Run every {label: Config} for every seed with one progress bar: complete runs are reused, the rest train in
    `workers` processes (default: workers_for(device)), each resuming from its checkpoint if it has one.
    Returns a tidy DataFrame: one row per (label, seed) with the config's main fields and the run summary.
    With SEMIFL_NO_TRAIN set (no_train()), runs not in the store are left out, with a printed line naming them."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from tqdm import tqdm  # text bars: they render in committed notebooks (no widgets needed)

    from .results import open_run
    results_dir = repo_path("results", results_dir)
    jobs = [(label, cfg.replace(seed=s)) for label, cfg in configs.items() for s in seeds]
    done, todo = {}, []
    for i, (label, cfg) in enumerate(jobs):
        info = open_run(results_dir, cfg)
        if info.state == "complete":
            done[i] = {**info.summary, "path": str(info.path), "reused": True}
        else:
            todo.append(i)
    if todo and no_train():
        left = [f"{jobs[i][0]} (seed {jobs[i][1].seed})" for i in todo]
        print(f"SEMIFL_NO_TRAIN is set: {len(todo)} of {len(jobs)} runs are not in {shown(results_dir)} and are left "
              f"out of everything below: {'; '.join(left[:6])}{'; ...' if len(left) > 6 else ''}")
        jobs = [job for i, job in enumerate(jobs) if i in done]
        done, todo = {k: done[i] for k, i in enumerate(sorted(done))}, []
    n = workers or workers_for(device, len(todo))
    with tqdm(total=len(jobs), initial=len(done), desc=f"runs ({len(todo)} to train, {n} at a time)") as bar:
        if n == 1:
            for i in todo:
                done[i] = _train(jobs[i][1], results_dir, device, data_root)
                bar.update()
        elif todo:
            with ProcessPoolExecutor(n, mp_context=get_context("spawn"), initializer=_worker_init) as pool:
                futures = {pool.submit(_train, jobs[i][1], results_dir, device, data_root): i for i in todo}
                for f in as_completed(futures):
                    done[futures[f]] = f.result()
                    bar.update()
    return pd.DataFrame([_row(label, cfg, done[i]) for i, (label, cfg) in enumerate(jobs)], columns=COLUMNS)


def runs_summary(df: pd.DataFrame) -> str:
    """'N runs: k new, m reused'."""
    return f"{len(df)} runs: {int((~df.reused).sum())} new, {int(df.reused.sum())} reused from the results store"


def curves(df: pd.DataFrame,
           keep=("label", "method", "seed", "partition", "dataset", "num_supervised", "algorithm")) -> pd.DataFrame:
    """Per-round metrics of every run in df (run_all's output), with df's identifying columns (those of `keep` it
    has) added."""
    parts = []
    for _, row in df.iterrows():
        m = load_metrics(row.path)
        for k in keep:
            if k in row:
                m[k] = row[k]
        parts.append(m)
    if not parts:   # no runs: an empty frame with the columns a caller selects on
        return pd.DataFrame(columns=["round", "test_acc", *(k for k in keep if k in df.columns)])
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------------- numbers
def mean_std(values) -> str:
    """'mean (std) n=k' with the population std over seeds, one decimal; one seed: 'value (n=1)' (no spread); no
    values: 'not run'; only NaN (undefined, e.g. a gap closed when the gap is zero): 'n/a'."""
    v = np.asarray([x for x in values if x is not None], float)
    if len(v) == 0:
        return "not run"
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return "n/a"
    return f"{v.mean():.1f} (n=1)" if len(v) == 1 else f"{v.mean():.1f} ({v.std(ddof=0):.1f}) n={len(v)}"


def side_by_side(rows: list[dict], paper_label: str, ours_label: str = "this run") -> pd.DataFrame:
    """rows: dicts with index columns plus 'paper' and 'ours' -> DataFrame with the paper's column (named
    paper_label, e.g. 'paper (CIFAR-10, N_S=250)') next to 'this run'."""
    out = pd.DataFrame(rows).rename(columns={"paper": paper_label, "ours": ours_label})
    return out.fillna({paper_label: "-"})


# ---------------------------------------------------------------------- claims
RULE = ("A claim 'A above B' is held when A's mean exceeds B's by more than the two seed spreads (population std "
        "over seeds) together, not held when B's exceeds A's by that much, and within noise otherwise; with one "
        "seed there is no spread, so one seed gives no verdict; a claim whose runs are not in the results store "
        "yet is 'not run'.")


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


def claims(items: list) -> pd.DataFrame:
    """items: (claim, verdict, evidence); a verdict is a RULE string, or a bool for exact claims (yes / no)."""
    rows = [{"claim": c, "held": ("yes" if h else "no") if isinstance(h, (bool, np.bool_)) else h, "evidence": e}
            for c, h, e in items]
    return pd.DataFrame(rows, columns=["claim", "held", "evidence"])


# ---------------------------------------------------------------------- figures
def save_figure(fig, figures_dir, name: str) -> list[str]:
    """Save a matplotlib/seaborn figure as figures_dir/name.png and .pdf (figures_dir None: the repository's
    figures/); returns the two paths."""
    if fig is None:
        return [f"{name}: no figure (no runs to draw)"]
    d = repo_path("figures", figures_dir)
    d.mkdir(parents=True, exist_ok=True)
    fig = getattr(fig, "figure", fig)   # accepts a seaborn FacetGrid
    paths = []
    for ext in ("png", "pdf"):
        p = d / f"{name}.{ext}"
        fig.savefig(p, bbox_inches="tight", dpi=150 if ext == "png" else None)
        paths.append(shown(p))
    return paths


def lineplot_grid(data: pd.DataFrame, y: str, hue: str, col: str, row=None, x: str = "round", ylabel=None,
                  title=None, height: float = 3.2):
    """seaborn relplot of y over rounds, one panel per col (and row), one line per hue, mean and a band of +-1
    std over seeds (seaborn shows no band when there is one seed). None when there is nothing to draw."""
    import seaborn as sns
    d = data.dropna(subset=[y])
    if d.empty:
        return None   # nothing to draw (no runs in the results store): save_figure says so
    g = sns.relplot(data=d, x=x, y=y, hue=hue, col=col, row=row, kind="line", errorbar="sd", height=height,
                    aspect=1.25, facet_kws=dict(sharey=False))
    g.set_axis_labels(x, ylabel or y)
    if title:
        g.figure.suptitle(title, y=1.03)
    return g


# ====================================================================== the paper's items
# Configs are built here once, so that notebooks share runs (same config -> same run directory -> reused).
P = paper.PARTITIONS
ABLATION_PARTITIONS = ("non-iid-l-2", "iid")
BASELINES = ("Fully Supervised", "Partially Supervised")   # centralized: one run serves every partition
TABLE2_VARIANTS = {(False, False): "FedAvg + FixMatch", (False, True): "SemiFL: global pseudo-labels only",
                   (True, False): "SemiFL: fine-tune only", (True, True): "SemiFL (fine-tune + global)"}


def baseline_configs(p, ds, n, rounds=None) -> dict:
    return {"Fully Supervised": make(p, ds, n, rounds, algorithm="fully-supervised"),
            "Partially Supervised": make(p, ds, n, rounds, algorithm="partially-supervised")}


def table1_configs(p, ds, n, rounds=None) -> dict:
    cfgs = baseline_configs(p, ds, n, rounds)
    for part in P:
        cfgs[f"SemiFL | {part}"] = make(p, ds, n, rounds, partition=part)
        cfgs[f"FedAvg + FixMatch | {part}"] = make(p, ds, n, rounds, partition=part, algorithm="fedavg-fixmatch")
        cfgs[f"FedAvg supervised (HeteroFL) | {part}"] = make(p, ds, n, rounds, partition=part,
                                                             algorithm="fedavg-supervised")
    return cfgs


def table2_configs(p, ds, n, rounds=None) -> dict:
    cfgs = baseline_configs(p, ds, n, rounds)
    for part in ABLATION_PARTITIONS:
        for (ft, gl), name in TABLE2_VARIANTS.items():
            if (ft, gl) == (False, False):
                cfgs[f"{name} | {part}"] = make(p, ds, n, rounds, partition=part, algorithm="fedavg-fixmatch")
            else:
                cfgs[f"{name} | {part}"] = make(p, ds, n, rounds, partition=part, finetune=ft,
                                                global_pseudo_labels=gl)
    return cfgs


def table3_configs(p, ds, n, rounds=None) -> dict:
    return {f"sBN {src} | {part}": make(p, ds, n, rounds, partition=part, sbn_source=src)
            for part in ABLATION_PARTITIONS for src in ("server", "all")}


def table5_rows(p, ds, n) -> list[tuple]:
    """(E, beta_g, mixup) rows of Table 5 at this profile: the paper's E=1 vs 5 becomes E/5 vs the profile's E."""
    base = make(p, ds, n)
    e, bg = base.local_epochs, base.global_momentum
    return [(e / 5, bg, True), (e, bg, False), (e, 0.0, True), (e, bg, True)]


def table5_configs(p, ds, n, rounds=None) -> dict:
    return {f"E={e:g}, beta_g={bg:g}, mixup={'yes' if mx else 'no'} | {part}":
            make(p, ds, n, rounds, partition=part, local_epochs=e, global_momentum=bg, mix_loss=mx)
            for part in ABLATION_PARTITIONS for e, bg, mx in table5_rows(p, ds, n)}


def figure2_configs(p, ds, n, rounds=None) -> dict:
    cfgs = baseline_configs(p, ds, n, rounds)
    e = make(p, ds, n).local_epochs
    for part in ABLATION_PARTITIONS:
        cfgs[f"FedAvg + FixMatch, 1 local step | {part}"] = make(p, ds, n, rounds, partition=part,
                                                                algorithm="fedavg-fixmatch", local_epochs=1e-9)
        cfgs[f"FedAvg + FixMatch, E={e:g} | {part}"] = make(p, ds, n, rounds, partition=part,
                                                           algorithm="fedavg-fixmatch")
    return cfgs


def run_pairs(builder, p, pairs, seeds, results_dir, device="auto", rounds=None) -> pd.DataFrame:
    """run_all(builder(p, ds, n, rounds)) for every (dataset, N_S) pair, concatenated; adds 'method' (the label
    without its partition) and 'pair'."""
    dfs = [run_all(builder(p, ds, n, rounds), seeds, results_dir, device) for ds, n in pairs]
    df = pd.concat(dfs, ignore_index=True)
    df["method"] = df.label.str.split(" | ", regex=False).str[0]
    df["pair"] = [f"{paper.DATASET_NAMES.get(d, d)}, N_S={n}" for d, n in zip(df.dataset, df.num_supervised)]
    return df


def _table(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """DataFrame(rows); with no rows (no runs), an empty frame that still has the columns callers select on."""
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


def _sel(df, ds, n, **where):
    sel = df[(df.dataset == ds) & (df.num_supervised == n)]
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel


def _acc(df, ds, n, method, part=None, metric="best_acc"):
    """(mean, 'mean (std) n=k', per-seed values in seed order) of one method's runs."""
    sel = _sel(df, ds, n, method=method)
    if part is not None and method not in BASELINES:
        sel = sel[sel.partition == part]
    v = sel.sort_values("seed")[metric].to_numpy(float)
    return float(v.mean()) if len(v) else math.nan, mean_std(v), v


def _prefix(pairs, ds, n):
    return f"[{paper.DATASET_NAMES.get(ds, ds)}, N_S={n}] " if len(pairs) > 1 else ""


# ---------------------------------------------------------------------- Table 1
def table1(df, ds, n) -> pd.DataFrame:
    pds, pn = paper.paper_column_for(ds, n)
    rows = [{"group": "Baseline", "method": m, "paper": paper.table1(m, None, pds, pn), "ours": _acc(df, ds, n, m)[1]}
            for m in BASELINES]
    rows += [{"group": "SSL (centralized; paper only, not run)", "method": m, "paper": paper.table1(m, None, pds, pn),
              "ours": "not run"} for m in paper.TABLE1_SSL]
    for part in P:
        g = paper.PARTITION_NAMES[part]
        rows.append({"group": g, "method": "HeteroFL (= fedavg-supervised, fully labeled clients)",
                     "paper": paper.table1("HeteroFL", part, pds, pn),
                     "ours": _acc(df, ds, n, "FedAvg supervised (HeteroFL)", part)[1]})
        for m in ("FedMatch", "FedRGD"):
            rows.append({"group": g, "method": f"{m} (paper only, not run)", "paper": paper.table1(m, part, pds, pn),
                         "ours": "not run"})
        rows.append({"group": g, "method": "FedAvg + FixMatch", "paper": None,
                     "ours": _acc(df, ds, n, "FedAvg + FixMatch", part)[1]})
        rows.append({"group": g, "method": "SemiFL", "paper": paper.table1("SemiFL", part, pds, pn),
                     "ours": _acc(df, ds, n, "SemiFL", part)[1]})
    return side_by_side(rows, paper.label(pds, pn), f"this run ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n})")


def table1_claims(df, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        acc = lambda m, p=None: _acc(df, ds, n, m, p)
        semi, fix, het = ({p: acc(m, p) for p in P} for m in ("SemiFL", "FedAvg + FixMatch",
                                                             "FedAvg supervised (HeteroFL)"))
        part, full = acc("Partially Supervised"), acc("Fully Supervised")
        ev = lambda d: ", ".join(f"{k}: {v[1]}" for k, v in d.items())
        items += [
            (pre + "SemiFL beats Partially Supervised under every partition",
             every(above(semi[p][2], part[2]) for p in P), f"SemiFL {ev(semi)}; Partially Supervised {part[1]}"),
            (pre + "SemiFL beats FedAvg + FixMatch (vanilla SSFL) under every partition",
             every(above(semi[p][2], fix[p][2]) for p in P), f"SemiFL {ev(semi)}; FedAvg+FixMatch {ev(fix)}"),
            (pre + "FedAvg + FixMatch stays below Partially Supervised under every partition",
             every(above(part[2], fix[p][2]) for p in P), f"FedAvg+FixMatch {ev(fix)}; Partially Supervised {part[1]}"),
            (pre + "Fully Supervised stays above SemiFL under every partition",
             every(above(full[2], semi[p][2]) for p in P), f"Fully Supervised {full[1]}; SemiFL {ev(semi)}"),
            (pre + "SemiFL beats supervised FL (HeteroFL row) under Non-IID, K=2",
             above(semi["non-iid-l-2"][2], het["non-iid-l-2"][2]),
             f"SemiFL {semi['non-iid-l-2'][1]} vs fedavg-supervised {het['non-iid-l-2'][1]}"),
            (pre + "SemiFL degrades with label skew: IID above Non-IID K=2",
             above(semi["iid"][2], semi["non-iid-l-2"][2]), f"SemiFL {ev(semi)}"),
        ]
    return claims(items)


def gap_table(df, ds, n) -> pd.DataFrame:
    """Per partition: SemiFL, Partially and Fully Supervised (final round and best round), and the fraction of the
    Partially -> Fully Supervised gap that SemiFL closes, computed seed by seed (the same seed's baselines)."""
    rows = []
    for part in P:
        row = {"partition": paper.PARTITION_NAMES[part]}
        for metric, name in (("final_acc", "final round"), ("best_acc", "best round")):
            by_seed = {m: _sel(df, ds, n, method=m, **({} if m in BASELINES else {"partition": part}))
                       .set_index("seed")[metric] for m in ("SemiFL", "Partially Supervised", "Fully Supervised")}
            semi, psl, fsl = pd.concat(by_seed, axis=1, join="inner").to_numpy(float).T   # seeds all three have
            row[f"SemiFL, {name}"] = mean_std(by_seed["SemiFL"])
            row[f"SemiFL - Partially, {name}"] = mean_std(semi - psl)
            row[f"gap closed (%), {name}"] = mean_std(100 * gap_closed(semi, psl, fsl))
        pds, pn = paper.paper_column_for(ds, n)
        paper_closed = paper_gap_points().query("partition == @part and num_supervised == @pn")
        paper_closed = paper_closed[paper_closed.dataset == paper.DATASET_NAMES[pds]]
        row[f"gap closed (%), {paper.label(pds, pn)}"] = f"{100 * paper_closed.closed.iloc[0]:.0f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _ablation_columns(row: dict, paper_by_partition: dict, paper_label: str, df, ds, n, method) -> dict:
    """Adds, per ablation partition, the paper's value and ours ("mean (std) n=k") side by side to row."""
    for part in ABLATION_PARTITIONS:
        pn = paper.PARTITION_NAMES[part]
        row[f"{pn}: {paper_label}"] = paper_by_partition[part]
        row[f"{pn}: this run"] = _acc(df, ds, n, method, part)[1]
    return row


# ---------------------------------------------------------------------- Table 2 / Figure 6
def table2(df, ds, n) -> pd.DataFrame:
    pl = paper.label(*paper.TABLE2_DATASET)
    rows = []
    for key in [*BASELINES, *TABLE2_VARIANTS]:
        name = key if isinstance(key, str) else TABLE2_VARIANTS[key]
        row = {"method": name, "fine-tune": "N/A" if isinstance(key, str) else ("yes" if key[0] else "no"),
               "global pseudo-labels": "N/A" if isinstance(key, str) else ("yes" if key[1] else "no")}
        rows.append(_ablation_columns(row, paper.TABLE2[key], pl, df, ds, n, name))
    return pd.DataFrame(rows)


def table2_claims(df, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = _acc(df, ds, n, "Partially Supervised")
        for p in ABLATION_PARTITIONS:
            a = {k: _acc(df, ds, n, v, p) for k, v in TABLE2_VARIANTS.items()}
            ev = "; ".join(f"ft={'y' if k[0] else 'n'}/gl={'y' if k[1] else 'n'}: {v[1]}" for k, v in a.items())
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: fine-tune + global pseudo-labels is the best of the four combinations",
                 every(above(a[(True, True)][2], a[k][2]) for k in TABLE2_VARIANTS if k != (True, True)), ev),
                (pre + f"{pn}: fine-tuning alone beats global pseudo-labels alone",
                 above(a[(True, False)][2], a[(False, True)][2]), ev),
                (pre + f"{pn}: full SemiFL beats Partially Supervised", above(a[(True, True)][2], part[2]),
                 f"SemiFL {a[(True, True)][1]} vs Partially Supervised {part[1]}"),
                (pre + f"{pn}: FedAvg + FixMatch falls below Partially Supervised", above(part[2], a[(False, False)][2]),
                 f"FedAvg+FixMatch {a[(False, False)][1]} vs Partially Supervised {part[1]}"),
            ]
    return claims(items)


PSEUDO_METRICS = {"pseudo_acc": "Pseudo Accuracy", "threshold_acc": "Threshold Accuracy", "label_ratio": "Label Ratio"}


def pseudo_label_curves(df) -> pd.DataFrame:
    """Long per-round pseudo-label quality of the Table 2 variants (no baselines)."""
    runs = df[df.method.isin(list(TABLE2_VARIANTS.values()))]
    c = curves(runs)
    long = c.melt(id_vars=["round", "method", "seed", "partition", "dataset", "num_supervised"],
                  value_vars=[m for m in PSEUDO_METRICS if m in c.columns], var_name="metric", value_name="value")
    long["metric"] = long.metric.map(PSEUDO_METRICS)
    return long.dropna(subset=["value"])


def figure6_claims(long, pairs) -> pd.DataFrame:
    """Pseudo-label quality of full SemiFL against each other Table 2 variant, per seed averaged over the second half
    of the rounds."""
    items = []
    best = TABLE2_VARIANTS[(True, True)]
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        for part in ABLATION_PARTITIONS:
            for metric in ("Pseudo Accuracy", "Threshold Accuracy"):
                d = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)
                         & (long.metric == metric)]
                claim = pre + f"{paper.PARTITION_NAMES[part]}: {metric} (second half of rounds) is highest with " \
                              f"fine-tune + global"
                ran = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)]
                if best not in set(ran.method):
                    items.append((claim, "not run", "full SemiFL's runs are not in the results store"))
                    continue
                if best not in set(d.method):
                    items.append((claim, False, "never defined: no pseudo-label passed the threshold in any round"))
                    continue
                late = d[d["round"] > d["round"].max() / 2].groupby(["method", "seed"]).value.mean()
                per = {m: late[m].to_numpy() for m in late.index.get_level_values(0).unique()}
                items.append((claim, every(above(per[best], v) for m, v in per.items() if m != best),
                              "; ".join(f"{m}: {mean_std(v)}" for m, v in per.items())))
    return claims(items)


# ---------------------------------------------------------------------- Table 3
def table3(df, ds, n) -> pd.DataFrame:
    pds, pn_ = paper.paper_column_for(ds, n)
    pl = paper.label(pds, pn_)
    rows = []
    for src, name in (("server", "server only"), ("all", "server and clients")):
        row = {"sBN statistics": name}
        for part in ABLATION_PARTITIONS:
            pn = paper.PARTITION_NAMES[part]
            row[f"{pn}: {pl}"] = paper.TABLE3[src].get((pn_, part), "-")
            row[f"{pn}: this run"] = mean_std(_sel(df, ds, n, sbn_source=src, partition=part).best_acc)
        rows.append(row)
    return pd.DataFrame(rows)


def table3_claims(df, pairs) -> pd.DataFrame:
    """The paper: sBN statistics from the server only are about as good as from server and clients."""
    items = []
    for ds, n in pairs:
        for part in ABLATION_PARTITIONS:
            s = _sel(df, ds, n, sbn_source="server", partition=part).sort_values("seed").best_acc
            a = _sel(df, ds, n, sbn_source="all", partition=part).sort_values("seed").best_acc
            v = above(a, s)
            items.append((_prefix(pairs, ds, n) + f"{paper.PARTITION_NAMES[part]}: sBN statistics from the server only "
                          "are not worse than from server and clients",
                          {"within noise": "held", "not held": "held", "held": "not held"}.get(v, v),
                          f"server {mean_std(s)} vs all {mean_std(a)}"))
    return claims(items)


# ---------------------------------------------------------------------- Table 5 / Figure 9
def table5(df, p, ds, n) -> pd.DataFrame:
    pl = paper.label(*paper.TABLE5_DATASET)
    rows = []
    for (e, bg, mx), key in zip(table5_rows(p, ds, n), paper.TABLE5):
        label = f"E={e:g}, beta_g={bg:g}, mixup={'yes' if mx else 'no'}"
        row = {"E (paper)": key[0], "E (this run)": e, "beta_g": bg, "mixup": "yes" if mx else "no"}
        rows.append(_ablation_columns(row, paper.TABLE5[key], pl, df, ds, n, label))
    return pd.DataFrame(rows)


def table5_claims(df, p, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        labels = [f"E={e:g}, beta_g={bg:g}, mixup={'yes' if mx else 'no'}" for e, bg, mx in table5_rows(p, ds, n)]
        low_e, no_mix, no_mom, full = labels
        for part in ABLATION_PARTITIONS:
            a = {l: _acc(df, ds, n, l, part) for l in labels}
            pn = paper.PARTITION_NAMES[part]
            items += [
                (pre + f"{pn}: fewer local epochs hurt ({low_e} below {full})", above(a[full][2], a[low_e][2]),
                 f"{a[low_e][1]} vs {a[full][1]}"),
                (pre + f"{pn}: the mix loss helps ({full} above {no_mix})", above(a[full][2], a[no_mix][2]),
                 f"{a[full][1]} vs {a[no_mix][1]}"),
                (pre + f"{pn}: global momentum helps ({full} above beta_g=0)", above(a[full][2], a[no_mom][2]),
                 f"{a[full][1]} vs {a[no_mom][1]}"),
            ]
    return claims(items)


# ---------------------------------------------------------------------- Figure 2
def figure2_claims(df, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = _acc(df, ds, n, "Partially Supervised")
        one = next((m for m in df.method.unique() if "1 local step" in m), "FedAvg + FixMatch, 1 local step")
        many = next((m for m in df.method.unique() if m.startswith("FedAvg + FixMatch, E=")), "FedAvg + FixMatch, E")
        e_name = many.split(", ", 1)[1]
        for p in ABLATION_PARTITIONS:
            a1, ae = _acc(df, ds, n, one, p), _acc(df, ds, n, many, p)
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: FedAvg + FixMatch with multiple local epochs falls below Partially Supervised",
                 above(part[2], ae[2]), f"{many}: {ae[1]}; Partially Supervised {part[1]}"),
                (pre + f"{pn}: FedAvg + FixMatch works better with one local step per round than with {e_name}",
                 above(a1[2], ae[2]), f"1 step: {a1[1]}; {e_name}: {ae[1]}"),
            ]
    return claims(items)


def with_baselines(c: pd.DataFrame, partitions) -> pd.DataFrame:
    """Copy the centralized baselines' curves into every partition panel."""
    is_base = c.method.isin(BASELINES)
    base, fed = c[is_base], c[~is_base]
    return pd.concat([fed] + [base.assign(partition=p) for p in partitions], ignore_index=True)


# ---------------------------------------------------------------------- learning curves (Figures 5, 7, 8)
def learning_curve_claims(df, c, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = _acc(df, ds, n, "Partially Supervised", metric="final_acc")
        for p in P:
            d = c[(c.dataset == ds) & (c.num_supervised == n) & (c.method == "SemiFL") & (c.partition == p)]
            d = d.dropna(subset=["test_acc"]).sort_values("seed")
            first, last = (d[d["round"] == d["round"].agg(f)].test_acc.to_numpy() for f in ("min", "max"))
            final = _acc(df, ds, n, "SemiFL", p, metric="final_acc")
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: SemiFL's accuracy rises over training (last round above first)", above(last, first),
                 f"first round {mean_std(first)} -> last round {mean_std(last)}" if len(d) else "no evaluations"),
                (pre + f"{pn}: SemiFL ends above Partially Supervised (final round)", above(final[2], part[2]),
                 f"{final[1]} vs {part[1]}"),
            ]
    return claims(items)


# ---------------------------------------------------------------------- Table 4
ARCH = {"wrn28x2": "WResNet28x2", "wrn28x8": "WResNet28x8", "cnn": "CNN"}
TABLE4_FIELDS = [("Architecture", "model"), ("Server batch size", "server_batch"), ("Server epoch", "server_epochs"),
                 ("Client batch size", "client_batch"), ("Client epoch", "local_epochs"), ("Learning rate", "lr"),
                 ("Weight decay", "weight_decay"), ("Momentum", "momentum"), ("Nesterov", "nesterov"),
                 ("Communication rounds", "rounds"), ("Global momentum", "global_momentum"),
                 ("Clients M", "num_clients"), ("Active rate C", "active_rate"), ("Threshold tau", "threshold"),
                 ("Mixup a", "mixup_alpha")]


def _paper_table4(ds, n, fld):
    if fld == "model":
        return paper.TABLE4_ARCH.get(ds, "-")
    if fld == "server_batch":
        return paper.TABLE4_SERVER_BATCH.get((ds, n), "-")
    return paper.TABLE4_COMMON[fld]


def _profile_table4(cfg, fld):
    v = getattr(cfg, fld)
    return ARCH.get(v, v) if fld == "model" else v


def _same(a, b) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def table4(pairs, profile_name="paper") -> pd.DataFrame:
    rows = []
    for name, fld in TABLE4_FIELDS:
        row = {"hyperparameter": name}
        for ds, n in pairs:
            v = _profile_table4(profile(profile_name, ds, num_supervised=n), fld)
            col = f"{paper.DATASET_NAMES.get(ds, ds)}, N_S={n}"
            row[f"{col}: paper"] = _paper_table4(ds, n, fld)
            row[f"{col}: profile('{profile_name}')"] = v
        rows.append(row)
    rows.append({"hyperparameter": "Optimizer / scheduler", **{
        c: ("SGD / Cosine Annealing" if c.endswith("paper") else "SGD / cosine (fixed in code)")
        for c in rows[0] if c != "hyperparameter"}})
    return pd.DataFrame(rows)


def table4_claims(pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        cfg = profile("paper", ds, num_supervised=n)
        diffs = []
        for name, fld in TABLE4_FIELDS:
            v = _profile_table4(cfg, fld)
            if not _same(v, _paper_table4(ds, n, fld)):
                diffs.append(f"{name}: {v} vs paper {_paper_table4(ds, n, fld)}")
        items.append((f"profile('paper') for {paper.DATASET_NAMES.get(ds, ds)}, N_S={n} has Table 4's hyperparameters",
                      not diffs, "; ".join(diffs) or f"all {len(TABLE4_FIELDS)} values match"))
    return claims(items)


def profile_differences(profile_name, ds, n) -> pd.DataFrame:
    """Fields where profile(profile_name) differs from profile('paper') (for CIFAR-10 at the paper's N_S)."""
    a = profile("paper", "cifar10", num_supervised=250).to_dict()
    b = profile(profile_name, ds, num_supervised=n).to_dict()
    return pd.DataFrame([{"field": k, "paper profile (CIFAR-10, N_S=250)": a[k], f"profile('{profile_name}')": b[k]}
                         for k in a if a[k] != b[k]])


# ====================================================================== sizing, scale study, diagnosis
# Fully Supervised trained for 5, 10 and 20 epochs with the profile's recipe (batch 10): the rule takes the shortest
# within 0.5 points of the next. The old recipe (batch 250, which is not faster per epoch on a CPU) is shown beside.
FSL_SIZING_EPOCHS = {"small": (5, 10, 20), "paper": (5, 10, 20), "smoke": (1, 2)}
FSL_OLD_RECIPE = {"small": (250, (10, 20, 40))}
SCALE_NS = (40, 100, 250, 1000)


def fsl_sizing_configs(p, ds) -> dict:
    base = make(p, ds, profile(p, ds).num_supervised, algorithm="fully-supervised")
    out = {f"batch {base.server_batch}, {e} epochs": base.replace(rounds=e) for e in FSL_SIZING_EPOCHS[p]}
    if p in FSL_OLD_RECIPE:
        batch, lengths = FSL_OLD_RECIPE[p]
        out.update({f"batch {batch}, {e} epochs": base.replace(rounds=e, server_batch=batch) for e in lengths})
    return out


def gap_closed(semifl, partial, full) -> float:
    """The fraction of the Partially -> Fully Supervised gap that SemiFL closes (1 = all of it)."""
    return (semifl - partial) / (full - partial)


def scale_configs(p, ds, n, rounds=None) -> dict:
    """SemiFL and its supervised references, varying one factor at a time around the profile (N_S, client E,
    rounds, model). Labels are 'factor=value | method'. Partially Supervised reads N_S, the rounds and the model;
    Fully Supervised (the whole training set, its own length) only the model."""
    cfg = make(p, ds, n, rounds)
    points = [("N_S", m, dict(num_supervised=m)) for m in SCALE_NS]
    points += [("E", 1.0, dict(local_epochs=1.0)), ("rounds", 5 * cfg.rounds, dict(rounds=5 * cfg.rounds)),
               ("model", "cnn-w2", dict(model="cnn-w2"))]
    out = {}
    for factor, value, over in points:
        semifl = cfg.replace(**over)
        key = f"{factor}={value}"
        out[f"{key} | SemiFL"] = semifl
        out[f"{key} | Partially Supervised"] = make(p, ds, semifl.num_supervised, semifl.rounds, model=semifl.model,
                                                    algorithm="partially-supervised")
        out[f"{key} | Fully Supervised"] = make(p, ds, n, rounds, model=semifl.model, algorithm="fully-supervised")
    return out


def scale_points(df) -> pd.DataFrame:
    """One row per (point, seed): SemiFL, Partially and Fully Supervised final accuracy, the gain SemiFL - Partially
    Supervised and the fraction of the gap closed."""
    d = df.assign(point=df.label.str.split(" | ", regex=False).str[0],
                  method=df.label.str.split(" | ", regex=False).str[1])
    wide = d.pivot_table(index=["point", "seed"], columns="method", values="final_acc", sort=False)
    wide = wide.reindex(columns=["SemiFL", "Partially Supervised", "Fully Supervised"]).reset_index()   # a method not run: NaN
    wide["gain"] = wide["SemiFL"] - wide["Partially Supervised"]
    wide["closed"] = gap_closed(wide["SemiFL"], wide["Partially Supervised"], wide["Fully Supervised"])
    return wide


def scale_table(df) -> pd.DataFrame:
    """Per point: SemiFL, Partially and Fully Supervised (final round, mean(std) over seeds, n), the gain
    SemiFL - Partially Supervised and the fraction of the gap closed (computed seed by seed), with the verdict of
    SemiFL against Partially Supervised by RULE. n counts the SemiFL runs in the store."""
    rows = []
    for point, g in scale_points(df).groupby("point", sort=False):
        v = {k: g[k].dropna().to_numpy() for k in ("SemiFL", "Partially Supervised", "Fully Supervised", "gain",
                                                   "closed")}   # NaN: that method's run is not in the store
        rows.append({"point": point, "n": len(v["SemiFL"]), "Fully Supervised": mean_std(v["Fully Supervised"]),
                     "Partially Supervised": mean_std(v["Partially Supervised"]), "SemiFL": mean_std(v["SemiFL"]),
                     "SemiFL - Partially": mean_std(v["gain"]), "gap closed (%)": mean_std(100 * v["closed"]),
                     "gain": verdict(v["SemiFL"], v["Partially Supervised"]),
                     "_gain": v["gain"], "_closed": v["closed"], "_semi": v["SemiFL"], "_psl": v["Partially Supervised"]})
    return _table(rows, ["point", "n", "SemiFL - Partially", "gap closed (%)", "_gain", "_closed", "_semi", "_psl"])


def paper_gap_points() -> pd.DataFrame:
    """The paper's Table 1 as (dataset, N_S, partition, gain, fraction of the gap closed), means as printed."""
    rows = []
    for ds, n in paper.TABLE1_COLUMNS:
        full = paper.value(paper.table1("Fully Supervised", None, ds, n))
        part = paper.value(paper.table1("Partially Supervised", None, ds, n))
        for p in paper.PARTITIONS:
            semi = paper.value(paper.table1("SemiFL", p, ds, n))
            rows.append({"dataset": paper.DATASET_NAMES[ds], "num_supervised": n, "partition": p,
                         "gain": semi - part, "closed": gap_closed(semi, part, full)})
    return pd.DataFrame(rows)


def scale_figure(table, cfg):
    """Left: our gain SemiFL - Partially Supervised per point (mean and seed std). Right: the fraction of the gap
    closed, ours per point and the paper's per (dataset, N_S) under IID and Non-IID K=2."""
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw=dict(width_ratios=[1, 1.4]))
    x = np.arange(len(table))
    for ax, col, scale in ((a, "_gain", 1), (b, "_closed", 100)):
        ax.errorbar(x, [scale * v.mean() if len(v) else np.nan for v in table[col]],
                    yerr=[scale * v.std() if len(v) else np.nan for v in table[col]], fmt="o",
                    capsize=3, label=f"ours ({paper.DATASET_NAMES.get(cfg.dataset, cfg.dataset)}, {cfg.model})")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, table.point, rotation=30, ha="right")
    paper_pts = paper_gap_points()
    for i, part in enumerate(("iid", "non-iid-l-2")):
        pp = paper_pts[paper_pts.partition == part]
        xs = len(table) + 0.5 + np.arange(len(pp)) + i * 0.15
        b.scatter(xs, 100 * pp.closed, marker="s" if part == "iid" else "^",
                  label=f"paper, {paper.PARTITION_NAMES[part]}")
    ticks = [f"paper {d} {n}" for d, n in zip(paper_pts[paper_pts.partition == "iid"].dataset,
                                               paper_pts[paper_pts.partition == "iid"].num_supervised)]
    b.set_xticks(np.r_[x, len(table) + 0.5 + np.arange(len(ticks))], [*table.point, *ticks], rotation=30, ha="right")
    a.set_ylabel("SemiFL - Partially Supervised (points)")
    b.set_ylabel("gap closed (%)")
    b.legend(fontsize=8)
    a.set_title(f"our gain (final round; seeds: mean and std)")
    b.set_title("fraction of the Partially -> Fully Supervised gap that SemiFL closes")
    fig.tight_layout()
    return fig


def scale_claims(table, cfg) -> pd.DataFrame:
    """What the study shows, each verdict by RULE on the seeds (at_least for the issue's goal of half the gap)."""
    t = table.set_index("point")
    prof = f"N_S={cfg.num_supervised}"
    col = lambda k, c: t.loc[k, c] if k in t.index else np.array([])
    shown_ = lambda k, c: t.loc[k, c] if k in t.index else "not run"
    items = [(f"At the profile ({prof}, IID) SemiFL is above Partially Supervised",
              above(col(prof, "_semi"), col(prof, "_psl")),
              f"SemiFL {shown_(prof, 'SemiFL')} vs Partially Supervised {shown_(prof, 'Partially Supervised')}"),
             ("At the profile SemiFL closes at least half of the gap (the issue's goal)",
              at_least(col(prof, "_closed"), 0.5), f"gap closed {shown_(prof, 'gap closed (%)')} %")]
    ran = [m for m in SCALE_NS if len(col(f"N_S={m}", "_gain"))] or [SCALE_NS[-1], SCALE_NS[0]]
    for name, a, b in ((f"more rounds ({5 * cfg.rounds} vs {cfg.rounds})", f"rounds={5 * cfg.rounds}", prof),
                       ("more local epochs (E=5 vs E=1)", prof, "E=1.0"),
                       ("a wider model (cnn-w2 vs cnn)", "model=cnn-w2", prof),
                       (f"more labels (N_S={max(ran)} vs {min(ran)}, the extremes with SemiFL runs)",
                        f"N_S={max(ran)}", f"N_S={min(ran)}")):
        items.append((f"The gain SemiFL - Partially Supervised grows with {name}", above(col(a, "_gain"), col(b, "_gain")),
                      f"gain {shown_(a, 'SemiFL - Partially')} vs {shown_(b, 'SemiFL - Partially')}"))
    return claims(items)


def train_minutes(path) -> float:
    """A run's training time in minutes: the per-phase times its metrics.csv records each round, summed (start-up
    excluded). Unlike summary.json's wall_time_s (the last process's time), it counts every round of a resumed run."""
    m = load_metrics(path)
    return float(np.nansum(m[[c for c in m.columns if c.startswith("time_")]].to_numpy(float)) / 60)


def cost_table(df) -> pd.DataFrame:
    """Training minutes per run (train_minutes, mean over seeds) by point and method: the CPU budget, rule (4).
    Runs trained in a sweep share the 2 cores with one other run (one thread each)."""
    d = df.assign(point=df.label.str.split(" | ", regex=False).str[0],
                  method=df.label.str.split(" | ", regex=False).str[1],
                  minutes=[train_minutes(p) for p in df.path])
    return d.pivot_table(index="point", columns="method", values="minutes", aggfunc="mean", sort=False).round(1)


# Each suspect of the diagnosis changes one thing of the profile (the list); "5x rounds" keeps the cosine
# over all rounds.
SUSPECTS = {
    "client E=1 (profile E=5)": lambda c: dict(local_epochs=1.0),
    "no global momentum (beta_g=0)": lambda c: dict(global_momentum=0.0),
    "5x rounds": lambda c: dict(rounds=5 * c.rounds),
    "wider CNN (cnn-w2)": lambda c: dict(model="cnn-w2"),
    "client momentum reset": lambda c: dict(client_momentum="reset"),
    "server momentum reset": lambda c: dict(server_momentum="reset"),
    "FixMatch's RandAugment": lambda c: dict(strong_aug="fixmatch"),
    "no mix loss": lambda c: dict(mix_loss=False),
    "sBN statistics from all data": lambda c: dict(sbn_source="all"),
    "Algorithm 1 round order": lambda c: dict(round_order="paper"),
}
INSTRUMENTED = "profile (instrumented)"
SPLIT_SEEDS = range(5)


def diagnosis_configs(p, ds, n, rounds=None) -> dict:
    base = make(p, ds, n, rounds)
    out = {INSTRUMENTED: base.replace(diagnostics=True),
           "Partially Supervised": make(p, ds, n, rounds, algorithm="partially-supervised"),
           "Fully Supervised": make(p, ds, n, rounds, algorithm="fully-supervised")}
    out.update({name: base.replace(**change(base)) for name, change in SUSPECTS.items()})
    return out


def split_configs(p, ds, n, rounds=None) -> dict:
    """The profile's SemiFL and Partially Supervised with the data split drawn by split seeds 0-4 and everything
    else (initialisation, client sampling, augmentation) fixed by the run's seed: the labeled-set draw alone."""
    base = make(p, ds, n, rounds)
    psl = make(p, ds, n, rounds, algorithm="partially-supervised")
    return {**{f"SemiFL | split {k}": base.replace(split_seed=k) for k in SPLIT_SEEDS},
            **{f"Partially Supervised | split {k}": psl.replace(split_seed=k) for k in SPLIT_SEEDS}}


def verdict(a, b) -> str:
    """An ablation's result against the profile's (per-seed values) under RULE: higher, lower or within noise."""
    return {"held": "higher", "not held": "lower"}.get(above(a, b), above(a, b))


def suspects_table(df, n) -> pd.DataFrame:
    """Each suspect's final accuracy against the instrumented profile run (same seeds), with the verdict by
    `differs`; Partially Supervised beside."""
    d = df[df.num_supervised == n]
    base = d[d.label == INSTRUMENTED].sort_values("seed").final_acc.to_numpy()
    rows = []
    for label in [INSTRUMENTED, "Partially Supervised", *SUSPECTS]:
        v = d[d.label == label].sort_values("seed").final_acc.to_numpy()
        rows.append({"N_S": n, "run": label, "n": len(v), "final accuracy": mean_std(v),
                     "difference to profile": f"{v.mean() - base.mean():+.1f}" if len(v) and len(base) else "n/a",
                     "verdict (rule: |diff| > both spreads)": "-" if label == INSTRUMENTED else verdict(v, base)})
    return pd.DataFrame(rows)


ROUND_STAGES = [("acc_start", "global model at the start"), ("acc_client_mean", "client models (their mean accuracy)"),
                ("acc_average", "average of the client weights"), ("acc_aggregate", "after global momentum"),
                ("acc_finetuned", "after the server fine-tune")]


def _instrumented(df) -> pd.DataFrame:
    """Per-round metrics of the instrumented runs; a stage that never happened (no client above the threshold in
    any round: no client models) is a column of NaN."""
    c = curves(df[df.label == INSTRUMENTED])
    need = [k for k, _ in ROUND_STAGES] + ["server_loss_first", "server_loss_last", "label_ratio", "threshold_acc",
                                           "mix_acc", "round", "seed", "num_supervised"]
    return c.reindex(columns=list(c.columns) + [k for k in need if k not in c])


def stage_curves(df) -> pd.DataFrame:
    """Long table of the instrumented runs' accuracy at each stage of a round (round, stage, value, seed, N_S)."""
    c = _instrumented(df)
    cols = [k for k, _ in ROUND_STAGES]
    long = c.melt(id_vars=["round", "seed", "num_supervised"], value_vars=cols, var_name="stage", value_name="acc")
    return long.assign(stage=long.stage.map(dict(ROUND_STAGES))).dropna(subset=["acc"])


# The stages of a round as (name, accuracy after it, accuracy before it).
STAGE_STEPS = [("client training", "acc_client_mean", "acc_start"), ("averaging", "acc_average", "acc_client_mean"),
               ("global momentum", "acc_aggregate", "acc_average"),
               ("server fine-tune", "acc_finetuned", "acc_aggregate")]


def _stage_halves(df):
    """The instrumented runs' rounds grouped by (N_S, half of training)."""
    c = _instrumented(df)
    half = np.where(c["round"] <= c["round"].max() / 2, "rounds 1-T/2", "rounds T/2-T")
    return c.assign(half=half).groupby(["num_supervised", "half"])


def _stage_change(g, after, before) -> pd.Series:
    """Per seed, the mean change of test accuracy across one stage of a round."""
    return (g[after] - g[before]).groupby(g.seed).mean()


def stage_table(df) -> pd.DataFrame:
    """Where a round loses accuracy: the change at each stage, averaged over rounds (first half and second half of
    training) and seeds, per N_S."""
    rows = []
    for (n, h), g in _stage_halves(df):
        row = {"N_S": n, "rounds": h, "start": mean_std(g.groupby("seed").acc_start.mean())}
        for name, after, before in STAGE_STEPS:
            row[name] = mean_std(_stage_change(g, after, before))
        row["fine-tune loss, first -> last step"] = (f"{g.server_loss_first.mean():.2f} -> "
                                                     f"{g.server_loss_last.mean():.2f}")
        row["label ratio"] = f"{g.label_ratio.mean():.2f}"
        row["threshold accuracy"] = f"{g.threshold_acc.mean():.1f}"
        row["mix-label accuracy"] = f"{g.mix_acc.mean():.1f}"
        rows.append(row)
    return _table(rows, ["N_S", "rounds", "start", *(name for name, _, _ in STAGE_STEPS)])


def class_table(df, class_names) -> pd.DataFrame:
    """Per class, over the second half of training (instrumented runs): its share of the fix set (pseudo-labels
    above the threshold; 10% would be balanced), and its test accuracy at the start of a round, after aggregation
    and after the fine-tune."""
    c = _instrumented(df)
    c = c[c["round"] > c["round"].max() / 2]
    rows = []
    for n, g in c.groupby("num_supervised"):
        for k, name in enumerate(class_names):
            rows.append({"N_S": n, "class": name, "fix-set share (%)": 100 * g[f"fix_share_c{k}"].mean(),
                         "acc at start": g[f"start_acc_c{k}"].mean(),
                         "after aggregation": g[f"aggregate_acc_c{k}"].mean(),
                         "after fine-tune": g[f"acc_c{k}"].mean()})
    return pd.DataFrame(rows).round(1)


def augmentation_grid(data, n_images: int = 8, draws: int = 3, seed: int = 0):
    """A figure of training images and their views (weak; the authors' strong RandAugment; FixMatch's), each draw
    with its own random ops, and the share of strong views that come out blank (one flat colour) over 10,000
    images per variant."""
    import matplotlib.pyplot as plt
    import torch

    from . import augment
    g = torch.Generator(data.x_train.device).manual_seed(seed)
    x = data.x_train[:n_images]
    rows = [("original", x), ("weak", augment.weak(x, data.flip, g))]
    for variant in ("semifl", "fixmatch"):
        rows += [(f"strong ({variant}) #{d + 1}", augment.strong(x, data.flip, g, variant)) for d in range(draws)]
    fig, axes = plt.subplots(len(rows), n_images, figsize=(n_images * 1.1, len(rows) * 1.15))
    for r, (name, imgs) in enumerate(rows):
        for c in range(n_images):
            ax = axes[r, c]
            ax.imshow(imgs[c].permute(1, 2, 0).squeeze(-1).cpu().numpy(), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([]), ax.set_yticks([])
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
    many = data.x_train[:10000]
    blank = {}
    for variant in ("semifl", "fixmatch"):
        v = augment.strong(many, data.flip, g, variant).flatten(1)
        blank[variant] = 100 * (v.amax(1) == v.amin(1)).float().mean().item()
    return fig, blank


# ---------------------------------------------------------------------- the sizing rule (README, "The small profile")
def fsl_plateau(df, batch: int) -> tuple[pd.DataFrame, int]:
    """Fully Supervised accuracy per recipe and training length (fsl_sizing_configs' runs), and the rule's E_F for
    the profile's batch: the shortest length whose mean final accuracy is within 0.5 points of the next (twice as
    long)."""
    if df.empty:
        return pd.DataFrame(columns=["batch", "epochs", "accuracy", "n", "gain of doubling"]), None
    d = df.assign(batch=df.label.str.extract(r"batch (\d+)")[0].astype(int),
                  epochs=df.label.str.extract(r"(\d+) epochs")[0].astype(int))
    rows = []
    for (b, e), g in d.groupby(["batch", "epochs"]):
        rows.append({"batch": b, "epochs": e, "accuracy": mean_std(g.final_acc), "n": len(g), "_mean": g.final_acc.mean()})
    t = pd.DataFrame(rows)
    t["gain of doubling"] = (t.groupby("batch")._mean.shift(-1) - t._mean).round(2)   # accuracies are 0.01 steps
    mine = t[t.batch == batch]
    ok = mine[mine["gain of doubling"] <= 0.5]
    chosen = int(ok.epochs.iloc[0]) if len(ok) else int(mine.epochs.iloc[-1])
    return t.drop(columns="_mean"), chosen


def rounds_rule(cfg, fsl_epochs: int, train_size: int) -> int:
    """(b): the smallest multiple of 10 rounds with R * C * N_U * E >= E_F * N (client sample-epochs at least Fully
    Supervised's), N_U = the client pool of the IID split."""
    if fsl_epochs is None:   # no Fully Supervised sizing runs
        return None
    n_u = (train_size - cfg.num_supervised) // cfg.num_clients * cfg.num_clients
    need = fsl_epochs * train_size / (cfg.active_rate * n_u * cfg.local_epochs)
    return int(math.ceil(need / 10) * 10)


def ns_rule(df, fsl_label="Fully Supervised", min_gap: float = 15.0) -> tuple[pd.DataFrame, int]:
    """(a): Partially Supervised per N_S (label 'N_S=<n> | Partially Supervised') against Fully Supervised; the rule's
    N_S is the largest whose mean gap is at least min_gap points."""
    fsl = df[df.label.str.endswith(fsl_label)].final_acc.mean()
    psl = df[df.label.str.endswith("Partially Supervised")]
    t = psl.groupby("num_supervised").final_acc.agg(["mean", "count"]).reset_index()
    t["Partially Supervised"] = [mean_std(psl[psl.num_supervised == n].final_acc) for n in t.num_supervised]
    t["Fully Supervised"] = f"{fsl:.1f}"
    t["gap"] = (fsl - t["mean"]).round(1)
    ok = t[t.gap >= min_gap]
    chosen = int(ok.num_supervised.max()) if len(ok) else int(t.num_supervised.min()) if len(t) else None
    return t[["num_supervised", "Partially Supervised", "count", "Fully Supervised", "gap"]], chosen


def diagnosis_ns(profile_name: str, dataset=None) -> list[int]:
    """The diagnosis looks at N_S=40 (4 labels per class, where SemiFL fell below Partially Supervised) and the
    profile's N_S."""
    n = profile(profile_name, dataset).num_supervised
    return sorted({40, n}) if profile_name == "small" else [n]


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


def diagnosis_findings(df, splits, ns_list) -> pd.DataFrame:
    """The diagnosis in claims form: SemiFL vs Partially Supervised per N_S, the stage of a round that loses most,
    and each suspect's verdict (by `differs`), with the labeled-set spread beside."""
    items = []
    stages = stage_table(df)
    late_rounds = {n: g for (n, h), g in _stage_halves(df) if h == "rounds T/2-T"}
    spread = split_table(splits)
    for n in ns_list:
        d = df[df.num_supervised == n]
        semi = d[d.label == INSTRUMENTED].final_acc
        part = d[d.label == "Partially Supervised"].final_acc
        sp = spread[(spread.N_S == n) & (spread.method == "SemiFL")]
        n_splits = ((splits.num_supervised == n) & splits.label.str.startswith("SemiFL | ")).sum()
        items.append((f"N_S={n}: SemiFL ({mean_std(semi)}) vs Partially Supervised ({mean_std(part)})",
                      verdict(semi, part), f"labeled-set draw alone moves SemiFL by {sp['range'].iloc[0]} points "
                      f"({n_splits} of split seeds 0-4 run)" if n_splits > 1
                      else "labeled-set spread: fewer than 2 splits run"))
        late = stages[(stages.N_S == n) & (stages.rounds == "rounds T/2-T")]
        if len(late):
            g = late_rounds[n]
            change = {name: _stage_change(g, after, before).mean() for name, after, before in STAGE_STEPS}
            change = {name: v for name, v in change.items() if not np.isnan(v)}   # a stage that never happened
            worst = min(change, key=change.get) if change else "not run"
            items.append((f"N_S={n}: the stage of a round that loses most test accuracy (second half of training)",
                          worst, ", ".join(f"{name} {late[name].iloc[0]}" for name, _, _ in STAGE_STEPS)))
        table = suspects_table(df, n).set_index("run")
        for name in SUSPECTS:
            if name in table.index:
                row = table.loc[name]
                items.append((f"N_S={n}: {name}", row.iloc[-1], f"{row['final accuracy']} vs profile "
                              f"{table.loc[INSTRUMENTED, 'final accuracy']} (difference {row['difference to profile']})"))
    return pd.DataFrame(items, columns=["finding", "verdict", "evidence"])
