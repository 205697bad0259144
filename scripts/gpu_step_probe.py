"""Where the vectorized client step's time goes on a GPU, and which way of computing it is fastest (a
follow-up to the H100 measurement of make bench-gpu, which left the client step at about 10 % of FP32 peak and
guessed grouped convolutions).
BENCHMARKS.md has what its four modes measured on an H200 (2026-11-27).

Default mode: the `paper` profile's step alone (WRN-28-2, CIFAR-10-shaped random images): n clients, each with its
own weights and a batch of b=10 images, two forwards a step as SemiFL's client loss (the fix batch and the mix
batch), every client's gradient. Computed four ways, each captured once as a CUDA graph and replayed (what
Speed.cuda_graphs does):

    vmap      vmap(grad) over the clients: every convolution one grouped convolution (what the engine does)
    loop      grad of one client after another, on one stream
    streams   the same, each client on its own CUDA stream, so the graph runs the clients side by side
    batch     ONE model on all n*b images (a ceiling, not a method: the same work without per-client weights)

with cuDNN's autotuner off and on, TF32 convolutions on (PyTorch's default) and off, channels_last inputs, and more
clients in one step (n = 20, 40: runs stacked in one engine). A row: the median step time over replays (CUDA
events), images a second (2 forward+backward passes an image), the fraction of the FP32 peak, and the relative
difference (2-norm) of its gradients from the vmap step's in full FP32, eager. Kernel tables (torch.profiler, eager)
of the vmap and loop steps.

    --engine   the engine's own client training of one round (Speed.default, 1 epoch): whole `train` calls, calls
               cut to 2 and 24 steps, the replay of its captured step alone, profiler tables of an eager call
    --rounds   whole `paper` rounds at the profile's E=5, tau 0 (label ratio 1), per Speed variant (--variants);
               with --barrier DIR --parties N it waits, after its warm-up, until N processes have reached that
               point (runs sharing a GPU start their timed rounds together)
    --compile  torch.compile of the vmap and batch steps, captured, beside the eager-captured ones

Device call, from the repository root: `python3 scripts/gpu_step_probe.py [--engine | --rounds | --compile]` (each
under 2 minutes on an H200); with $OUT set it writes its tables there. `--smoke`: tiny sizes on the CPU (the
default mode checks that the loop and vmap gradients agree; with --engine or --rounds, those code paths without
CUDA).
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
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))   # bench.py beside this file

from semifl_core.config import profile  # noqa: E402
from semifl_core.models import make_model  # noqa: E402


def setup(n: int, b: int, dev, model_name: str = "wrn28x2", channels_last: bool = False, seed: int = 0):
    """The model, n clients' weights (the start weights plus a little noise each, so clients differ), their inputs."""
    torch.manual_seed(seed)
    cfg = profile("paper").replace(model=model_name)
    model = make_model(cfg, 3).to(dev).train()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    params = {k: (v.detach().unsqueeze(0) + 0.01 * torch.randn(n, *v.shape, device=dev)).contiguous()
              for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())
    x1 = torch.randn(n, b, 3, 32, 32, device=dev)
    x2 = torch.randn(n, b, 3, 32, 32, device=dev)
    if channels_last:
        x1 = x1.flatten(0, 1).contiguous(memory_format=fmt).unflatten(0, (n, b))
        x2 = x2.flatten(0, 1).contiguous(memory_format=fmt).unflatten(0, (n, b))
    y1 = torch.randint(0, 10, (n, b), device=dev)
    y2 = torch.randint(0, 10, (n, b), device=dev)
    return model, params, buffers, (x1, x2, y1, y2)


