"""`semifl bench`: the sequential (reference) and vectorized engines on the same rounds, in one process.

First `warmup` untimed rounds (vectorized engine) bring the model to where clients have confident
pseudo-labels (at round 1 almost none pass the threshold, so client training would cost nothing); then each
engine runs the same `rounds` timed rounds from a copy of that state. Prints per-round wall
time by phase, client-training images per second (forward+backward), the ratio between the engines, the
achieved model FLOP/s and its fraction of the device's peak, and the share of a round spent outside model
computation (augmentation, aggregation, data movement, bookkeeping).
"""
from __future__ import annotations

import copy
import os
import platform
import time

import numpy as np
import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from .data import DataError, Dataset, load
from .models import make_model
from .run import Experiment, pick_device

# Forward+backward passes per client sample in one local step, by loss (fixmatch's weak pass has no
# backward and counts as 1/3).
PASSES = {"fix-mix": 2.0, "fix": 1.0, "fixmatch": 1 + 1 / 3, "sup": 1.0}
MODEL_PHASES = ("time_sbn", "time_pseudo_label", "time_clients", "time_server", "time_eval")


def peak_flops(device: torch.device) -> tuple[float, str]:
    """Dense FP32 peak of the device (FLOP/s) and how it was obtained."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        known = {"H100": 67e12, "H200": 67e12, "A100": 19.5e12}   # FP32 (non-tensor-core) dense peaks
        for key, value in known.items():
            if key in name:
                return value, f"{name}: FP32 dense {value / 1e12:.1f} TFLOP/s (datasheet)"
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


def bench(cfg, rounds: int = 2, device="auto", data_root=None, synthetic_shape: str | None = None,
          warmup: int = 5) -> pd.DataFrame:
    device = pick_device(device)
    try:
        data, source = load(cfg.dataset, data_root, device), f"{cfg.dataset} (real files)"
    except DataError:
        shape = tuple(int(s) for s in (synthetic_shape or "3x32x32").split("x"))
        from .config import TRAIN_SIZE
        data = synthetic_like(cfg.dataset, shape, cfg.num_classes, TRAIN_SIZE[cfg.dataset], 10000).to(device)
        source = f"SYNTHETIC random data shaped like {cfg.dataset} {shape} (real set absent): timings only"
    flops = model_flops_per_sample(cfg, data.shape, device)
    peak, peak_note = peak_flops(device)
    print(f"semifl bench: {cfg.model} on {source}; device {device}; torch {torch.__version__}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads")
    print(f"config: N_S={cfg.num_supervised}, {cfg.num_clients} clients, {cfg.num_active} active, E={cfg.local_epochs}, "
          f"client batch {cfg.client_batch}, server batch {cfg.server_batch}, T={cfg.rounds}; "
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
            kind = "fix-mix" if c.mix_loss and c.global_pseudo_labels else "fix" if c.global_pseudo_labels \
                else "fixmatch"
            images = m.get("client_samples", 0) * PASSES[kind]
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
    """Test-set images per second of the global model's evaluation (eval mode, sBN statistics of the server's data),
    unfolded and with static BN folded into the convs (models.folded), per batch size; best of `repeats`. Also the
    largest difference of the two's probabilities and whether their argmax agrees on every image."""
    from .models import folded, predict
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


def _timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":   # python -m semifl_core.bench inference: the BENCHMARKS.md "Inference" table
    import sys
    from .config import profile
    from .run import get_data
    torch.set_num_threads(int(os.environ.get("SEMIFL_THREADS", "1")))
    if sys.argv[1:] == ["inference"]:
        print(inference_bench(profile("small"), get_data("fashionmnist", None, torch.device("cpu"))).to_string())
