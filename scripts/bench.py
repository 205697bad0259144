"""The measurements behind BENCHMARKS.md: outside the package (no default path runs them), one file.

    python scripts/bench.py engines --profile small   # sequential vs vectorized engine, same rounds, one process
    python scripts/bench.py inference                  # evaluation images/s
    python scripts/bench.py gpu --profile paper        # per engine.Speed variant, one round each (a CPU too)
    python scripts/bench.py [--smoke]                  # `make bench-gpu`: everything below, one table

`make bench-gpu` is the GPU measurement in one process, one markdown table. On a fresh H100 or H200 machine it runs in
under 8 minutes (a global deadline, default 440 s, skips the parts it cannot fit and says so) and measures, from the
same state and round for every variant, Speed.baseline() (no switch), each switch alone (or with those it needs), all
together (bf16 included) and Speed.default (every switch that keeps the results):

1. `paper` profile (WRN-28-2, N_S=250, E=5), CIFAR-10-shaped random images (the work does not depend on the pixels;
   CIFAR-10 itself is not carried), with kernel counts;                                          budget 130 s
2. K runs at once on the GPU (K = 1, 2, 4, 8 processes, one run each, Speed.default): `small` runs per hour and
   `paper` rounds per hour;                                                                        budget 130 s
3. `paper` profile on real Fashion-MNIST;                                                         budget  90 s
4. `small` profile (the CNN) on real Fashion-MNIST, with kernel counts;                           budget  45 s
and prints the table last (rows in the order 1, 3, 4, 2) with an 800-round `paper` projection. A part starts no variant
that would pass its budget or the global deadline (its row says "skipped").

How a round is made comparable and affordable (every row says so):
- Label ratio 1: the bench sets tau to 0, so every client sample passes and is trained on, the most client work a round
  can have (a real run reaches 0.7 by round 15 on Fashion-MNIST, BENCHMARKS.md); timing only: accuracy means nothing.
- Client epochs: the clients train 1 epoch in the measured round (the paper's E is 5); client training and augmentation
  scale with the steps, the other phases do not, so the projected round is the measured one + (client training +
  augmentation) x (5 - 1), and an 800-round run 800 such rounds. An upper bound: a `train` call's fixed costs (its first
  eager step, the warm-up steps and the CUDA graph capture, about 0.8 s of a `paper` round on an H200) are paid once a
  round, not once an epoch; on the H200 the projection put the default's E=5 client training at 8.2 s against a measured
  6.05-6.19 s. `scripts/gpu_step_probe.py --rounds` measures whole E=5 rounds (BENCHMARKS.md, "H100 switch table").
- K runs: the `small` runs train 1 epoch at tau 0, the client work of E=5 at a label ratio of 0.2 (not projected); the
  `paper` runs train 0.5 epochs, projected to 5 as above. Process start-up is reported apart, not counted.

Data: Fashion-MNIST travels in .gl-data/ of the working tree (git-ignored, 30 MB; --data-root), named in the carry:

    mkdir -p .gl-data/FashionMNIST/raw && cp /usr/share/datasets/fashion-mnist/*.gz .gl-data/FashionMNIST/raw/

Without it the script says so, skips part 3, runs part 4 on random images of its shape, and goes on.

The device call (the `run` tool), from the repository root:

    command: python3 scripts/bench.py       carry: [".gl-data"]       timeout_s: 540

It prints progress lines on stderr, then the table; with $OUT set it also writes $OUT/bench_gpu.md (the table) and
$OUT/bench_gpu.json (every number). `--smoke`: tiny sizes on any device (the CPU here), seconds; the test suite runs it.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import gc
import itertools
import json
import math
import os
import platform
import re
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # the working tree's package, also in the spawned K-run processes
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
os.environ.setdefault("SEMIFL_OFFLINE", "1")   # the device machine has no network: a missing set is said at once

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from semifl_core.config import ConfigError  # noqa: E402
from semifl_core.data import DataError, Dataset, load  # noqa: E402
from semifl_core.engine import Speed  # noqa: E402
from semifl_core.models import make_model  # noqa: E402
from semifl_core.run import Experiment, pick_device  # noqa: E402

# Forward+backward passes per client sample in one local step, by loss (fixmatch's weak pass: no backward, 1/3).
PASSES = {"fix-mix": 2.0, "fix": 1.0, "fixmatch": 1 + 1 / 3, "sup": 1.0}
MODEL_PHASES = ("time_sbn", "time_pseudo_label", "time_clients", "time_server", "time_eval")
# Dense FP32 peaks without tensor cores (FLOP/s), from NVIDIA's datasheets ("FP32 67 teraFLOPS" for the H100/H200 SXM),
# matched against torch.cuda.get_device_name in this order (an H100 SXM calls itself "NVIDIA H100 80GB HBM3").
FP32_PEAK = {"H100 PCIe": 51.2e12, "H100 NVL": 60e12, "H100": 67e12, "H200 NVL": 60e12, "H200": 67e12,
             "A100": 19.5e12}


def peak_flops(device: torch.device) -> tuple[float, str]:
    """Dense FP32 peak of the device (FLOP/s) and how it was obtained."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, value in FP32_PEAK.items():
            if key in name:
                return value, f"{name}: FP32 dense {value / 1e12:.1f} TFLOP/s (NVIDIA's datasheet for the {key})"
        return float("nan"), f"{name}: peak unknown"
    mhz, flags = 0.0, ""
    try:
        info = open("/proc/cpuinfo").read()
        mhz = max(float(line.split(":")[1]) for line in info.splitlines() if line.startswith("cpu MHz"))
        flags = next(line for line in info.splitlines() if line.startswith("flags"))
    except (OSError, ValueError, StopIteration):
        pass
    per_cycle = 64 if "avx512f" in flags else 32 if "fma" in flags else 8   # FP32 FLOP/cycle/core with FMA
    cores = torch.get_num_threads()
    peak = cores * mhz * 1e6 * per_cycle
    return peak, f"{cores} threads x {mhz:.0f} MHz x {per_cycle} FP32 FLOP/cycle (estimate)"


