"""Whole tau-0 `paper` rounds per engine.Speed variant on a GPU, and the written rules that turn a speed switch on
from them: the prepared device call's `tau0` part (scripts/gpu_checks.sh).

    --rounds   whole `paper` rounds at the profile's E=5, tau 0 (label ratio 1), per Speed variant (--variants);
               with --barrier DIR --parties N, processes sharing a GPU start their timed rounds together
    --choose   the rules (RULE, PHASE_RULE below) applied to a --rounds log and each switch's CUDA test log

Device call, from the repository root: `python3 scripts/gpu_step_probe.py --rounds` (under 2 minutes on an H200); with
$OUT set it writes rounds.json and rounds.md there. `--smoke`: tiny sizes on the CPU, the same code paths without CUDA.
Its earlier modes answered their questions on an H200 on 2026-11-27 (BENCHMARKS.md) and are in git history.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))   # bench.py beside this file

from semifl_core.config import profile  # noqa: E402


def captured(fn, stream=None):
    """fn as a CUDA graph, with its output: three eager warm-up calls first, as torch asks, on `stream` (None: a side
    stream of their own), then the capture on `stream` (None: torch's own capture stream)."""
    s = stream or torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        out = fn()
    return g, out


def time_replays(g, reps: int = 20, rounds: int = 5) -> float:
    """Median over `rounds` of the mean replay time of `reps` replays (ms), timed with CUDA events."""
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / reps)
    return statistics.median(times)


@contextmanager
def captured_steps():
    """Inside: every engine.CapturedStep made is appended to the yielded list (to time its graph's replays)."""
    from semifl_core import engine as engine_mod
    made, real = [], engine_mod.CapturedStep

    class Spy(real):
        def __init__(self, fn):
            super().__init__(fn)
            made.append(self)
    engine_mod.CapturedStep = Spy
    try:
        yield made
    finally:
        engine_mod.CapturedStep = real


def speed_variant(name: str, dev):
    """A --variants name as an engine.Speed: baseline, default, or default+SWITCH+... (+SWITCH+... for short)."""
    import dataclasses

    from semifl_core.engine import Speed
    head, *switches = name.split("+")
    if head not in ("", "baseline", "default"):
        raise SystemExit(f"--variants {name!r}: {head!r} is not a variant; allowed: baseline, default, "
                         f"default+SWITCH (+SWITCH for short)")
    speed = Speed.baseline() if head == "baseline" else Speed.default(dev)
    fields = {f.name for f in dataclasses.fields(Speed)}
    for sw in switches:
        if sw not in fields:
            raise SystemExit(f"--variants {name!r}: {sw!r} is not a Speed switch; allowed: {', '.join(sorted(fields))}")
    return dataclasses.replace(speed, **{sw: True for sw in switches})


def fresh_state(start, model):
    """A copy of state `start` training the given model object (weights set to start's): the engine keeps captured (and
    compiled) steps per model object, so every timed round reuses the warm-up's, as in a run."""
    import copy

    from semifl_core.models import load_weights
    st = copy.deepcopy(start)
    load_weights(model, st.model.state_dict())
    st.model = model
    st.global_opt = torch.optim.SGD(model.parameters(), **{k: v for k, v in start.global_opt.defaults.items()
                                                           if k in ("lr", "momentum")})
    return st


