"""How many client steps of a round the vectorized engine's CUDA graph cannot take: a step where some client trains
on a partial batch (its epoch's last) runs eagerly. BENCHMARKS.md ("The client step on an H200") quotes both parts.

    python scripts/partial_steps.py count [--partition iid] [--rounds 12]   real `small` rounds (Fashion-MNIST, CPU)
    python scripts/partial_steps.py simulate                               `paper` IID clients, fix sets drawn

`count` trains SemiFL's `small` profile with the vectorized engine (one thread; about a minute for 12 rounds) and
prints, per round, the share of client steps with a partial client. `simulate` draws the fix-set sizes of the
`paper` profile's 10 active IID clients (460 images each, binomial at a label ratio), lays out E=5 epochs of batch
10 as tasks.epoch_batches does, and prints the same share.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def partial_share(sizes: list[np.ndarray], batch: int) -> tuple[int, int]:
    """(steps with some client on a partial batch, steps) for the clients' per-step batch sizes."""
    steps = max(len(s) for s in sizes)
    grid = np.zeros((len(sizes), steps), dtype=np.int64)
    for i, s in enumerate(sizes):
        grid[i, :len(s)] = s
    return int(((grid > 0) & (grid < batch)).any(0).sum()), steps


def count(partition: str, rounds: int) -> None:
    import torch

    from semifl_core.config import profile
    from semifl_core.data import load
    from semifl_core.run import Experiment
    torch.set_num_threads(1)
    cfg = profile("small", partition=partition, engine="vectorized")
    exp = Experiment(cfg, load(cfg.dataset, None, torch.device("cpu")), torch.device("cpu"))
    st, seen, train = exp.new_state(), [], exp.engine.train

    def spy(model, tasks, *args, **kwargs):
        seen.append([t.size for t in tasks])
        return train(model, tasks, *args, **kwargs)
    exp.engine.train = spy
    for r in range(rounds):
        m = exp.round(st, r)
        sizes = next((s for s in reversed(seen) if s), None)
        seen.clear()
        if sizes:
            k, steps = partial_share(sizes, cfg.client_batch)
            print(f"{partition} round {r + 1}: label ratio {m.get('label_ratio'):.2f}, {len(sizes)} clients, "
                  f"{steps} steps, {k} with a partial client ({100 * k / steps:.0f} %)")


def epoch_sizes(n: int, batch: int, epochs: int) -> np.ndarray:
    """The batch sizes of `epochs` epochs over n samples (tasks.epoch_batches): full batches, the last one partial."""
    per = math.ceil(n / batch)
    return np.tile([batch] * (per - 1) + [n - (per - 1) * batch], epochs)


def simulate(draws: int = 200, images: int = 460, epochs: int = 5, batch: int = 10) -> None:
    rng = np.random.default_rng(0)
    for ratio in (0.5, 0.7, 0.9, 0.97):
        shares, counts = [], []
        for _ in range(draws):
            sizes = [epoch_sizes(n, batch, epochs) for n in rng.binomial(images, ratio, size=10)]
            k, steps = partial_share(sizes, batch)
            shares.append(k / steps)
            counts.append(k)
        print(f"label ratio {ratio}: {np.mean(counts):.0f} steps a round with a partial client "
              f"({100 * np.mean(shares):.0f} %)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["count", "simulate"])
    p.add_argument("--partition", default="iid")
    p.add_argument("--rounds", type=int, default=12)
    args = p.parse_args(argv)
    count(args.partition, args.rounds) if args.what == "count" else simulate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