def model_flops_per_sample(cfg, shape, device) -> float:
    model = make_model(cfg, shape[0]).to(device).train()
    x = torch.randn(cfg.client_batch, *shape, device=device)
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    return counter.get_total_flops() / cfg.client_batch


def synthetic_like(name: str, shape, num_classes: int, n_train: int, n_test: int) -> Dataset:
    """Random images of a real dataset's shape, for timing only (accuracy is meaningless)."""
    g = torch.Generator().manual_seed(0)
    return Dataset(name, torch.randint(0, 256, (n_train, *shape), dtype=torch.uint8, generator=g),
                   torch.randint(0, num_classes, (n_train,), generator=g),
                   torch.randint(0, 256, (n_test, *shape), dtype=torch.uint8, generator=g),
                   torch.randint(0, num_classes, (n_test,), generator=g), num_classes)


def bench_data(cfg, data_root, device, synthetic_shape: str | None = None, synthetic: bool = False):
    """(Dataset on device, where it came from): the real files if found (and not `synthetic`), else random images of
    `synthetic_shape` (CxHxW; default the dataset's own shape), for timing only."""
    if not synthetic:
        try:
            return load(cfg.dataset, data_root, device), f"{cfg.dataset} (real files)"
        except DataError as err:
            why = f" ({' '.join(str(err).split())[:160]})"
    else:
        why = ""
    from semifl_core.config import IMAGE_SHAPE, TRAIN_SIZE
    shape = tuple(int(s) for s in synthetic_shape.split("x")) if synthetic_shape else IMAGE_SHAPE[cfg.dataset]
    data = synthetic_like(cfg.dataset, shape, cfg.num_classes, TRAIN_SIZE[cfg.dataset], 10000).to(device)
    return data, (f"SYNTHETIC random data shaped like {cfg.dataset} {'x'.join(map(str, shape))}"
                  + (f", the real set is absent{why}" if not synthetic else "") + ": timings only")


def client_images(cfg, m: dict) -> float:
    """Forward+backward passes of a round's client training (metrics row m), by the clients' loss (PASSES)."""
    kind = "fix-mix" if cfg.mix_loss and cfg.global_pseudo_labels else "fix" if cfg.global_pseudo_labels \
        else "fixmatch"
    return m.get("client_samples", 0) * PASSES[kind]


def bench(cfg, rounds: int = 2, device="auto", data_root=None, synthetic_shape: str | None = None,
          warmup: int = 5) -> pd.DataFrame:
    device = pick_device(device)
    data, source = bench_data(cfg, data_root, device, synthetic_shape)
    flops = model_flops_per_sample(cfg, data.shape, device)
    peak, peak_note = peak_flops(device)
    print(f"engines: {cfg.model} on {source}; device {device}; torch {torch.__version__}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads")
    print(f"config: N_S={cfg.num_supervised}, {cfg.num_clients} clients, {cfg.num_active} active, "
          f"E={cfg.local_epochs}, client batch {cfg.client_batch}, server batch {cfg.server_batch}, T={cfg.rounds}; "
          f"model {flops / 3 / 1e6:.1f} MFLOP forward per image; {warmup} untimed warm-up rounds")
    warm = Experiment(cfg.replace(engine="vectorized"), data, device)
    start = warm.new_state()
    for r in range(warmup):
        warm.round(start, r)
    rows = []
    for engine in ("sequential", "vectorized"):
        c = cfg.replace(engine=engine)
        exp = Experiment(c, data, device)
        st = copy.deepcopy(start)
        for r in range(warmup, warmup + rounds):
            t = time.perf_counter()
            m = exp.round(st, r)
            if device.type == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - t
            model_time = sum(m.get(k, 0.0) for k in MODEL_PHASES)
            images = client_images(c, m)
            rows.append({"engine": engine, "round": r + 1, "wall_s": wall, "client_samples": m.get("client_samples", 0),
                         **{k[5:] + "_s": m.get(k, 0.0) for k in (*MODEL_PHASES, "time_augment", "time_aggregate")},
                         "client_img_per_s": images / max(m.get("time_clients", 0.0), 1e-9),
                         "client_TFLOP_per_s": images * flops / max(m.get("time_clients", 0.0), 1e-9) / 1e12,
                         "outside_model_share": 1 - model_time / wall})
    df = pd.DataFrame(rows)
    df["peak_fraction"] = df.client_TFLOP_per_s * 1e12 / peak
    mean = df.groupby("engine", sort=False).mean(numeric_only=True).drop(columns="round")
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.precision", 3):
        print(df.to_string(index=False))
        print("\nmean per round:")
        print(mean.T.to_string())
    seq, vec = mean.loc["sequential"], mean.loc["vectorized"]
    print(f"\nvectorized vs sequential: round {seq.wall_s / vec.wall_s:.2f}x faster, client training "
          f"{seq.clients_s / max(vec.clients_s, 1e-9):.2f}x faster; peak: {peak_note}")
    print(f"projected {cfg.rounds}-round run with the vectorized engine: {vec.wall_s * cfg.rounds / 60:.1f} min "
          f"(from rounds {warmup + 1}-{warmup + rounds}; later rounds have more confident pseudo-labels and cost more)")
    return df


