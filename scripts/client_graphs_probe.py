"""Every client its own CUDA graph on its own stream: the probe, and the numbers its rule reads (BENCHMARKS.md). The
engine's client_streams switch, which tried this in whole rounds, left the package on 2026-12-01 (code in git history);
the probe asks whether the step alone would pay: a row per mode and client count, written as measured.

n clients, each an ordinary network (the `paper` profile's WRN-28-2: no grouped convolution, no vmap) with its own
weights, momentum and inputs; a client step is SemiFL's in one forward (client_step; fix and mix batch of b images
each). Each client's full step and its partial last batch (r < b images: a small graph of its own, no padding, no mask)
are captured once as CUDA graphs; a step of all clients replays each on its own CUDA stream, side by side.

Against it, on the same data: vmap_step (every convolution a grouped one) as one graph, what the vectorized engine's
full step computes. Timed per mode, fp32 (TF32 convolutions, NCHW: the default) and bf16 (autocast, channels_last;
per-client graphs only), at 10 clients (one run's round) and 40 (four runs' rounds, as one process): the median over
replays (CUDA events), and a round's client phase from each client's own step count (full steps, then its partial one).

On a GPU, from the repository root: `python3 scripts/client_graphs_probe.py` (under 3 minutes on an H200; the table also
to $OUT if set). `--smoke`: tiny sizes on the CPU (streams and graphs no-ops there): per-client and vmap steps agree
(tests/float_bound.py).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))

from gpu_step_probe import captured, time_replays  # noqa: E402
from semifl_core.config import profile  # noqa: E402
from semifl_core.models import make_model  # noqa: E402

LR, MOMENTUM, CLIP = 0.03, 0.9, 5.0   # the paper profile's client SGD (clipping at the engine's norm bound)


def clients(n: int, b: int, dev, model_name: str, channels_last: bool, seed: int = 0):
    """n client networks (the start model plus a little noise each) and each one's fix and mix batch, labels."""
    torch.manual_seed(seed)
    base = make_model(profile("paper").replace(model=model_name), 3).to(dev).train()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    nets, data = [], []
    shape = (3, 32, 32) if model_name.startswith("wrn") else (3, 28, 28)
    for _ in range(n):
        net = copy.deepcopy(base).to(memory_format=fmt)
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.01 * torch.randn_like(p))
        x = torch.randn(2 * b, *shape, device=dev).contiguous(memory_format=fmt)
        nets.append(net)
        data.append((x, torch.randint(0, 10, (2 * b,), device=dev)))
    return base, nets, data


def client_step(net, buf, x, y, bf16: bool):
    """One client step: one forward of fix and mix batch, a CE on each half, clipping, SGD with momentum."""
    params = [p for p in net.parameters()]
    with torch.autocast("cuda", torch.bfloat16) if bf16 else nullcontext():
        out = net(x).float()
    half = x.shape[0] // 2
    loss = F.cross_entropy(out[:half], y[:half]) + F.cross_entropy(out[half:], y[half:])
    grads = torch.autograd.grad(loss, params)
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = torch.clamp(CLIP / (norm + 1e-6), max=1.0)
    grads = torch._foreach_mul(grads, scale)
    torch._foreach_mul_(buf, MOMENTUM)
    torch._foreach_add_(buf, grads)
    with torch.no_grad():
        torch._foreach_add_(params, buf, alpha=-LR)


def vmap_step(base, nets, data, bf16: bool):
    """The same step for all clients at once: vmap(grad) over stacked weights, then the same SGD on the stacks."""
    names = [k for k, _ in base.named_parameters()]
    stacked = {k: torch.stack([dict(n.named_parameters())[k].detach() for n in nets]) for k in names}
    bufs = {k: torch.zeros_like(v) for k, v in stacked.items()}
    buffers = dict(base.named_buffers())
    xs, ys = torch.stack([d[0] for d in data]), torch.stack([d[1] for d in data])

    def loss(p, x, y):
        with torch.autocast("cuda", torch.bfloat16) if bf16 else nullcontext():
            out = functional_call(base, (p, buffers), (x,)).float()
        half = x.shape[0] // 2
        return F.cross_entropy(out[:half], y[:half]) + F.cross_entropy(out[half:], y[half:])

    g_all = vmap(grad(loss))

    def step():
        g = g_all(stacked, xs, ys)
        norms = torch.linalg.vector_norm(torch.stack([v.flatten(1).norm(dim=1) for v in g.values()], 1), dim=1)
        scale = torch.clamp(CLIP / (norms + 1e-6), max=1.0)
        for k in names:
            s = scale.view(-1, *[1] * (g[k].dim() - 1))
            bufs[k].mul_(MOMENTUM).add_(g[k] * s)
            stacked[k].sub_(LR * bufs[k])
        return stacked
    return step


