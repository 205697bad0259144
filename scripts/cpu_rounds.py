"""Whole `small` rounds on this CPU, one engine variant against another, from the same mid-run state (the measurement
behind the CPU defaults in BENCHMARKS.md, "The step changed"): real Fashion-MNIST, SemiFL at the `small` profile
(IID unless --partition), trained --warm rounds with the sequential engine, then round warm+1 timed --repeats times
per variant, the variants alternating, each from a copy of the warm state. One torch thread. Prints per variant the
median round and client-phase seconds, and their ratios to the first variant.

    python3 scripts/cpu_rounds.py [--warm 12] [--repeats 5] [--variants sequential,fused] [--partition iid]

Variants: `sequential` (the CPU default engine), `vectorized` (vmap), `fused` (the vectorized engine with
Speed.fused), `bf16` (the sequential engine, precision="bf16"); each with the CPU's default Speed otherwise.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warm", type=int, default=12)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--variants", default="sequential,fused")
    p.add_argument("--partition", default="iid")
    p.add_argument("--profile", default="small")
    p.add_argument("--data-root", default=None)
    args = p.parse_args(argv)
    import torch

    from semifl_core.config import profile
    from semifl_core.engine import Speed
    from semifl_core.run import Experiment, get_data
    torch.set_num_threads(1)
    dev = torch.device("cpu")
    base = profile(args.profile, partition=args.partition)
    data = get_data(base.dataset, args.data_root, dev)
    variants = {"sequential": (dict(engine="sequential"), {}), "vectorized": (dict(engine="vectorized"), {}),
                "fused": (dict(engine="vectorized"), dict(fused=True)),
                "bf16": (dict(engine="sequential", precision="bf16"), {})}
    names = args.variants.split(",")
    for name in names:
        if name not in variants:
            raise SystemExit(f"--variants {name!r}: allowed are {', '.join(variants)}")
    t0 = time.time()
    exp = Experiment(base.replace(engine="sequential"), data, dev)
    st = exp.new_state()
    for r in range(args.warm):
        exp.round(st, r)
    print(f"warm: {args.warm} rounds in {time.time() - t0:.0f} s", file=sys.stderr)
    exps = {n: Experiment(base.replace(**variants[n][0]), data, dev,
                          dataclasses.replace(Speed.default(dev), **variants[n][1])) for n in names}
    rows = []
    for i in range(args.repeats):
        for n in names:
            s = copy.deepcopy(st)
            t = time.perf_counter()
            m = exps[n].round(s, args.warm)
            rows.append({"variant": n, "repeat": i, "round_s": time.perf_counter() - t,
                         "clients_s": m.get("time_clients"), "label_ratio": m.get("label_ratio"),
                         "client_samples": m.get("client_samples")})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    med = {n: {k: statistics.median(r[k] for r in rows if r["variant"] == n) for k in ("round_s", "clients_s")}
           for n in names}
    ref = med[names[0]]
    print(f"{args.profile}, {args.partition}, round {args.warm + 1} (label ratio {rows[0]['label_ratio']:.2f}, "
          f"{rows[0]['client_samples']} client samples), median of {args.repeats}, one thread:")
    for n in names:
        print(f"  {n:11s} round {med[n]['round_s']:6.2f} s ({ref['round_s'] / med[n]['round_s']:.2f}x)   clients "
              f"{med[n]['clients_s']:6.2f} s ({ref['clients_s'] / med[n]['clients_s']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