def inference_bench(cfg, data: Dataset, batch_sizes=(64, 250, 1000), repeats: int = 3, device="cpu") -> pd.DataFrame:
    """Test-set images/s of the global model's evaluation (eval mode, sBN statistics of the server's data), unfolded and
    folded (models.folded), per batch size, best of `repeats`; prints how far their outputs differ."""
    from semifl_core.models import folded, predict
    dev = pick_device(device)
    exp = Experiment(cfg, data, dev)
    st = exp.new_state()
    exp.refresh_sbn(st.model)
    x, rows = data.x_test, []
    for bs in batch_sizes:
        for name, model in (("unfolded", st.model), ("folded", folded(st.model))):
            best = min(_timed(lambda: predict(model, x, exp.mean, exp.std, bs)) for _ in range(repeats))
            rows.append({"batch": bs, "model": name, "images/s": len(x) / best})
    plain, fast = predict(st.model, x, exp.mean, exp.std), predict(folded(st.model), x, exp.mean, exp.std, 64)
    print(f"largest |p_folded - p|: {(plain - fast).abs().max().item():.1e}; argmax equal on "
          f"{100 * (plain.argmax(1) == fast.argmax(1)).float().mean().item():.2f} % of {len(x)} test images")
    return pd.DataFrame(rows).pivot(index="batch", columns="model", values="images/s").round(0)


# ====================================================================== where a step's time goes
# `scripts/bench.py gpu` and `make bench-gpu`: per engine and Speed variant a warm and a timed round (measure_round)
LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
               "cudaLaunchCooperativeKernel")
HOST_READS = ("item", "cpu", "tolist", "numpy")   # on a CPU: the calls at which a GPU would make the host wait
PHASES = ("sbn", "pseudo_label", "augment", "clients", "aggregate", "server", "eval", "prepare")


# Switches a bench measures on a GPU only: on a CPU, torch.compile's compile (minutes on a loaded 2-core machine, and
# its tracing inside a profiled window) would be the whole row. The tests check compile's results on the CPU.
MEASURED_ON_GPU_ONLY = ("compile",)


def speed_variants(device) -> list[tuple[str, object]]:
    """(name, engine.Speed) pairs, in this order: the baseline; Speed.default(device) where it differs from the next;
    all switches this device runs ("all"; a CPU: not MEASURED_ON_GPU_ONLY); each switch alone ("+cuda_graphs") or with
    the fewest others it needs. One the device cannot run (Speed.check) stays, its row saying why."""
    def runs(speed) -> bool:
        try:
            speed.check(device)
            return True
        except ConfigError:
            return False
    base = Speed.baseline()
    switches = [f.name for f in dataclasses.fields(Speed) if getattr(base, f.name) is False]
    out = [("baseline", base)]
    for name in switches:
        alone = dataclasses.replace(base, **{name: True})
        others = [o for o in switches if o != name]
        need = next((list(c) for k in range(len(others) + 1) for c in itertools.combinations(others, k)
                     if runs(dataclasses.replace(alone, **{o: True for o in c}))), [])
        out.append(("+" + "+".join(need + [name]), dataclasses.replace(alone, **{o: True for o in need})))
    ok = {n for _, v in out[1:] if runs(v) for n in switches if getattr(v, n)}   # the switches this device runs
    if device.type != "cuda":
        ok -= set(MEASURED_ON_GPU_ONLY)
    together = dataclasses.replace(base, **{n: True for n in ok})
    default = Speed.default(device)   # first after the baseline: what a deadline must not skip
    return out[:1] + ([("default", default)] if default not in (base, together) else []) + [("all", together)] + out[1:]


