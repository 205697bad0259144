"""Would stacking K runs in one engine train a grid faster? The probe behind the rule in BENCHMARKS.md ("Runs stacked
in one engine"): build it only if K runs stacked give at least 1.3x the runs an hour of one run at a time, in whole
rounds.

For K = 1, 2, 4 runs (seeds 0..K-1) of a profile, one real round each (round --round, after untimed warm rounds that
bring real pseudo-labels; or threshold 0 with --tau0: every client image passes, a round's most client work):

    one at a time   each run's round as it runs today (the device's default engine and speed), timed whole
    stacked         the same rounds with the client training of all K runs in ONE vectorized `train` call (K x M
                    clients in one vmap step), the other phases as each run timed them alone: what a stacked engine
                    would take, since only the client step is shared

and prints runs an hour both ways (K rounds / time) and their ratio. The stacked call trains every client from one
start model: the cost of a step does not depend on the weights, only on the shapes, which are the K runs' own. One
process; `--threads 1` (the default) as the campaign lanes run.

With --fused the stacked call runs the fused step (Speed.fused: K x M clients as one network), the rule of
BENCHMARKS.md "The step changed" (rule 4).

    python scripts/stack_probe.py [--profile small] [--dataset NAME] [--ks 1,2,4] [--epochs 1] [--tau0] [--device cpu]
                                  [--fused]
    python3 scripts/stack_probe.py --profile paper --dataset fashionmnist --device cuda --data-root .gl-data   # a GPU
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from semifl_core.config import profile  # noqa: E402
from semifl_core.data import load, synthetic  # noqa: E402
from semifl_core.engine import Speed, VectorizedEngine  # noqa: E402
from semifl_core.run import Experiment, pick_device  # noqa: E402


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def one_round(exp, st, r: int) -> tuple[float, float, tuple]:
    """Round r of exp from state st, timed whole; returns (round s, client-training s, the train call's arguments)."""
    seen, train = {}, exp.engine.train

    def spy(model, tasks, loss_fn, lr, states, *rest):
        seen["call"] = (model, tasks, loss_fn, lr, states)
        _sync(exp.device)
        t = time.perf_counter()
        out = train(model, tasks, loss_fn, lr, states, *rest)
        _sync(exp.device)
        seen["train_s"] = time.perf_counter() - t
        return out
    exp.engine.train = spy
    try:
        _sync(exp.device)
        t = time.perf_counter()
        exp.round(st, r)
        _sync(exp.device)
        return time.perf_counter() - t, seen["train_s"], seen["call"]
    finally:
        del exp.engine.train


def probe(cfg, data, dev, ks, rnd: int, fused: bool = False) -> list[dict]:
    rows = []
    for k in ks:
        alone, calls = 0.0, []
        for seed in range(k):
            exp = Experiment(cfg.replace(seed=seed), data, dev)
            st = exp.new_state()
            for r in range(rnd):                     # untimed: real pseudo-labels, warm kernels
                exp.round(st, r)
            wall, train_s, call = one_round(exp, st, rnd)
            alone += wall
            calls.append((wall - train_s, call))
        model, _, loss_fn, lr, _ = calls[0][1]
        tasks = [t for _, c in calls for t in c[1]]
        states = [s for _, c in calls for s in c[4]]
        speed = Speed.default(dev)
        vec = VectorizedEngine(cfg, data.mean, data.std, speed.__class__(**{**speed.__dict__, "fused": fused}))
        vec.train(model, [t for t in tasks[:1]], loss_fn, lr, states[:1])   # warm the vmap kernels
        _sync(dev)
        t = time.perf_counter()
        vec.train(model, tasks, loss_fn, lr, states)
        _sync(dev)
        stacked = time.perf_counter() - t + sum(other for other, _ in calls)
        samples = sum(int(t.size.sum()) for t in tasks)
        rows.append({"K": k, "clients": len(tasks), "client_samples": samples, "alone_s": alone,
                     "stacked_s": stacked, "alone_runs_h": 3600 * k / alone / cfg.rounds,
                     "stacked_runs_h": 3600 * k / stacked / cfg.rounds, "ratio": alone / stacked})
        print(f"K={k}: {len(tasks)} clients, {samples} client samples; one at a time {alone:.1f} s, stacked "
              f"{stacked:.1f} s: {alone / stacked:.2f}x", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="small")
    p.add_argument("--dataset", default=None, help="default: the profile's")
    p.add_argument("--data-root", default=None)
    p.add_argument("--ks", default="1,2,4")
    p.add_argument("--epochs", type=float, default=1.0, help="client epochs of the measured round (default 1)")
    p.add_argument("--round", type=int, default=3, help="the measured round (the rounds before it are untimed)")
    p.add_argument("--tau0", action="store_true", help="threshold 0: every client image passes")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="a JSON file for the rows")
    p.add_argument("--fused", action="store_true", help="the stacked call runs the fused step (Speed.fused)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    dev = pick_device(args.device)
    cfg = profile(args.profile, args.dataset).replace(local_epochs=args.epochs,
                                                      **({"threshold": 0.0} if args.tau0 else {}))
    data = synthetic() if cfg.dataset == "synthetic" else load(cfg.dataset, args.data_root, dev, download=False)
    rows = probe(cfg, data.to(dev) if hasattr(data, "to") else data, dev, [int(k) for k in args.ks.split(",")],
                 args.round, args.fused)
    print("| K | clients | client samples | one at a time s | stacked s | runs/h one at a time | runs/h stacked | "
          "stacked / one at a time |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['K']} | {r['clients']} | {r['client_samples']:,} | {r['alone_s']:.1f} | {r['stacked_s']:.1f} | "
              f"{r['alone_runs_h']:.2f} | {r['stacked_runs_h']:.2f} | {r['ratio']:.2f}x |")
    if args.out:
        Path(args.out).write_text(json.dumps({"config": cfg.to_dict(), "device": str(dev), "threads": args.threads,
                                              "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