def step_fns(model, params, buffers, data, streams: int = 0):
    """name -> fn() writing every client's gradients into static tensors (returned by fn)."""
    x1, x2, y1, y2 = data
    n = x1.shape[0]

    def loss(p, a, b, ya, yb):   # SemiFL's client loss shape: two forwards, a CE each
        f = lambda x: functional_call(model, (p, buffers), (x,))   # noqa: E731
        return F.cross_entropy(f(a), ya) + F.cross_entropy(f(b), yb)

    g_one, g_all = grad(loss), vmap(grad(loss))
    out = {k: torch.zeros_like(v) for k, v in params.items()}

    def vmapped():
        g = g_all(params, x1, x2, y1, y2)
        for k, v in g.items():
            out[k].copy_(v)
        return out

    def client(c):
        g = g_one({k: v[c] for k, v in params.items()}, x1[c], x2[c], y1[c], y2[c])
        for k, v in g.items():
            out[k][c].copy_(v)

    def looped():
        for c in range(n):
            client(c)
        return out

    side = [torch.cuda.Stream() for _ in range(streams)] if streams else []

    def streamed():
        main = torch.cuda.current_stream()
        for c in range(n):
            s = side[c % len(side)]
            s.wait_stream(main)
            with torch.cuda.stream(s):
                client(c)
        for s in side:
            main.wait_stream(s)
        return out

    big_p = {k: v[0] for k, v in params.items()}
    big_out = {k: torch.zeros_like(v) for k, v in big_p.items()}

    def batched():   # one model on all n*b images: the same FLOPs without per-client weights
        g = g_one(big_p, x1.flatten(0, 1), x2.flatten(0, 1), y1.flatten(), y2.flatten())
        for k, v in g.items():
            big_out[k].copy_(v)
        return big_out

    fns = {"vmap": vmapped, "loop": looped, "batch": batched}
    if streams:
        fns["streams"] = streamed
    return fns


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


def rel_diff(out: dict, ref: dict) -> float:
    num = sum((out[k].double() - ref[k].double()).pow(2).sum() for k in ref)
    den = sum(ref[k].double().pow(2).sum() for k in ref)
    return float((num / den).sqrt())