def _cut(tasks, steps: int, through_partial: bool = False) -> list:
    """Each task's first `steps` steps; through_partial: its first steps - 1 and then its first partial step (a last
    batch of an epoch), if it has one, so that a warm-up also runs (captures, compiles) the padded step."""
    from semifl_core.tasks import Task
    out = []
    for t in tasks:
        keep = np.arange(min(steps, t.steps))
        partial = np.flatnonzero(t.size < t.size.max()) if through_partial else []
        if len(partial) and len(keep):
            keep = np.append(keep[:-1], partial[0]) if partial[0] >= len(keep) else keep
        out.append(Task({k: v[keep] for k, v in t.views.items()}, t.size[keep]))
    return out


@contextmanager
def short_client_training(exp, device, counts: dict | None = None, steps=(2, 6), through_partial: bool = False):
    """For rounds of exp in the block: client training runs only each task's first steps[1] steps (an untimed warm
    round); through_partial: the last of them its first partial step, if any, so masked_steps' padded step is captured
    and compiled there, not in a timed round. With `counts`, one more unprofiled training (a compiled step recompiles on
    its second call, when the learning rate turns dynamic: outside the counted window), then two profiled ones of
    steps[0] and steps[1] steps: counts gets the ops per client step between them (op_counts; fewer steps than steps[0]:
    the whole short training's). Negative counts (tracing or warming in the window) are dropped with a note."""
    train = exp.engine.train

    def short(model, tasks, loss_fn, lr, states, *args, **kwargs):
        if not tasks:
            return train(model, tasks, loss_fn, lr, states, *args, **kwargs)
        s2 = min(steps[1], min(t.steps for t in tasks))
        s1 = steps[0] if steps[0] < s2 else 0
        out = train(model, _cut(tasks, s2, through_partial), loss_fn, lr, states, *args, **kwargs)
        if counts is not None:
            def ops(s):
                return op_counts(lambda: train(model, _cut(tasks, s), loss_fn, lr, states, *args, **kwargs), device)
            try:
                train(model, _cut(tasks, s2), loss_fn, lr, states, *args, **kwargs)
                a, b = ops(s1) if s1 else None, ops(s2)
                per = {k: (v - (a[k] if a else 0)) / (len(tasks) * (s2 - s1)) for k, v in b.items()}
                if min(per.values(), default=0) < 0:
                    raise RuntimeError(f"negative op counts {per}: the shorter training did more work")
                counts.update(per)
                counts["raw"] = {**b, "client_steps": len(tasks) * s2}
            except Exception as err:   # the profiler itself (CUPTI) failed, or the counts make no sense: no counts
                counts["error"] = f"{type(err).__name__}: {' '.join(str(err).split())[:160]}"
        return out
    exp.engine.train = short
    try:
        yield
    finally:
        del exp.engine.train


