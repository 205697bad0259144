"""`make bench-gpu`: the GPU measurement in one process, printed as one markdown table (the four parts below).

On a fresh H100 or H200 machine with the working tree it runs in under 8 minutes (a global deadline, default 440 s,
skips the parts it cannot fit and says so in the table) and measures, from the same state and the same round for
every variant, the engine before the speed switches (engine.Speed.baseline()), each Speed switch alone (cuda_graphs
with the sync_free and flat_sgd it needs), all together (bf16 included) and the default (Speed.default: every switch
that keeps the results):

1. `paper` profile (WRN-28-2, N_S=250, E=5), CIFAR-10-shaped random images (the work does not depend on the pixels;
   CIFAR-10 itself is not carried), with kernel counts;                                          budget 130 s
2. K runs at once on the GPU (K = 1, 2, 4, 8 processes, one run each, Speed.default): `small` runs per hour and
   `paper` rounds per hour;                                                                        budget 130 s
3. `paper` profile on real Fashion-MNIST;                                                         budget  90 s
4. `small` profile (the CNN) on real Fashion-MNIST, with kernel counts;                           budget  45 s

and prints the table last (the rows in the order 1, 3, 4, 2), with a projection of an 800-round `paper` run. Each part
stops starting variants once its budget or the global deadline would be passed (the rows say "skipped").

How a round is made comparable and affordable (every row says so):
- Label ratio 1: the bench sets the threshold tau to 0, so every client sample passes and is trained on: the most
  client work a round can have (a real run reaches a ratio of 0.7 by round 15 on Fashion-MNIST, BENCHMARKS.md). For
  timing only: with tau 0 the accuracy means nothing.
- Client epochs: the clients train 1 epoch in the measured round (the paper's E is 5); client training and
  augmentation scale with the steps (the same steps repeated), the other phases do not, so the row's projected round
  is: measured round + (client training + augmentation) x (5 - 1). The 800-round projection is 800 such rounds.
  An upper bound: a `train` call's fixed costs (its first eager step, the warm-up steps and the CUDA graph capture,
  about 0.8 s of a `paper` round on an H200) are paid once a round, not once an epoch; on the H200 the projection
  put the default's E=5 client training at 8.2 s against 6.05-6.19 s measured. `scripts/gpu_step_probe.py --rounds`
  measures whole E=5 rounds (BENCHMARKS.md, "H100 switch table").
- K runs: the `small` runs train 1 epoch at tau 0, the client work of E=5 at a label ratio of 0.2 (not projected); the
  `paper` runs train 0.5 epochs, projected to 5 as above. Process start-up is reported apart, not counted.

Data. Fashion-MNIST must be carried to the device machine: in the working tree,

    mkdir -p .gl-data/FashionMNIST/raw && cp /usr/share/datasets/fashion-mnist/*.gz .gl-data/FashionMNIST/raw/

(.gl-data/ is git-ignored; 30 MB), name it in the device call's carry, and the script reads it (--data-root, default
.gl-data). Without it the script says so, skips part 3, runs part 4 on random images of its shape, and goes on.

The device call (the `run` tool), from the repository root:

    command: python3 scripts/bench_gpu.py       carry: [".gl-data"]       timeout_s: 540

It prints a few progress lines on stderr, then the table; with $OUT set it also writes $OUT/bench_gpu.md (the table)
and $OUT/bench_gpu.json (every number). `--smoke`: tiny sizes on any device (the CPU here), seconds; the test suite
runs it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # the working tree's package, also in the spawned K-run processes
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
os.environ.setdefault("SEMIFL_OFFLINE", "1")   # the device machine has no network: a missing set is said at once

BUDGET_S = {"paper-cifar": 130, "grid": 130, "paper-fmnist": 90, "small": 45}
SMOKE_BUDGET_S = {"paper-cifar": 40, "grid": 60, "paper-fmnist": 30, "small": 30}


def log(start: float, text: str) -> None:
    print(f"[{time.monotonic() - start:5.0f} s] {text}", file=sys.stderr, flush=True)


def epochs_for(cfg, steps: int) -> float:
    """Client epochs that give about `steps` steps a client (smoke sizes)."""
    from semifl_core.config import TRAIN_SIZE
    return min(cfg.local_epochs, steps * cfg.client_batch * cfg.num_clients / TRAIN_SIZE[cfg.dataset])


def plan(smoke: bool):
    """The parts: (key, table label, config, synthetic?, client epochs, count kernels?) and the K-run specs."""
    from semifl_core.config import profile
    if smoke:
        tiny = profile("smoke")
        fm = profile("smoke", dataset="fashionmnist", num_clients=100, active_rate=0.03, sbn_source="server")
        parts = [("paper-cifar", "smoke: smoke profile, random images", tiny, True, epochs_for(tiny, 4), True),
                 ("paper-fmnist", "smoke: Fashion-MNIST, 3 clients", fm, False, epochs_for(fm, 3), False),
                 ("small", "smoke: Fashion-MNIST CNN", fm, False, epochs_for(fm, 3), True)]
        grid = {"small": dict(cfg=tiny.replace(threshold=0.0, local_epochs=epochs_for(tiny, 3)), rounds=1,
                              label="smoke runs", synthetic=False)}
        return parts, grid, (1, 2)
    paper, small = profile("paper"), profile("small")
    parts = [("paper-cifar", "paper, CIFAR-10-shaped", paper, True, 1.0, True),
             ("paper-fmnist", "paper, Fashion-MNIST", profile("paper", dataset="fashionmnist"), False, 1.0, False),
             ("small", "small, Fashion-MNIST", small, False, 1.0, True)]
    grid = {"small": dict(cfg=small.replace(threshold=0.0, local_epochs=1.0), rounds=3, scale=1.0,
                          label="small runs", synthetic=False),
            "paper": dict(cfg=paper.replace(threshold=0.0, local_epochs=0.5), rounds=1, scale=paper.local_epochs / 0.5,
                          label="paper rounds", synthetic=True)}
    return parts, grid, (1, 2, 4, 8)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes, any device (seconds); for the test suite")
    p.add_argument("--device", default="auto")
    p.add_argument("--data-root", default=str(ROOT / ".gl-data"), help="where FashionMNIST/raw/*.gz is (default: "
                   ".gl-data in the working tree; /usr/share/datasets/fashion-mnist is also looked in)")
    p.add_argument("--deadline", type=float, default=None, help="seconds for everything (default: 440; smoke 150)")
    p.add_argument("--out", default=os.environ.get("OUT"), help="folder for bench_gpu.md and .json (default: $OUT)")
    p.add_argument("--parts", default=None, help="only these parts, comma-separated, of paper-cifar, grid, "
                   "paper-fmnist, small (each then gets the time left, not its budget)")
    p.add_argument("--variants", default=None, help="only these Speed variants, comma-separated (names as in the "
                   "table: baseline, default, all, +sync_free, +sync_free+flat_sgd+cuda_graphs, ...)")
    args = p.parse_args(argv)
    start = time.monotonic()
    deadline = start + (args.deadline or (150 if args.smoke else 440))

    import torch

    from semifl_core import bench
    from semifl_core.data import DEBIAN_FASHION_MNIST, DataError, load
    from semifl_core.engine import Speed
    from semifl_core.run import pick_device
    dev = pick_device(args.device)
    log(start, f"device {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'}, torch {torch.__version__}")
    parts, grid, ks = plan(args.smoke)
    budgets = SMOKE_BUDGET_S if args.smoke else BUDGET_S
    variants = None
    if args.smoke:   # the code path of every kind of row (a switch that needs a GPU: a row saying so), not every one
        variants = [n for n, _ in bench.speed_variants(dev) if n in ("baseline", "all") or "cuda_graphs" in n]
    if args.variants:
        known = [n for n, _ in bench.speed_variants(dev)]
        variants = args.variants.split(",")
        if set(variants) - set(known):
            p.error(f"--variants: {sorted(set(variants) - set(known))} unknown; allowed on {dev}: {known}")
    try:
        fmnist = load("fashionmnist", args.data_root, dev, download=False)
        raw = Path(args.data_root) / "FashionMNIST" / "raw"
        found = f"fashionmnist (real files in {raw if raw.is_dir() else DEBIAN_FASHION_MNIST})"
    except DataError as err:
        fmnist, found = None, " ".join(str(err).split())
        log(start, f"Fashion-MNIST NOT FOUND, going on without it: {found}")
    rows = {key: [] for key in ("paper-cifar", "paper-fmnist", "small", "grid")}
    speed_name, speed = "default", Speed.default(dev)

    def write():
        table = bench.header(dev, [r for key in rows for r in rows[key]]) + "\n\n" + bench.markdown(
            [r for key in ("paper-cifar", "paper-fmnist", "small", "grid") for r in rows[key]], dev)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "bench_gpu.md").write_text(table + "\n")
            (Path(args.out) / "bench_gpu.json").write_text(json.dumps(rows, indent=1, default=str))
        return table

    order = ["paper-cifar", "grid", "paper-fmnist", "small"]
    if args.parts:
        chosen = args.parts.split(",")
        if set(chosen) - set(order):
            p.error(f"--parts: {sorted(set(chosen) - set(order))} unknown; allowed: {order}")
        order, budgets = [k for k in order if k in chosen], {k: float("inf") for k in order}
    for key in order:
        left = deadline - time.monotonic()
        if left < 10:
            rows[key].append({"part": key, "note": f"skipped: the global deadline ({deadline - start:.0f} s) is near"})
            log(start, f"{key}: skipped (deadline)")
            continue
        part_deadline = time.monotonic() + min(budgets[key], left)
        log(start, f"{key}: starting, {min(budgets[key], left):.0f} s budget")
        try:
            if key == "grid":
                specs = {}
                for name, spec in grid.items():
                    real = not spec["synthetic"] and fmnist is not None
                    specs[name] = {**spec, "speed": speed, "speed_name": speed_name, "data_root": args.data_root,
                                   "synthetic": not real}
                rows[key] = bench.grid_throughput(specs, ks, dev, deadline=part_deadline)
            else:
                _, label, cfg, synthetic, epochs, count = next(p for p in parts if p[0] == key)
                data, source = None, ""
                if not synthetic and fmnist is not None:
                    data, source = fmnist, found
                elif not synthetic and key == "paper-fmnist":
                    rows[key].append({"part": label, "note": f"skipped: Fashion-MNIST not found ({found})"})
                    continue
                elif not synthetic:
                    label += " (Fashion-MNIST not found: random images of its shape)"
                    synthetic = True
                rows[key] = bench.gpu_profile(cfg, dev, args.data_root, synthetic=synthetic, engines=("vectorized",),
                                              variants=variants, client_epochs=epochs, count=count,
                                              deadline=part_deadline, part=label, data=data, source=source)
        except Exception as err:   # a part that fails is a row; the others still run
            rows[key].append({"part": key, "note": f"failed: {type(err).__name__}: {' '.join(str(err).split())[:300]}"})
        log(start, f"{key}: done")
        write()
    table = write()
    print(table)
    best = [r for r in rows["paper-cifar"] if r.get("projected_round_s") and not math.isnan(r["projected_round_s"])]
    if best and not args.smoke:
        fastest = min(best, key=lambda r: r["projected_round_s"])
        print(f"\nfastest paper variant: {fastest['speed']}, {bench.projection(fastest)} (label ratio 1); "
              f"client img/s {fastest.get('vs_baseline', float('nan')):.2f}x the baseline's")
    log(start, "finished")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
