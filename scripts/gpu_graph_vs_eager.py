"""CUDA graphs vs eager: the weights and losses after one `train` call of each engine, with TF32 on and off.

Device call, from the repository root: `python3 scripts/gpu_graph_vs_eager.py`. Prints a markdown table; the H100's
is docs/gpu-runs/h100-2026-11-26/run2-graph-vs-eager.md. It is what explained tests/test_speed.py's graph test failing
with TF32 on (cuDNN's default): the vectorized engine's masked graph step and its eager steps have other shapes, hence
other convolution kernels, some TF32 and some not.
"""
import dataclasses
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import test_speed  # noqa: E402  (the tests' own _train: the same tasks, states and sizes)

from semifl_core.engine import SequentialEngine, Speed, VectorizedEngine  # noqa: E402


def main() -> None:
    print("| engine | loss | TF32 | max abs weight diff | max rel loss diff |")
    print("|---|---|---|---|---|")
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32
        for engine in (SequentialEngine, VectorizedEngine):
            for kind in ("sup", "fix-mix"):
                kw = dict(sizes=(53, 60, 27, 48), device="cuda")
                eager = test_speed._train(engine, dataclasses.replace(Speed.default("cuda"), cuda_graphs=False),
                                          kind, **kw)
                graph = test_speed._train(engine, Speed.default("cuda"), kind, **kw)
                w = max((graph[0][k] - eager[0][k]).abs().max().item() for k in eager[0])
                loss = ((graph[2] - eager[2]).abs() / eager[2].abs().clamp_min(1e-6)).max().item()
                print(f"| {engine.__name__} | {kind} | {tf32} | {w:.2e} | {loss:.2e} |", flush=True)


if __name__ == "__main__":
    main()