def graphs_on_streams(nets, data, bf16: bool, cuda: bool, r: int):
    """(full step of all clients, each its own graph on its own stream; partial steps likewise, r images each)."""
    def one(net, x, y, buf):
        return lambda: client_step(net, buf, x, y, bf16)

    bufs = [[torch.zeros_like(p) for p in net.parameters()] for net in nets]
    fulls = [one(net, x, y, buf) for net, (x, y), buf in zip(nets, data, bufs)]
    partials = [one(net, x[:2 * r], y[:2 * r], buf) for net, (x, y), buf in zip(nets, data, bufs)]
    if not cuda:   # streams and graphs are no-ops on the CPU: one client after another
        return (lambda: [f() for f in fulls]), (lambda: [f() for f in partials])
    streams = [torch.cuda.Stream() for _ in nets]

    full_g = [captured(fn, s)[0] for fn, s in zip(fulls, streams)]
    part_g = [captured(fn, s)[0] for fn, s in zip(partials, streams)]

    def replay(graphs, steps=None):
        main = torch.cuda.current_stream()
        for c, (g, s) in enumerate(zip(graphs, streams)):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                for _ in range(1 if steps is None else steps[c]):
                    g.replay()
        for s in streams:
            main.wait_stream(s)
    return (lambda steps=None: replay(full_g, steps)), (lambda: replay(part_g))


def replay_of(fn):
    """fn as one CUDA graph's replay (gpu_step_probe.captured, on a side stream of its own)."""
    return captured(fn, torch.cuda.Stream())[0].replay


def ms(fn) -> float:
    """fn's median time over replays (gpu_step_probe.time_replays: CUDA events), in ms."""
    return time_replays(SimpleNamespace(replay=fn))


def smoke() -> int:
    """CPU: one per-client step and one vmap step from the same weights and data give the same weights."""
    from float_bound import assert_near, longest_sum, rtol  # noqa: E402 (tests/float_bound.py)
    base, nets, data = clients(2, 2, "cpu", "cnn", False)
    before = copy.deepcopy(nets)
    full, _ = graphs_on_streams(nets, data, False, cuda=False, r=1)
    full()
    stacked = vmap_step(base, before, data, False)()
    tol = rtol(1, longest_sum(4, (3, 28, 28)))   # one step, 4 images of 28x28
    for c, net in enumerate(nets):   # each client's weights as one vector (a bias alone has no relative bound)
        assert_near({k: p.detach() for k, p in net.named_parameters()}, {k: v[c] for k, v in stacked.items()}, tol,
                    f"client {c}")
    print("smoke: per-client step equals the vmap step (2 clients, cnn)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--ns", default="10,40")
    ap.add_argument("--steps", default="", help="per-client full steps of a round (default: 245 each, 240-250)")
    args = ap.parse_args(argv)
    if args.smoke:
        sys.path.insert(0, str(ROOT / "tests"))
        smoke()
        if os.environ.get("OUT"):
            Path(os.environ["OUT"]).mkdir(parents=True, exist_ok=True)
            Path(os.environ["OUT"], "client-graphs.md").write_text("(smoke: no timings on a CPU)\n")
        return 0
    assert torch.cuda.is_available(), "the probe times CUDA graphs: run it on a GPU (--smoke on a CPU)"
    torch.backends.cudnn.benchmark = True
    b, r, rows = 10, 4, []
    head = ["| mode | clients | vmap step, ms | per-client graphs on streams, ms | ratio | client phase of a round, s "
            "(own step counts) | vmap, padded to the longest client, s |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def cell(v, fmt):
        return "not run" if v is None else format(v, fmt)

    def write():   # after every row: a part killed by its time limit still leaves the rows it measured
        text = "\n".join(head + [f"| {x['mode']} | {x['n']} | {cell(x['vmap_ms'], '.2f')} | {x['graphs_ms']:.2f} | "
                                 f"{cell(x['ratio'], '.2f')} | {x['round_s']:.2f} | {cell(x['vmap_round_s'], '.2f')} |"
                                 for x in rows])
        print(text.splitlines()[-1], flush=True)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"]).mkdir(parents=True, exist_ok=True)
            Path(os.environ["OUT"], "client-graphs.md").write_text(text + "\n")
    for mode, bf16, cl in (("fp32 (TF32) NCHW", False, False), ("bf16 NHWC", True, True)):
        for n in map(int, args.ns.split(",")):
            base, nets, data = clients(n, b, "cuda", "wrn28x2", cl)
            # vmap(grad) under autocast fails (the engine casts weights instead): bf16 times the per-client graphs only
            vm = None if bf16 else ms(replay_of(vmap_step(base, copy.deepcopy(nets), data, bf16)))
            full, part = graphs_on_streams(nets, data, bf16, cuda=True, r=r)
            per = ms(full)
            steps = [240 + (c * 7) % 11 for c in range(n)]   # clients' own step counts, as a round has them
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            full(steps)
            part()
            e.record()
            torch.cuda.synchronize()
            rows.append(dict(mode=mode, n=n, vmap_ms=vm, graphs_ms=per, ratio=None if vm is None else per / vm,
                             round_s=a.elapsed_time(e) / 1000,
                             vmap_round_s=None if vm is None else vm * max(steps) / 1000))
            write()
            del nets, data, full, part
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