def op_counts(fn, device) -> dict:
    """Run fn under torch.profiler. CUDA: {"launches": host calls that launch GPU work (LAUNCH_APIS: a replayed CUDA
    graph is one), "kernels": kernels the GPU ran}; CPU: {"aten_ops": aten ops without an aten op inside}."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    cuda = device.type == "cuda"
    if not cuda:   # the profiler's complaint that this CPU machine has no GPU driver
        os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        fn()
        if cuda:
            torch.cuda.synchronize(device)
    events = prof.events()
    if cuda:
        return {"launches": sum(e.name in LAUNCH_APIS or e.name.startswith(("cudaLaunch", "cuLaunch")) for e in events),
                "kernels": sum(e.device_type == DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))
                               for e in events)}
    return {"aten_ops": sum(e.name.startswith("aten::") and not any(c.name.startswith("aten::") for c in e.cpu_children)
                            for e in events)}


@contextmanager
def host_syncs(device):
    """Counts the block's host-device syncs in the yielded list's one element (set at the end): on CUDA those torch's
    sync debug mode reports (.item(), .cpu(), nonzero, ...; not an explicit torch.cuda.synchronize); on a CPU, where
    nothing waits, the calls at which a GPU would make the host wait (HOST_READS)."""
    count = [0]
    if device.type == "cuda":
        before = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                yield count
            finally:
                torch.cuda.set_sync_debug_mode(before)
                count[0] = sum("synchroniz" in str(w.message) for w in seen)
        return
    own = {name: torch.Tensor.__dict__.get(name) for name in HOST_READS}

    def counting(f):
        def call(self, *args, **kwargs):
            count[0] += 1
            return f(self, *args, **kwargs)
        return call
    for name in HOST_READS:
        setattr(torch.Tensor, name, counting(getattr(torch.Tensor, name)))
    try:
        yield count
    finally:
        for name, f in own.items():
            if f is None:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, f)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_round(exp, start, r: int, flops: float, peak: float, scale: float = 1.0, count: bool = True) -> dict:
    """From a copy of state `start`: an untimed warm round r (short_client_training, profiled if `count`), then round r
    timed from another copy. Returns the row: wall and phase times, client images/s and FLOP/s, the fraction of `peak`,
    ops per client step, host syncs, GPU peak memory, the round projected to `scale` times the client epochs."""
    device, counts = exp.device, {}
    with short_client_training(exp, device, counts if count else None):
        exp.round(copy.deepcopy(start), r)
    st = copy.deepcopy(start)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _sync(device)
    with host_syncs(device) as syncs:
        t = time.perf_counter()
        m = exp.round(st, r)
        _sync(device)
        wall = time.perf_counter() - t
    clients = m.get("time_clients", 0.0)
    images = client_images(exp.cfg, m)
    row = {"round_s": wall, **{f"{p}_s": m.get(f"time_{p}") for p in PHASES},
           "client_samples": m.get("client_samples", 0), "label_ratio": m.get("label_ratio"),
           "client_img_s": images / clients if clients else float("nan"),
           "syncs_per_round": syncs[0], "profiled": counts.get("raw"),
           **{f"{k}_per_client_step": v for k, v in counts.items() if k not in ("error", "raw")}}
    if "error" in counts:
        row["note"] = f"no op counts: {counts['error']}"
    elif device.type == "cuda" and count and not counts.get("kernels"):
        row["note"] = "the profiler saw no GPU kernel (CUPTI missing?)"
    row["peak_fraction"] = row["client_img_s"] * flops / peak
    row["projected_round_s"] = wall + (clients + m.get("time_augment", 0.0)) * (scale - 1)
    if device.type == "cuda":
        row["gpu_peak_gib"] = torch.cuda.max_memory_reserved(device) / 2 ** 30
    return row


def gpu_profile(cfg, device="auto", data_root=None, *, synthetic: bool = False, synthetic_shape=None,
                engines=("sequential", "vectorized"), variants=None, threshold: float | None = 0.0,
                client_epochs: float | None = None, warmup: int = 0, count: bool = True, deadline: float | None = None,
                part: str = "", data=None, source: str = "") -> list[dict]:
    """Where a step's time goes: per engine and engine.Speed variant (speed_variants, or the names in `variants`), one
    round of cfg by measure_round from the same state. `threshold` 0 (the default): label ratio 1 (module docstring);
    None keeps cfg's. `client_epochs`: the clients' E instead of cfg's (rows project to cfg's E). `deadline`: a variant
    that would end after this time.monotonic() (judged by the last one's time) is skipped with a note; a failing one is
    a row with the error as its note. `data`, `source`: a Dataset already on the device and its origin."""
    device = pick_device(device)
    bench_cfg = cfg.replace(**({} if threshold is None else {"threshold": threshold}),
                            **({} if client_epochs is None else {"local_epochs": client_epochs}))
    if data is None:
        data, source = bench_data(cfg, data_root, device, synthetic_shape, synthetic)
    flops = model_flops_per_sample(cfg, data.shape, device)
    peak, peak_note = peak_flops(device)
    pairs = [(n, v) for n, v in speed_variants(device) if variants is None or n in variants]
    start = Experiment(bench_cfg, data, device).new_state()
    if warmup:   # untimed rounds (the device's default speed) that bring pseudo-labels, for a threshold above 0
        warm = Experiment(bench_cfg.replace(engine=engines[-1]), data, device)
        for r in range(warmup):
            warm.round(start, r)
        del warm
    base = {"part": part, "data": source, "model": cfg.model, "profile_rounds": cfg.rounds, "threshold":
            bench_cfg.threshold, "client_epochs": bench_cfg.local_epochs, "epochs": cfg.local_epochs,
            "mflop_per_image": flops / 3 / 1e6, "peak": peak_note, "device": str(device)}
    rows, last = [], 0.0
    for engine in engines:
        for name, speed in pairs:
            row = {**base, "engine": engine, "speed": name}
            if deadline is not None and time.monotonic() + last > deadline:
                rows.append({**row, "note": "skipped: not enough time left before the deadline"})
                continue
            gpu_only = [n for n in MEASURED_ON_GPU_ONLY if getattr(speed, n)]
            if gpu_only and device.type != "cuda":
                rows.append({**row, "note": f"not run: {', '.join(gpu_only)} is measured on a GPU only (on a CPU its "
                                            "compile time would be the row)"})
                continue
            if name == "all" and device.type != "cuda":
                row["note"] = f"every switch this device runs but {', '.join(MEASURED_ON_GPU_ONLY)} (GPU only)"
            t = time.monotonic()
            try:
                exp = Experiment(bench_cfg.replace(engine=engine), data, device, speed)
                row.update(measure_round(exp, start, warmup, flops, peak, cfg.local_epochs / bench_cfg.local_epochs,
                                         count))
            except ConfigError as err:   # a switch this device cannot run (bf16 without it, CUDA graphs on a CPU)
                row["note"] = f"not run: {err}"
            except Exception as err:     # noted, and the other variants go on: the device's minutes are few
                row["note"] = f"failed: {type(err).__name__}: {' '.join(str(err).split())[:200]}"
            finally:   # the variant's engine (its CUDA graphs, its buffers) goes before the next one is built
                exp = None
                gc.collect()
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            last = time.monotonic() - t
            row["measure_s"] = last
            rows.append(row)
    for row in rows:   # the same engine's baseline (the code before the speed switches), to compare with
        ref = next((r for r in rows if r["engine"] == row["engine"] and r["speed"] == "baseline"
                    and "client_img_s" in r), None)
        if ref is not None and "client_img_s" in row:
            row["vs_baseline"] = row["client_img_s"] / ref["client_img_s"]
            row["round_vs_baseline"] = ref["round_s"] / row["round_s"]
    return rows


# ---------------------------------------------------------------------- several runs on one GPU
def _grid_worker(index: int, device: str, specs: dict, commands, results) -> None:
    """One of grid_throughput's processes (one run each, as run_all's workers): builds and warms each spec's run once
    (start-up, reported apart), then per command (spec name, rounds) trains a fresh run (seed: index) and reports it."""
    try:
        torch.set_num_threads(1)   # as run_all's workers
        dev, t0, exps = pick_device(device), time.time(), {}
        for name, spec in specs.items():
            cfg = spec["cfg"].replace(seed=index)
            data, _ = bench_data(cfg, spec.get("data_root"), dev, None, spec.get("synthetic", False))
            exps[name] = exp = Experiment(cfg, data, dev, spec.get("speed"))
            with short_client_training(exp, dev):
                exp.round(exp.new_state(), 0)
        _sync(dev)
        results.put(("ready", index, time.time() - t0))
        for name, rounds in iter(commands.get, None):
            exp = exps[name]
            st = exp.new_state()
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats(dev)
            start = time.time()
            metrics = [exp.round(st, r) for r in range(rounds)]
            _sync(dev)
            results.put(("done", index, name, start, time.time(), metrics,
                         torch.cuda.max_memory_reserved(dev) if dev.type == "cuda" else None))
    except BaseException as err:
        results.put(("error", index, f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"))


def grid_throughput(specs: dict, ks=(1, 2, 4, 8), device="auto", deadline: float | None = None) -> list[dict]:
    """K runs at once on one device, each in its own process (as run_all with runs_per_gpu=K), for K in ks. specs: name
    -> {"cfg", "rounds" (timed rounds a run), "scale" (as in measure_round), "label", "synthetic"/"data_root", "speed"
    (engine.Speed or None), "speed_name"}. Processes start as the first spec's K needs them, each building and warming
    every spec once (start-up, reported apart); then per spec and K, K of them train a fresh run each for `rounds`
    rounds at once. A row per (spec, K): a run's mean round time, measured and projected; the K runs' rounds and whole
    runs per hour together; the ratio to K=1; the largest GPU peak beside workers.run_memory's estimate. `deadline`: as
    gpu_profile's, judged by the last K's time doubled."""
    import multiprocessing as mp
    from queue import Empty

    from semifl_core.workers import run_memory
    dev = pick_device(device)
    ctx = mp.get_context("spawn")
    results, commands, procs, startup, rows = ctx.Queue(), [], [], [], []

    def wait(n: int, what: str) -> list:
        got = []
        while len(got) < n:
            left = None if deadline is None else max(0.01, deadline - time.monotonic() + 30)   # and some grace
            try:
                msg = results.get(timeout=left)
            except Empty:
                raise TimeoutError(f"stopped at the deadline while {what}") from None
            if msg[0] == "error":
                raise RuntimeError(f"process {msg[1]}: {msg[2]}")
            got.append(msg)
        return got

    def grow(k: int) -> None:   # processes k-1 and below, started and warm
        while len(procs) < k:
            commands.append(ctx.Queue())
            procs.append(ctx.Process(target=_grid_worker, args=(len(procs), str(dev), specs, commands[-1], results),
                                     daemon=True))
            procs[-1].start()
        if len(startup) < k:
            startup.extend(m[2] for m in wait(k - len(startup), f"{k} processes started"))
    try:
        for name, spec in specs.items():
            cfg, last, one = spec["cfg"], 0.0, None
            for k in ks:
                row = {"part": f"K at once: {spec['label']}", "engine": cfg.resolved_engine(dev.type),
                       "speed": f"K={k}" + (f" ({spec['speed_name']})" if spec.get("speed_name") else ""), "K": k,
                       "profile_rounds": cfg.rounds, "about": f"{cfg.model} on {cfg.dataset}"
                       f"{' (random images)' if spec.get('synthetic') else ''}, threshold {cfg.threshold:g}, "
                       f"{cfg.local_epochs:g} client epochs" + (f", projected x{spec['scale']:g}"
                                                                 if spec.get("scale", 1) != 1 else "")
                       + f", {spec['rounds']} rounds a run"}
                if deadline is not None and time.monotonic() + 2 * last > deadline:
                    rows.append({**row, "note": "skipped: not enough time left before the deadline"})
                    continue
                grow(k)
                t = time.monotonic()
                for i in range(k):
                    commands[i].put((name, spec["rounds"]))
                done = wait(k, f"{k} runs of {name} trained")
                last = time.monotonic() - t
                measured, projected = [], []
                for _, _, _, start, end, metrics, _ in done:
                    grows = sum(m.get("time_clients", 0.0) + m.get("time_augment", 0.0) for m in metrics)
                    measured.append((end - start) / len(metrics))
                    projected.append(measured[-1] + grows / len(metrics) * (spec.get("scale", 1.0) - 1))
                mean = float(np.mean(projected))
                row.update(round_s=float(np.mean(measured)), projected_round_s=mean, rounds_per_h=3600 * k / mean,
                           runs_per_h=3600 * k / mean / cfg.rounds, startup_s=max(startup),
                           wall_s=max(d[4] for d in done) - min(d[3] for d in done),
                           gpu_peak_gib=max(d[6] or 0 for d in done) / 2 ** 30 if dev.type == "cuda" else None,
                           estimate_gib=run_memory(cfg) / 2 ** 30)
                one = one or row
                row["vs_K1"] = row["rounds_per_h"] / one["rounds_per_h"] if one["K"] == 1 else None
                rows.append(row)
    except (TimeoutError, RuntimeError) as err:
        rows.append({"part": "K runs at once", "note": str(err)})
    finally:
        for q in commands:
            q.put(None)
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    for row in rows:
        if "rounds_per_h" in row:
            row["projected"] = (f"{row['rounds_per_h']:,.0f} rounds/h, {row['runs_per_h']:,.1f} runs/h of "
                                f"{row['profile_rounds']} rounds" + (f" ({row['vs_K1']:.2f}x K=1)" if row.get("vs_K1")
                                                                      else ""))
            row["note"] = (f"start-up up to {row['startup_s']:.0f} s a process, not counted; estimated peak "
                           f"{row['estimate_gib']:.1f} GiB a run")
    return rows


def _num(v, fmt: str) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else format(v, fmt)


def projection(row: dict) -> str:
    """The profile's whole run from the row's projected round: '800 rounds: 2.4 h'."""
    if "projected_round_s" not in row:
        return ""
    total = row["projected_round_s"] * row["profile_rounds"]
    return f"{row['profile_rounds']} rounds: " + (f"{total / 3600:.2f} h" if total >= 3600 else f"{total / 60:.1f} min")


def markdown(rows: list[dict], device) -> str:
    """One markdown table of gpu_profile rows (and grid_throughput rows): one line per row."""
    cuda = torch.device(device).type == "cuda"
    ops = ([("launches_per_client_step", "kernel launches / client step", ".0f"),
            ("kernels_per_client_step", "GPU kernels / client step", ".0f")] if cuda else
           [("aten_ops_per_client_step", "aten ops / client step (CPU: no kernels)", ".0f")])
    cols = [("part", "part", ""), ("engine", "engine", ""), ("speed", "speed", ""), ("round_s", "round s", ".2f"),
            ("client_img_s", "client img/s", ",.0f"), ("vs_baseline", "img/s vs baseline", ".2f"),
            ("peak_fraction", "of FP32 peak", ".2%"), *ops,
            ("syncs_per_round", "host syncs / round" + ("" if cuda else " (CPU: .item/.cpu/.tolist/.numpy calls)"),
             ".0f"),
            ("sbn_s", "sBN s", ".2f"), ("pseudo_label_s", "pseudo-label s", ".2f"), ("augment_s", "augment s", ".2f"),
            ("clients_s", "clients s", ".2f"), ("server_s", "server s", ".2f"), ("eval_s", "eval s", ".2f"),
            ("gpu_peak_gib", "GPU peak GiB", ".1f"), ("projected", "projected (label ratio 1)", ""),
            ("note", "note", "")]
    lines = ["| " + " | ".join(h for _, h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        row = {**row, "projected": row.get("projected") or projection(row)}
        lines.append("| " + " | ".join(_num(row.get(k), f) if f else str(row.get(k) or "").replace("|", "/")
                                       for k, _, f in cols) + " |")
    return "\n".join(lines)


def _timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def header(device, rows: list[dict]) -> str:
    """The lines above a gpu_profile table: machine, torch, the peak's source, data and configs measured."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    seen, lines = set(), [f"device: {name}; torch {torch.__version__}; {time.strftime('%Y-%m-%d')}"]
    for r in rows:
        key = (r.get("part"), r.get("data"))
        if "about" in r and r["part"] not in seen:
            seen.add(r["part"])
            lines.append(f"- {r['part']}: {r['about']}; one process a run, started before timing")
        if "peak" in r and key not in seen:
            seen.add(key)
            lines.append(f"- {r['part'] or r['model']}: {r['data']}; {r['model']} {r['mflop_per_image']:.1f} MFLOP "
                         f"forward an image; threshold {r['threshold']:g}"
                         f"{' (label ratio 1: timing only)' if r['threshold'] == 0 else ''}, "
                         f"{r['client_epochs']:g} client epochs measured, projected to {r['epochs']:g}; peak "
                         f"{r['peak']}")
    return "\n".join(lines)


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