def file_barrier(folder: str, parties: int, timeout: float) -> dict:
    """Waits until `parties` processes each put a file in `folder`, at most `timeout` s; returns what rows record."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"ready.{os.getpid()}").touch()
    t = time.monotonic()
    while len(list(path.glob("ready.*"))) < parties:
        if time.monotonic() - t > timeout:
            return {"barrier": f"timed out after {timeout:.0f} s: not every process reached it"}
        time.sleep(0.05)
    return {"barrier_wait_s": time.monotonic() - t}


def round_compare(log, dev="cuda", name: str = "paper", variants=("baseline", "default"),
                  repeats: int = 2, barrier=None) -> list[dict]:
    """Whole rounds at the profile's own E (tau 0: label ratio 1), from the same state, for each engine.Speed variant:
    wall time and phases of each timed round, and the replay time of the vectorized engine's captured step. No
    projection from fewer epochs: an 800-round run is 800 such rounds.

    Warm-up, untimed: short rounds (six steps a client, the sixth its first partial batch, so the padded step is
    captured and compiled too), twice when compiled (it recompiles on its second call); with fresh_state nothing is
    captured or compiled in a timed round. A compiled variant gets a third timed round; the median is reported.
    barrier: None, or a function called once after the first variant's warm-up, its dict in every row (file_barrier);
    each row holds its round's wall-clock start and end (time.time()), to check such processes' overlap."""
    import copy

    import bench
    from semifl_core.run import Experiment
    dev = torch.device(dev)
    cfg = profile(name).replace(threshold=0.0, engine="vectorized")
    data, source = bench.bench_data(cfg, None, dev, synthetic=True)
    start = Experiment(cfg, data, dev).new_state()
    speeds = {v: speed_variant(v, dev) for v in variants}   # every name checked before anything runs
    rows, met = [], None
    with captured_steps() as graphs:
        for v in variants:
            speed = speeds[v]
            if dev.type != "cuda":   # smoke: the same code paths without CUDA
                speed = dataclasses.replace(speed, cuda_graphs=False, sbn_one_pass=False)
            exp = Experiment(cfg, data, dev, speed)
            model = copy.deepcopy(start.model)
            graphs.clear()   # this variant's captured steps: made in the warm-up, replayed in the timed rounds
            with bench.short_client_training(exp, dev, through_partial=True):   # compiled: recompiles on call 2
                for _ in range(2 if speed.compile else 1):
                    exp.round(fresh_state(start, model), 0)
            bench._sync(dev)
            if barrier is not None and met is None:
                met = barrier()
                log(f"barrier: {met}")
            for i in range(1 if v == "baseline" else repeats + bool(speed.compile)):
                st = fresh_state(start, model)
                bench._sync(dev)
                t, t_start = time.perf_counter(), time.time()
                m = exp.round(st, 0)
                bench._sync(dev)
                wall = time.perf_counter() - t
                row = {"variant": v, "source": source, "round_s": wall, "client_samples": m.get("client_samples"),
                       "label_ratio": m.get("label_ratio"), "epochs": cfg.local_epochs,
                       "t_start": t_start, "t_end": time.time(), **(met or {}),
                       **{k: m[k] for k in m if k.startswith("time_")}}
                row["client_img_s"] = bench.client_images(cfg, m) / m["time_clients"]
                vec = [g for g in graphs if g.graph is not None and "active" in (g.static or {})]
                if vec:
                    row["replay_ms"] = time_replays(vec[-1].graph)
                row["800_rounds_h"] = 800 * wall / 3600
                rows.append(row)
                print("ROW " + json.dumps(row), file=sys.stderr, flush=True)   # kept if a time limit cuts the rest
                log(row)
            exp = None
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------------- the written rules (--choose)
# The rules of BENCHMARKS.md, applied to a rounds probe's rows, fixed before the rows exist: compile (torch.compile of
# the vectorized step) becomes part of the default when its own CUDA tests passed and its whole tau-0 `paper` rounds
# (median) take at most 0.90 of the default's; wide_passes joins when its median evaluation phase (time_sbn + time_eval)
# takes at most 0.80 of the default's and its median round no more than the default's (its float path is tested on the
# CPU; no CUDA tests of its own). masked_steps was decided on an H200 on 2026-11-28 and is part of the default since.
# Prints the variant (`default`, `default+compile`, ...) on stdout and the reasoning on stderr:
#     python3 scripts/gpu_step_probe.py --choose ROUNDS_LOG compile=TESTS_LOG
# ROUNDS_LOG holds `ROW {json}` lines from `gpu_step_probe.py --rounds`; each TESTS_LOG the pytest output of that
# switch's CUDA tests (a log with no pytest summary line, or with a FAILED or ERROR line, counts as failed).
RULE = {"compile": 0.90}   # the most a switch's median round may take, as a share of the default's
# the phases, and the most their median may take as a share of the default's (the round: at most the default's)
PHASE_RULE = {"wide_passes": (("time_sbn", "time_eval"), 0.80)}


def choose(rows: list[dict], tests: dict[str, str]) -> tuple[str, list[str]]:
    """The variant the real rounds run with, and why: each switch of RULE measured against the default."""
    by = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r["round_s"])
    why, chosen = [], []
    if "default" not in by:
        return "default", ["no default rounds: nothing to compare with, the default stays"]
    base = statistics.median(by["default"])
    for switch, share in RULE.items():
        rounds, log = by.get("+" + switch), tests.get(switch, "")
        tests_ran = " passed" in log or " failed" in log
        failed = [ln for ln in log.splitlines() if ln.startswith(("FAILED", "ERROR"))]
        if not rounds:
            why.append(f"{switch}: not measured (no rounds), stays off")
        elif not tests_ran or failed:
            why.append(f"{switch}: CUDA tests {'did not finish' if not tests_ran else 'failed: ' + failed[0]}, "
                       "stays off")
        else:
            med = statistics.median(rounds)
            ok = med <= share * base
            why.append(f"{switch}: median round {med:.2f} s vs default {base:.2f} s ({med / base:.3f}; the rule "
                       f"asks <= {share:.2f}): {'on' if ok else 'off'}")
            chosen += [switch] if ok else []
    for switch, (phases, share) in PHASE_RULE.items():
        mine = [r for r in rows if r["variant"] == "+" + switch]
        if not mine:
            why.append(f"{switch}: not measured (no rounds), stays off")
            continue
        phase = lambda rs: statistics.median(sum(r.get(p, 0.0) for p in phases) for r in rs)  # noqa: E731
        base_phase = phase([r for r in rows if r["variant"] == "default"])
        med, med_round = phase(mine), statistics.median(r["round_s"] for r in mine)
        ok = med <= share * base_phase and med_round <= base
        why.append(f"{switch}: median {' + '.join(phases)} {med:.3f} s vs default {base_phase:.3f} s "
                   f"({med / base_phase:.3f}; the rule asks <= {share:.2f}), round {med_round:.2f} s vs {base:.2f} s "
                   f"(at most the default's): {'on' if ok else 'off'}")
        chosen += [switch] if ok else []
    return "default" + "".join("+" + s for s in chosen), why


def choose_main(args) -> int:
    rounds_log, *pairs = args
    rows = [json.loads(ln[4:]) for ln in open(rounds_log, errors="replace") if ln.startswith("ROW ")]
    tests = {k: open(v, errors="replace").read() for k, v in (p.split("=", 1) for p in pairs)}
    variant, why = choose(rows, tests)
    print("\n".join(why), file=sys.stderr)
    print(variant)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--choose"]:
        return choose_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU, no CUDA (seconds)")
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.add_argument("--rounds", action="store_true", help="whole rounds per Speed variant (round_compare)")
    p.add_argument("--variants", default="baseline,default", help="the Speed variants, comma-separated: baseline, "
                   "default, or default with switches on (default+compile+wide_passes, or +compile)")
    p.add_argument("--barrier", help="a folder shared by --parties processes; each waits there after its warm-up "
                   "until all have arrived, then times its rounds")
    p.add_argument("--parties", type=int, default=1, help="--barrier: how many processes meet there (default 1)")
    p.add_argument("--barrier-timeout", type=float, default=60.0, help="--barrier: seconds to wait before timing "
                   "alone, which the rows then say (default 60)")
    args = p.parse_args(argv)
    if not args.rounds:
        p.error("say --rounds (whole rounds) or --choose ROUNDS_LOG compile=TESTS_LOG (the rules)")
    start = time.monotonic()

    def log(text):
        print(f"[{time.monotonic() - start:5.0f} s] {text}", file=sys.stderr, flush=True)

    barrier = (lambda: file_barrier(args.barrier, args.parties, args.barrier_timeout)) if args.barrier else None
    rows = round_compare(log, "cpu" if args.smoke else "cuda", "smoke" if args.smoke else "paper",
                         variants=args.variants.split(","), barrier=barrier)
    keys = ["variant", "round_s", "time_clients", "time_sbn", "time_server", "time_eval", "client_img_s",
            "replay_ms", "800_rounds_h", "client_samples", "label_ratio"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, ""))
                                       for k in keys) + " |")
    print("\n".join(lines))
    if args.out is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "rounds.json").write_text(json.dumps(rows, indent=1))
        (out / "rounds.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
