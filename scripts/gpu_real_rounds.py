"""Real `paper` rounds, timed as a user runs them: `semifl run --profile paper` on Fashion-MNIST (the paper's threshold
0.95, E=5, WRN-28-2, evaluation every round), in-process through `run.run` (start-up, checkpoints every 10 rounds and
evaluation all counted), stopped after --minutes as Ctrl-C stops a run (the round finishes, a checkpoint is written).

Per round it prints the wall time (from the end of the previous round), the label ratio, the client samples, how
many client steps had some client on a partial batch (padded, in a second CUDA graph, with masked steps; eager
without), and the phases; then
the 800-round figure from the rounds whose label ratio is in [0.3, 0.9] (a real run's ratio rises from 0 to about 0.9;
the early, cheap rounds would make it too low): start-up + 800 x their mean round (a checkpoint every tenth round is
in them, as in a run), and says so.

    python3 scripts/gpu_real_rounds.py [--minutes 6] [--variant default|+masked_steps|+compile|+compile+masked_steps]
    python3 scripts/gpu_real_rounds.py --smoke          # the smoke profile on the CPU: the code path, seconds

Device call (from the repository root; Fashion-MNIST carried as .gl-data, see scripts/bench_gpu.py):
    command: python3 scripts/gpu_real_rounds.py --minutes 6     carry: [".gl-data"]     timeout_s: 480
With $OUT set it writes rounds.json and rounds.md there.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

T0 = time.monotonic()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("SEMIFL_OFFLINE", "1")

from partial_steps import partial_share  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=6.0)
    p.add_argument("--variant", default="default", help="default, or default plus switches: +masked_steps, +compile")
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"), help="Config.precision of the run")
    p.add_argument("--data-root", default=str(ROOT / ".gl-data"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--out", default=os.environ.get("OUT"))
    args = p.parse_args(argv)

    import torch

    from semifl_core import engine as engine_mod
    from semifl_core import run as run_mod
    from semifl_core.config import profile
    from semifl_core.engine import Speed
    dev = run_mod.pick_device("cpu" if args.smoke else "auto")
    cfg = (profile("smoke", rounds=40, threshold=0.3, engine="vectorized", precision=args.precision) if args.smoke
           else profile("paper", dataset="fashionmnist", eval_every=1, precision=args.precision))
    speed = Speed.default(dev)
    for switch in filter(None, args.variant.removeprefix("default").split("+")):
        speed = dataclasses.replace(speed, **{switch: True})
    rows, marks, train = [], {"last": None}, engine_mod.VectorizedEngine.train

    def spy(self, model, tasks, *a, **k):   # the client steps a captured graph cannot take
        marks["partial"] = partial_share([t.size for t in tasks], cfg.client_batch) if tasks else (0, 0)
        return train(self, model, tasks, *a, **k)
    close = run_mod.Experiment.close_round

    def timed_close(self, st, rnd):
        row = close(self, st, rnd)
        now = time.monotonic()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        rows.append({"round": row["round"], "s": now - (marks["last"] or T0), "label_ratio": row.get("label_ratio"),
                     "client_samples": row.get("client_samples"), "partial_steps": marks.pop("partial", (0, 0)),
                     **{k: v for k, v in row.items() if k.startswith("time_")}})
        marks["last"] = now
        r = rows[-1]
        print(f"round {r['round']}: {r['s']:.2f} s, label ratio {r['label_ratio'] or 0:.2f}, "
              f"{r['client_samples']} client samples, {r['partial_steps'][0]}/{r['partial_steps'][1]} steps partial",
              file=sys.stderr, flush=True)
        return row
    engine_mod.VectorizedEngine.train = spy
    run_mod.Experiment.close_round = timed_close
    signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGTERM))
    signal.alarm(max(1, int(args.minutes * 60)))
    data = None
    if args.smoke:
        from semifl_core.data import synthetic
        data = synthetic()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            run_mod.run(cfg, tmp, device=dev, data_root=args.data_root, progress=False, data=data, speed=speed)
        except KeyboardInterrupt as stop:   # the budget: the run stopped after a round, as Ctrl-C stops it
            print(f"stopped: {stop}", file=sys.stderr)
    wall = time.monotonic() - T0
    band = [r["s"] for r in rows if r["label_ratio"] is not None and 0.3 <= r["label_ratio"] <= 0.9]
    startup = rows[0]["s"] - sum(v for k, v in rows[0].items() if k.startswith("time_") and v) if rows else float("nan")
    summary = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "torch": torch.__version__,
               "variant": args.variant, "precision": args.precision, "rounds": len(rows), "wall_s": wall,
               "startup_s": startup,
               "band_rounds": len(band), "band_mean_s": statistics.mean(band) if band else None,
               "band_median_s": statistics.median(band) if band else None}
    if band:
        summary["projected_800_h"] = (startup + 800 * summary["band_mean_s"]) / 3600
    lines = ["| round | s | label ratio | client samples | steps with a partial client |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['round']} | {r['s']:.2f} | {r['label_ratio'] or 0:.2f} | {r['client_samples']} | "
              f"{r['partial_steps'][0]} / {r['partial_steps'][1]} |" for r in rows]
    lines.append(f"\n{summary['device']}, {args.variant}, {args.precision}: {len(rows)} rounds in {wall:.0f} s "
                 f"(start-up and checkpoints included; start-up about {startup:.0f} s); {len(band)} rounds at a label "
                 f"ratio in [0.3, 0.9], mean {summary['band_mean_s'] or float('nan'):.2f} s, median "
                 f"{summary['band_median_s'] or float('nan'):.2f} s"
                 + (f"; start-up + 800 rounds at that mean: {summary['projected_800_h']:.2f} h (a projection from real "
                    "rounds)" if band else ""))
    print("\n".join(lines))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "rounds.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
        (Path(args.out) / "rounds.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
