"""Campaigns: a notebook's runs (or the confirmation's), trained in the background by lanes.

    nohup python -m semifl_core.campaign horizon few_labels > lane-a.log 2>&1 &
    nohup python -m semifl_core.campaign horizon few_labels > lane-b.log 2>&1 &     # a second lane shares the queue

A queue is a notebook's name: the runs it asks for now and the store lacks, in its order (notebook_queue);
`confirmation`: the fresh-seed runs of report.confirmation's plan, claim by claim, seed by seed. A lane is one process
with one torch thread; it trains, in order, each run not complete and not held by another process, claiming it with
results.try_hold (the lock `semifl run` takes) and resuming from its checkpoint. SIGTERM or Ctrl-C checkpoints after
the current round; `touch <results>/.stop-campaign` stops every lane after its current run; the same command resumes.
docs/usage.md, "Long runs in the background", says how to use them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import results
from .config import Config, ConfigError
from .report.runs import COLLECT, REPO

STOP_FILE = ".stop-campaign"
CONFIRMATION = "confirmation"
NOTEBOOKS = REPO / "notebooks"


def notebook_queue(name: str, results_dir="results") -> list[tuple[str, Config]]:
    """The runs notebooks/<name>.ipynb asks for that results_dir lacks, in its order: the notebook executed once with
    SEMIFL_NO_TRAIN=1 (it trains nothing; its figures go to a temporary folder) while report.run_all writes down each
    run it would train (SEMIFL_COLLECT)."""
    with tempfile.TemporaryDirectory() as tmp:
        asked = Path(tmp) / "runs.jsonl"
        cmd = [sys.executable, "-m", "papermill", str(NOTEBOOKS / f"{name}.ipynb"), str(Path(tmp) / "out.ipynb"),
               "-p", "results_dir", str(Path(results_dir).resolve()), "-p", "figures_dir", tmp,
               "--no-progress-bar", "--log-level", "ERROR"]
        env = {**os.environ, "SEMIFL_NO_TRAIN": "1", COLLECT: str(asked)}
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ConfigError(f"queue {name!r}: notebooks/{name}.ipynb failed to execute ({last})")
        rows = [json.loads(line) for line in asked.read_text().splitlines()] if asked.exists() else []
    return [(f"{name}: {r['label']} (seed {r['config']['seed']})", Config.from_dict(r["config"])) for r in rows]


def queue(names, match=(), results_dir="results") -> list[tuple[str, Config]]:
    """The named queues, concatenated, each run once (its first label); `match`: only labels containing one of them."""
    allowed = sorted([CONFIRMATION, *(p.stem for p in NOTEBOOKS.glob("*.ipynb"))])
    seen, out = set(), []
    for name in names:
        if name not in allowed:
            raise ConfigError(f"queue {name!r}: allowed are {', '.join(allowed)}")
        if name == CONFIRMATION:
            from .report.confirmation import queue as confirmation_queue
            jobs = confirmation_queue()
        else:
            jobs = notebook_queue(name, results_dir)
        for label, cfg in jobs:
            if (cfg.algorithm, cfg.key()) not in seen and (not match or any(m in label for m in match)):
                seen.add((cfg.algorithm, cfg.key()))
                out.append((label, cfg))
    return out


def lane(jobs, results_dir="results", data_root=None, say=print) -> int:
    """Train every job not complete and not held elsewhere, in order; returns how many this lane trained."""
    import torch

    from .run import run
    torch.set_num_threads(1)
    trained = 0
    for label, cfg in jobs:
        if (Path(results_dir) / STOP_FILE).exists():
            say(f"{STOP_FILE} found: stopping")
            break
        path = results.run_dir(results_dir, cfg)
        if results.open_run(results_dir, cfg).state == "complete":
            continue
        with results.try_hold(path) as mine:
            if not mine:
                continue
            if label.startswith("confirmation:"):
                from .report.confirmation import mark_started
                mark_started(results_dir)
            t0 = time.time()
            say(f"{time.strftime('%H:%M:%S')} start {label} -> {path.name}")
            out = run(cfg, results_dir, device="cpu", data_root=data_root, progress=False)
            say(f"{time.strftime('%H:%M:%S')} done  {label}: final {out['final_acc']:.2f} "
                f"({(time.time() - t0) / 60:.1f} min)")
            trained += 1
    return trained


def listing(jobs, results_dir="results") -> str:
    lines, todo = [], []
    for label, cfg in jobs:
        state = results.open_run(results_dir, cfg).state
        if state != "complete":
            todo.append(cfg)
        lines.append(f"{state:10s} {label}")
    todo = results.estimate_minutes(todo, results.minutes_per_round(results_dir))
    missing = sum(1 for ln in lines if not ln.startswith("complete"))
    lines.append(f"{len(jobs)} runs, {missing} to train: " + (
        f"about {todo / 60:.1f} CPU hours (median minutes per round of the committed runs of the same method, else "
        "SemiFL's; semi-supervised rounds grow with the label ratio, so long runs take longer)" if todo == todo
        else "no committed run to estimate their time"))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m semifl_core.campaign", description=__doc__.splitlines()[0])
    p.add_argument("queues", nargs="+", metavar="QUEUE", help=f"'{CONFIRMATION}' or a notebook's name (table1, ...)")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--data-root", default=None)
    p.add_argument("--list", action="store_true", help="print the runs and their state; train nothing")
    p.add_argument("--match", action="append", default=[], metavar="TEXT",
                   help="only the runs whose label contains TEXT (repeat for several), e.g. --match 'table1:'")
    args = p.parse_args(argv)
    try:
        jobs = queue(args.queues, args.match, args.results_dir)
        if not jobs and args.match:
            raise ConfigError(f"--match {' '.join(map(repr, args.match))}: no run of {', '.join(args.queues)} has a "
                              "label containing it (see --list)")
        if args.list:
            print(listing(jobs, args.results_dir))
            return 0
        n = lane(jobs, args.results_dir, args.data_root, say=lambda m: print(m, flush=True))
    except (ConfigError, results.ResultsError) as err:
        print(f"semifl: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"semifl: interrupted{': ' + str(err) if str(err) else ''}", file=sys.stderr)
        return 130
    print(f"lane finished: {n} runs trained", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