def kernel_table(fn, top: int = 14) -> str:
    from torch.profiler import ProfilerActivity, profile as prof_ctx
    fn()
    torch.cuda.synchronize()
    with prof_ctx(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            name = e.name[:90]
            t, c = rows.get(name, (0.0, 0))
            rows[name] = (t + e.device_time, c + 1)
    total = sum(t for t, _ in rows.values())
    lines = [f"total GPU time {total / 1e3:.2f} ms in {sum(c for _, c in rows.values())} kernels"]
    for name, (t, c) in sorted(rows.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"{100 * t / total:5.1f} %  {t / 1e3:7.2f} ms  x{c:4d}  {name}")
    return "\n".join(lines)


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


def engine_breakdown(log, dev="cuda", name: str = "paper") -> dict:
    """The engine's client training of one `paper` round (CIFAR-10-shaped random images, tau 0, 1 epoch, Speed.default):
    whole train calls, calls cut to 2 and 24 steps, the replay of the engine's captured step alone (CUDA events), and
    profiler tables of a 6-step call, eager and captured. (per_step_ms, fixed_s: the 2- and 24-step calls' difference
    over 22 steps; it holds two more eager warm-up steps and the capture, so it is not the cost of a step: replay_ms
    is.)"""
    import bench
    from semifl_core import engine as engine_mod
    from semifl_core.engine import Speed
    from semifl_core.run import Experiment
    dev = torch.device(dev)
    cfg = profile(name).replace(threshold=0.0, local_epochs=1.0, engine="vectorized")
    data, _ = bench.bench_data(cfg, None, dev, synthetic=True)
    exp = Experiment(cfg, data, dev, Speed.default(dev))
    seen = {}
    train = exp.engine.train

    def spy(model, tasks, loss_fn, lr, states, *a, **k):
        seen.update(model=model, tasks=tasks, loss_fn=loss_fn, lr=lr, states=states)
        return train(model, bench._cut(tasks, 2), loss_fn, lr, states, *a, **k)
    exp.engine.train = spy
    exp.round(exp.new_state(), 0)
    del exp.engine.train
    tasks, args = seen["tasks"], (seen["loss_fn"], seen["lr"], seen["states"])
    out = {"clients": len(tasks), "steps": [t.steps for t in tasks], "batch": int(tasks[0].views["x"].shape[1])}
    log(f"engine: {out}")

    def timed(ts, eng=exp.engine):
        bench._sync(dev)
        t = time.perf_counter()
        eng.train(seen["model"], ts, *args)
        bench._sync(dev)
        return time.perf_counter() - t
    with captured_steps() as graphs:
        out["whole_s"] = [timed(tasks) for _ in range(2)]
        for s in (2, 24):
            out[f"cut{s}_s"] = [timed(bench._cut(tasks, s)) for _ in range(2)]
        out["per_step_ms"] = 1e3 * (min(out["cut24_s"]) - min(out["cut2_s"])) / 22
        out["fixed_s"] = min(out["cut2_s"]) - 2 * out["per_step_ms"] / 1e3
        if graphs and graphs[-1].graph is not None:
            out["replay_ms"] = time_replays(graphs[-1].graph)
        log(f"engine: {out}")
        eager = engine_mod.VectorizedEngine(exp.cfg, exp.mean, exp.std, dataclasses.replace(Speed.default(dev),
                                                                                           cuda_graphs=False))
        out["eager_cut24_s"] = [timed(bench._cut(tasks, 24), eager) for _ in range(2)]
        out["eager_per_step_ms"] = 1e3 * (min(out["eager_cut24_s"]) - timed(bench._cut(tasks, 2), eager)) / 22
        from torch.profiler import ProfilerActivity, profile as prof_ctx
        with prof_ctx(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            eager.train(seen["model"], bench._cut(tasks, 6), *args)
            bench._sync(dev)
        out["eager_table"] = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25,
                                                       max_name_column_width=70)
        with prof_ctx(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            exp.engine.train(seen["model"], bench._cut(tasks, 6), *args)
            bench._sync(dev)
        out["graph_table"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20,
                                                       max_name_column_width=70)
    return out


def speed_variant(name: str, dev):
    """A --variants name as an engine.Speed: baseline, default, or the default with switches turned on, each after a
    `+` (default+compile+masked_steps, or +compile for short). An unknown name or switch: one line naming it."""
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
    """A copy of state `start` that trains the given model object (its weights set to start's): every timed round of
    a variant trains the same object, so the steps its engine captured (and compiled) in the warm-up are reused, as in
    a run (the engine keeps them per model object; a deep copy per round would capture and compile them again)."""
    import copy

    from semifl_core.models import load_weights
    st = copy.deepcopy(start)
    load_weights(model, st.model.state_dict())
    st.model = model
    st.global_opt = torch.optim.SGD(model.parameters(), **{k: v for k, v in start.global_opt.defaults.items()
                                                           if k in ("lr", "momentum")})
    return st


def file_barrier(folder: str, parties: int, timeout: float) -> dict:
    """Waits until `parties` processes have each written their file in `folder` (this one's included), polling every
    50 ms, or until `timeout` seconds have passed: what a timed row records about it."""
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
    """Whole rounds at the profile's own E (tau 0: label ratio 1, every client sample trained on), from the same state,
    for each engine.Speed variant: wall time and phases of each timed round, and the replay time of the vectorized
    engine's captured step. No projection from fewer epochs: an 800-round run is 800 such rounds.

    Warm-up, untimed: short rounds (six steps a client, the sixth its first partial batch, so the padded step is
    captured and compiled there too), twice for a compiled variant (it recompiles on its second call); every round of
    a variant trains the same model object (fresh_state), so nothing is captured or compiled inside a timed round. A
    compiled variant still gets a third timed round, and the median of a variant's rounds is reported.

    barrier: None, or a function called once, after the first variant's warm-up and before its first timed round,
    whose dict goes into every row (file_barrier: processes sharing a GPU start timing together). Each row holds the
    wall clock (time.time()) of its round's start and end, so that such processes' overlap can be checked."""
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
# (median) take at most 0.90 of the default's; wide_passes joins when its median evaluation phase (time_sbn +
# time_eval) takes at most 0.80 of the default's and its median round no more than the default's (its float path is
# tested on the CPU; no CUDA tests of its own). masked_steps was decided on an H200 on 2026-11-28 and is part of the
# default since. Prints the variant (`default`, `default+compile`, ...) on stdout and the reasoning on stderr.
#
#     python3 scripts/gpu_step_probe.py --choose ROUNDS_LOG compile=TESTS_LOG
# ROUNDS_LOG holds `ROW {json}` lines from `gpu_step_probe.py --rounds`; each TESTS_LOG the pytest output of that
# switch's CUDA tests (a log with no pytest summary line, or with a FAILED or ERROR line, counts as failed).
# the most a switch's median round may take, as a share of the default's
RULE = {"compile": 0.90}
# the most a switch's median phase may take, as a share of the default's (its round: at most the default's)
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
    p.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU, eager only (seconds)")
    p.add_argument("--deadline", type=float, default=300.0, help="seconds for everything (default 300)")
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.add_argument("--engine", action="store_true", help="only the engine's breakdown (engine_breakdown)")
    p.add_argument("--rounds", action="store_true", help="only whole rounds per Speed variant (round_compare)")
    p.add_argument("--variants", default="baseline,default", help="--rounds: the Speed variants, comma-separated: "
                   "baseline, default, or default with switches on (default+compile+masked_steps, or +compile)")
    p.add_argument("--barrier", help="--rounds: a folder shared by --parties processes; each waits there after its "
                   "warm-up until all have arrived, then times its rounds")
    p.add_argument("--parties", type=int, default=1, help="--barrier: how many processes meet there (default 1)")
    p.add_argument("--barrier-timeout", type=float, default=60.0, help="--barrier: seconds to wait before timing "
                   "alone, which the rows then say (default 60)")
    p.add_argument("--compile", action="store_true", help="only torch.compile (inductor) of the vmap and batch steps, "
                   "captured, beside the eager-captured ones")
    args = p.parse_args(argv)
    start = time.monotonic()
    rows, texts = [], {}
    out = Path(args.out) if args.out else None

    def log(text):
        print(f"[{time.monotonic() - start:5.0f} s] {text}", file=sys.stderr, flush=True)

    def save():
        if out is None:
            return
        out.mkdir(parents=True, exist_ok=True)
        (out / "probe.json").write_text(json.dumps(rows, indent=1))
        (out / "probe.md").write_text(table(rows))
        (out / "kernels.txt").write_text("\n\n".join(f"## {k}\n{v}" for k, v in texts.items()))

    if args.smoke and not (args.engine or args.rounds):   # CPU: the formulations agree (no graphs)
        model, params, buffers, data = setup(3, 2, "cpu", model_name="cnn")
        fns = step_fns(model, params, buffers, data)
        ref = {k: v.clone() for k, v in fns["vmap"]().items()}
        loop = fns["loop"]()
        rows.append({"variant": "loop vs vmap (cpu)", "rel_diff": rel_diff(loop, ref)})
        print(table(rows))
        save()
        return 0

    if args.rounds:
        barrier = (lambda: file_barrier(args.barrier, args.parties, args.barrier_timeout)) if args.barrier else None
        rows.extend(round_compare(log, "cpu" if args.smoke else "cuda", "smoke" if args.smoke else "paper",
                                  variants=args.variants.split(","), barrier=barrier))
        keys = ["variant", "round_s", "time_clients", "time_sbn", "time_server", "time_eval", "client_img_s",
                "replay_ms", "800_rounds_h", "client_samples", "label_ratio"]
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for r in rows:
            lines.append("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, ""))
                                           for k in keys) + " |")
        texts["rounds"] = "\n".join(lines)
        print(texts["rounds"])
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "rounds.json").write_text(json.dumps(rows, indent=1))
            (out / "rounds.md").write_text(texts["rounds"] + "\n")
        return 0
    if args.engine:
        res = engine_breakdown(log, "cpu" if args.smoke else "cuda", "smoke" if args.smoke else "paper")
        for key in ("eager_table", "graph_table"):
            texts[key] = res.pop(key, "")
        rows.append({"variant": "engine breakdown", **res})
        print("\n\n".join(f"## {k}\n{v}" for k, v in texts.items()))
        print(json.dumps(res, indent=1))
        save()
        return 0
    dev = torch.device("cuda")
    log(f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    from semifl_core import bench
    per_image = bench.model_flops_per_sample(profile("paper"), (3, 32, 32), dev)   # forward + backward
    peak = bench.peak_flops(dev)[0]
    b = 10

    def measure(label, n, names, autotune: bool, tf32: bool = True, cl: bool = False, compiled: bool = False):
        torch.backends.cudnn.benchmark = autotune
        torch.backends.cudnn.allow_tf32 = tf32
        model, params, buffers, data = setup(n, b, dev, channels_last=cl)
        if cl:
            model = model.to(memory_format=torch.channels_last)
        fns = step_fns(model, params, buffers, data, streams=n)
        with torch.backends.cudnn.flags(enabled=True, benchmark=False, deterministic=False, allow_tf32=False):
            ref = {k: v.clone() for k, v in fns["vmap"]().items()}   # FP32 eager reference
        for name in names:
            variant = f"{label}: {name}" + (" (torch.compile)" if compiled else "")
            if time.monotonic() - start > args.deadline:
                rows.append({"variant": variant, "note": "skipped: deadline"})
                continue
            t = time.monotonic()
            try:
                g, res = captured(torch.compile(fns[name]) if compiled else fns[name])
                ms = time_replays(g)
                diff = rel_diff(res, ref) if name != "batch" else float("nan")
                imgs = n * b * 2
                rows.append({"variant": variant, "n": n, "b": b, "cudnn_benchmark": autotune, "tf32": tf32,
                             "channels_last": cl, "step_ms": ms, "img_s": imgs / ms * 1e3,
                             "fp32_peak_pct": 100 * imgs * per_image / (ms * 1e-3) / peak,
                             "rel_diff_vs_fp32_vmap": diff, "measure_s": time.monotonic() - t})
                del g
            except Exception as err:
                rows.append({"variant": variant, "note": f"failed after {time.monotonic() - t:.0f} s: "
                             f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"})
            log(rows[-1])
            save()
            torch.cuda.empty_cache()
        return model, params, buffers, data, fns

    if args.compile:
        for compiled in (False, True):
            measure("n=10", 10, ["vmap", "batch"], autotune=False, compiled=compiled)
        print(table(rows))
        return 0
    # 1. the four formulations, n = 10 (the paper's active clients), autotuner off (today) and on
    measure("n=10", 10, ["vmap", "loop", "streams", "batch"], autotune=False)
    _, _, _, _, fns = measure("n=10 +benchmark", 10, ["vmap", "loop", "streams", "batch"], autotune=True)
    # 2. where the time goes (eager, autotuner on)
    for name in ("vmap", "loop"):
        try:
            texts[f"{name}, n=10, eager, cudnn.benchmark"] = kernel_table(fns[name])
        except Exception as err:
            texts[name] = f"profiler failed: {err}"
        save()
    log("kernel tables done")
    # 3. TF32 off; channels_last
    measure("n=10 +benchmark -tf32", 10, ["vmap", "streams"], autotune=True, tf32=False)
    measure("n=10 +benchmark +channels_last", 10, ["vmap", "streams"], autotune=True, cl=True)
    # 4. several runs stacked in one step
    for n in (20, 40):
        measure(f"n={n} +benchmark", n, ["vmap", "streams"], autotune=True)
    print("\n\n".join(f"## {k}\n{v}" for k, v in texts.items()))
    print(table(rows))
    save()
    return 0


def table(rows) -> str:
    nan = float("nan")
    head = ("| variant | step ms | img/s (2 passes) | of FP32 peak | rel. diff vs FP32 vmap | note |\n"
            "|---|---|---|---|---|---|")
    body = [f"| {r['variant']} | {r.get('step_ms', nan):.2f} | {r.get('img_s', nan):,.0f} | "
            f"{r.get('fp32_peak_pct', nan):.1f} % | {r.get('rel_diff', r.get('rel_diff_vs_fp32_vmap', nan)):.1e} | "
            f"{r.get('note', '')} |" for r in rows]
    return "\n".join([head, *body]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
