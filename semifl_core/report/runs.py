"""Running the paper's items: the (dataset, N_S) grid and configs per profile, `run_all` (complete runs reused, the rest
trained in worker processes), and the runs and per-round metrics read back from the results store."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np
import pandas as pd

from ..config import PROFILE_GRID, Config, ConfigError, check_parameters, profile
from ..results import load_metrics
from . import paper


def notebook_setup(profile_name, seed, seeds, dataset, rounds, device, results_dir, figures_dir, describes=True):
    """Every notebook's setup cell: check its parameters (a bad one: one line saying which and why), set the table and
    figure styles, print what it will run (SemiFL's profile; describes=False: the notebook says it) and where it
    reads and writes. Returns (seed list, (dataset, N_S) pairs)."""
    check_parameters(profile_name, seed, seeds, dataset, rounds, device)
    import seaborn as sns
    pd.set_option('display.max_columns', 50, 'display.width', 250, 'display.max_colwidth', 120)
    sns.set_theme(style='whitegrid')
    seed_list, pairs = seeds_of(seed, seeds), grid(profile_name, dataset)
    if describes:
        print(describe(profile_name, pairs, device, seed_list, rounds))
    print('results:', shown(repo_path('results', results_dir)), '| figures:', shown(repo_path('figures', figures_dir)))
    return seed_list, pairs


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
    from ..run import pick_device
    dev = pick_device(device)
    cfg = make(profile_name, pairs[0][0], pairs[0][1], rounds)
    data = ", ".join(f"{paper.DATASET_NAMES.get(d, d)} N_S={n}" for d, n in pairs)
    return (f"profile={profile_name!r} | data: {data} | model={cfg.model}, M={cfg.num_clients}, C={cfg.active_rate}, "
            f"T={cfg.rounds}, E={cfg.local_epochs} | device: {dev} ({platform.processor() or platform.machine()}) "
            f"| seeds: {list(seeds)}")


REPO = Path(__file__).resolve().parents[2]


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
    from ..run import run
    return run(cfg, results_dir, device=device, data_root=data_root, progress=False)


def workers_for(device: str, jobs: int) -> int:
    """Parallel training processes: one per CPU core (each with one thread) on a CPU, one on a GPU."""
    from ..run import pick_device
    if pick_device(device).type != "cpu":
        return 1
    return max(1, min(os.cpu_count() or 1, jobs))


BACKENDS = ("processes", "ray")


def run_all(configs: dict, seeds, results_dir=None, device="auto", data_root=None, workers=None, backend=None,
            address=None, gpus_per_run=None) -> pd.DataFrame:
    """Run every {label: Config} for every seed with one progress bar: complete runs are reused, the rest train in
    `workers` processes (default: workers_for(device)), each resuming from its checkpoint if it has one.
    backend="ray" hands the runs to Ray instead (semifl_core.sweep: a local instance, or the cluster at `address`;
    `gpus_per_run` GPUs a run, default 1 where the cluster has GPUs); the default backend is "processes", or
    $SEMIFL_BACKEND when set (so papermill can send a notebook's grids to Ray; Ray reads RAY_ADDRESS itself).
    Returns a tidy DataFrame: one row per (label, seed) with the config's main fields and the run summary.
    With SEMIFL_NO_TRAIN set (no_train()), runs not in the store are left out, with a printed line naming them."""
    backend = backend or os.environ.get("SEMIFL_BACKEND") or "processes"
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r}: allowed are {', '.join(BACKENDS)}")
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from tqdm import tqdm  # text bars: they render in committed notebooks (no widgets needed)

    from ..results import open_run
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
    swept = backend == "ray" and bool(todo)
    if swept:   # with its own bar; a failed run: SweepError naming it, once the others have finished
        from ..sweep import sweep
        out = sweep([jobs[i][1] for i in todo], results_dir, address=address, num_gpus=gpus_per_run, device=device,
                    data_root=data_root, names=[f"{jobs[i][0]} (seed {jobs[i][1].seed})" for i in todo])
        done.update(zip(todo, out.check().summaries))
        todo = []
    n = workers or workers_for(device, len(todo))
    with tqdm(total=len(jobs), initial=len(done), desc=f"runs ({len(todo)} to train, {n} at a time)",
              disable=swept) as bar:
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


def run_pairs(builder, p, pairs, seeds, results_dir, device="auto", rounds=None, **run_options) -> pd.DataFrame:
    """run_all(builder(p, ds, n, rounds), **run_options) for every (dataset, N_S) pair, concatenated; adds 'method'
    (the label without its partition) and 'pair'."""
    dfs = [run_all(builder(p, ds, n, rounds), seeds, results_dir, device, **run_options) for ds, n in pairs]
    df = pd.concat(dfs, ignore_index=True)
    df["method"] = df.label.str.split(" | ", regex=False).str[0]
    df["pair"] = [f"{paper.DATASET_NAMES.get(d, d)}, N_S={n}" for d, n in zip(df.dataset, df.num_supervised)]
    return df


def train_minutes(path) -> float:
    """A run's training time in minutes: the per-phase times its metrics.csv records each round, summed (start-up
    excluded). Unlike summary.json's wall_time_s (the last process's time), it counts every round of a resumed run."""
    m = load_metrics(path)
    return float(np.nansum(m[[c for c in m.columns if c.startswith("time_")]].to_numpy(float)) / 60)