def measure_all(argv=None) -> int:
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
                   "table: baseline, default, all, +cuda_graphs, +sbn_one_pass, ...)")
    args = p.parse_args(argv)
    start = time.monotonic()
    deadline = start + (args.deadline or (150 if args.smoke else 440))

    from semifl_core.data import DEBIAN_FASHION_MNIST
    bench = sys.modules[__name__]
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

def measure_one(argv=None) -> int:
    """scripts/bench.py engines | inference | gpu [options]: see --help."""
    from semifl_core.argv import Parser, parse_sets
    from semifl_core.config import PROFILES, profile
    p = Parser(prog="scripts/bench.py", description="one measurement (no subcommand: `make bench-gpu`'s table)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    e = sub.add_parser("engines", help="time the sequential and vectorized engines on the same rounds")
    e.add_argument("--profile", default="small", help=f"one of {', '.join(PROFILES)} (default: %(default)s)")
    e.add_argument("--dataset", default=None, help="default: the profile's")
    e.add_argument("--set", action="extend", nargs="+", default=[], metavar="NAME=VALUE", help="config overrides")
    e.add_argument("--rounds", type=int, default=2, metavar="N", help="timed rounds per engine, >= 1 (default: 2)")
    e.add_argument("--warmup", type=int, default=5, metavar="N",
                   help="untimed rounds before timing, >= 0, so that pseudo-labels appear (default: 5)")
    e.add_argument("--synthetic-shape", default=None, metavar="CxHxW",
                   help="e.g. 3x32x32: random data of this shape if the dataset's files are absent (default: none)")
    e.add_argument("--device", default="auto")
    e.add_argument("--data-root", default=None, metavar="DIR")
    sub.add_parser("inference", help="evaluation images/s, folded and unfolded (BENCHMARKS.md, Inference)")
    g = sub.add_parser("gpu", help="where a round's time goes: per engine and engine.Speed variant, one round each",
                       description="Per engine and engine.Speed variant (the baseline, each switch alone, all), one "
                                   "round from the same state: kernel launches per client step (torch.profiler; aten "
                                   "ops on a CPU), host syncs per round, client images/s, fraction of the FP32 peak, "
                                   "per-phase time. Runs on a CPU too.")
    g.add_argument("--profile", default="paper", help=f"one of {', '.join(PROFILES)} (default: %(default)s)")
    g.add_argument("--dataset", default=None, help="default: the profile's")
    g.add_argument("--set", action="extend", nargs="+", default=[], metavar="NAME=VALUE", help="config overrides")
    g.add_argument("--engines", nargs="+", default=["sequential", "vectorized"], choices=["sequential", "vectorized"])
    g.add_argument("--speeds", nargs="+", default=None, metavar="NAME",
                   help="variants to run: baseline, +SWITCH, all, default (default: every one)")
    g.add_argument("--threshold", default="0", metavar="TAU",
                   help="tau for the bench: 0 (default) passes every client sample, label ratio 1, for timing only; "
                        "'profile' keeps the profile's")
    g.add_argument("--client-epochs", type=float, default=None, metavar="E",
                   help="client epochs measured (default: the profile's); rounds are projected to the profile's E")
    g.add_argument("--warmup", type=int, default=0, metavar="N", help="untimed rounds first (default: 0)")
    g.add_argument("--no-count", action="store_true", help="skip the profiler's kernel counts")
    g.add_argument("--synthetic", action="store_true", help="random images of the dataset's shape, even if found")
    g.add_argument("--synthetic-shape", default=None, metavar="CxHxW", help="their shape (default: the dataset's)")
    g.add_argument("--device", default="auto")
    g.add_argument("--data-root", default=None, metavar="DIR")
    try:
        args = p.parse_args(argv)
    except SystemExit as done:
        return done.code or 0
    torch.set_num_threads(int(os.environ.get("SEMIFL_THREADS", "1")))
    if args.cmd == "inference":
        from semifl_core.run import get_data
        print(inference_bench(profile("small"), get_data("fashionmnist", None, torch.device("cpu"))).to_string())
        return 0
    try:
        if args.cmd == "engines":
            if args.rounds < 1 or args.warmup < 0:
                raise ConfigError(f"--rounds {args.rounds} --warmup {args.warmup}: rounds must be >= 1, warmup >= 0")
            if args.synthetic_shape and not re.fullmatch(r"[1-9]\d*x[1-9]\d*x[1-9]\d*", args.synthetic_shape):
                raise ConfigError(f"--synthetic-shape {args.synthetic_shape!r}: expected CxHxW, e.g. 3x32x32")
            bench(profile(args.profile, args.dataset, **parse_sets(args.set)), args.rounds, args.device,
                  args.data_root, args.synthetic_shape, args.warmup)
            return 0
        threshold = None if args.threshold == "profile" else float(args.threshold)
        cfg = profile(args.profile, args.dataset, **parse_sets(args.set))
        rows = gpu_profile(cfg, args.device, args.data_root, synthetic=args.synthetic,
                           synthetic_shape=args.synthetic_shape, engines=tuple(args.engines), variants=args.speeds,
                           threshold=threshold, client_epochs=args.client_epochs, warmup=args.warmup,
                           count=not args.no_count)
    except (ConfigError, DataError, ValueError) as err:
        print(f"scripts/bench.py: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(header(args.device if args.device != "auto" else pick_device("auto"), rows))
    print(markdown(rows, pick_device(args.device)))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("engines", "inference", "gpu"):
        return measure_one(argv)
    return measure_all(argv)


if __name__ == "__main__":
    raise SystemExit(main())
