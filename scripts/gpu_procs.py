"""Runs an hour with several runs sharing one GPU: N processes, each the tau-0 `paper` rounds of
scripts/gpu_step_probe.py (`--rounds --variants default`: the default Speed, every client's whole share, E=5), started
together; for N in --procs. Each process warms up alone (start-up, capture), then waits at a barrier (a folder each
writes its file in: gpu_step_probe.py --barrier) until all N have warmed up, and only then times its rounds, so a
round's time is its wall time while the other N-1 processes train beside it, the first process's included. Each row
holds its round's wall-clock start and end; `together` is the share of the N processes' timed span during which all
N were timing (1: every timed round ran beside the others; a process's last round may still run alone at the end).

runs an hour of N processes against one = N x t(1) / t(N), t the median round of all N processes' timed rounds. The
rule it is judged by is written in BENCHMARKS.md before the call (rule 6, under "That call, measured"). Whether one
process's round (10 clients x 20 images a step) leaves the GPU room for others is what it measures: the vmap step took
1.46x and 2.6x its 10-client time at 20 and 40 clients on an H200 (2026-11-27), the fused step scaled about linearly.

    python3 scripts/gpu_procs.py [--procs 1,3] [--limit 50]        # on the device machine, OUT set
    python3 scripts/gpu_procs.py --smoke --procs 1,2                # the plumbing on a CPU (smoke profile), seconds
With $OUT set it writes procs.json there after each N (and nothing else: each process's folder is temporary); a
barrier that timed out (a process did not warm up in time) counts as a failure: no median for that N.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_size(n: int, smoke: bool, limit: float) -> dict:
    """n processes of the tau-0 rounds at once, timed together behind a barrier; their round times, or why there are
    none."""
    budget = limit * (1 + (n - 1) / 3)
    with tempfile.TemporaryDirectory() as tmp:
        procs, t0 = [], time.monotonic()
        cmd = [sys.executable, str(ROOT / "scripts" / "gpu_step_probe.py"), "--rounds", "--variants", "default",
               "--barrier", f"{tmp}/barrier", "--parties", str(n), "--barrier-timeout", f"{budget / 2:.0f}"]
        try:
            for i in range(n):
                env = {**os.environ, "OUT": f"{tmp}/{i}", "PYTHONUNBUFFERED": "1"}
                with open(f"{tmp}/{i}.err", "w") as err:   # the child keeps its own copy of the descriptor
                    procs.append(subprocess.Popen(cmd + (["--smoke"] if smoke else []), env=env, cwd=ROOT,
                                                  stdout=subprocess.DEVNULL, stderr=err))
            for p in procs:
                try:
                    p.wait(timeout=max(1.0, budget - (time.monotonic() - t0)))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        finally:   # stopped from outside (a time limit's SIGTERM, Ctrl-C): no process is left on the GPU
            for p in procs:
                if p.poll() is None:
                    p.kill()
        rounds, spans, failed = [], [], []
        for i, p in enumerate(procs):
            f = Path(f"{tmp}/{i}/rounds.json")
            if p.returncode == 0 and f.exists():
                rows = [r for r in json.loads(f.read_text()) if "round_s" in r]
                rounds += [r["round_s"] for r in rows]
                if rows:
                    spans.append((min(r["t_start"] for r in rows), max(r["t_end"] for r in rows)))
                failed += [f"process {i}: barrier {r['barrier']}" for r in rows[:1] if "barrier" in r]
            else:
                failed.append(f"process {i}: rc {p.returncode}: "
                              + Path(f"{tmp}/{i}.err").read_text()[-300:].replace("\n", " | "))
        together = None
        if len(spans) == n:   # the share of the timed span during which every process was timing
            start, end = max(s for s, _ in spans), min(e for _, e in spans)
            together = max(0.0, end - start) / (max(e for _, e in spans) - min(s for s, _ in spans))
        return {"procs": n, "wall_s": time.monotonic() - t0, "rounds": rounds, "together": together,
                "failed": failed, "median_round_s": statistics.median(rounds) if rounds and not failed else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--procs", default="1,3", help="process counts, comma-separated, the first 1 (default 1,3)")
    p.add_argument("--limit", type=float, default=50.0, help="seconds for one process; n processes get "
                   "limit x (1 + (n - 1) / 3) (default 50)")
    p.add_argument("--smoke", action="store_true", help="the smoke profile on the CPU: the plumbing, not the numbers")
    p.add_argument("--out", default=os.environ.get("OUT"))
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # a time limit's SIGTERM runs one_size's clean-up
    counts = [int(x) for x in args.procs.split(",")]
    if counts[0] != 1:   # every ratio is against one process's rounds
        p.error(f"--procs {args.procs}: the first count must be 1")
    rows = []
    for n in counts:
        rows.append(one_size(n, args.smoke, args.limit))
        one = rows[0]["median_round_s"]
        r = rows[-1]
        if one and r["median_round_s"]:
            r["runs_h_vs_one"] = n * one / r["median_round_s"]
        print(f"{n} process(es): {len(r['rounds'])} rounds, median {r['median_round_s'] or float('nan'):.2f} s, "
              f"runs an hour {r.get('runs_h_vs_one', float('nan')):.2f}x one; timing together "
              f"{r['together'] if r['together'] is not None else float('nan'):.2f} of the span; {r['wall_s']:.0f} s"
              + "".join(f"\n  {f}" for f in r["failed"]), flush=True)
        if args.out:   # after each N: a time limit that stops a later N keeps this one
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "procs.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
