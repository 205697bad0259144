"""What a method's round is given (`Round`) and what it returns (`RoundRecord`, one row of metrics.csv)."""
from __future__ import annotations

import dataclasses
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

import numpy as np
import torch


@dataclass
class RoundRecord:
    """What one round measured; None = not measured this round (an empty cell in metrics.csv)."""
    round: int                              # 1-based
    lr: float
    clients_trained: int | None = None      # active clients that sent a model (an empty fix set sends none)
    client_samples: int | None = None       # samples the clients trained on, summed over steps
    client_loss: float | None = None        # mean loss per local step
    server_loss: float | None = None        # mean loss per server step
    pseudo_acc: float | None = None         # Figure 6: % of the active clients' pseudo-labels that are right
    threshold_acc: float | None = None      # ... of those at or above tau
    label_ratio: float | None = None        # share of the clients' data at or above tau
    test_acc: float | None = None
    diagnostics: dict = field(default_factory=dict)   # cfg.diagnostics: stage and per-class accuracies
    times: dict = field(default_factory=dict)         # phase -> wall seconds

    def row(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("diagnostics", "times")}
        out = {k: v for k, v in out.items() if v is not None}
        return {**out, **self.diagnostics, **{f"time_{k}": v for k, v in self.times.items()}}


@dataclass
class Round:
    """Round r of a run: its randomness (all derived from (seed, r)), learning rate and record."""
    r: int
    lr: float
    rng: np.random.Generator     # client sample, batch plans, mix draws, mixup lambdas
    g: torch.Generator           # augmentations
    device: torch.device
    diagnose: bool               # cfg.diagnostics and this round is evaluated
    last: bool                   # the run's last round
    record: RoundRecord
    client_changes: list = field(default_factory=list)   # a variant's client states this round: (before, after)

    @contextmanager
    def timed(self, phase: str):
        """Adds the phase's wall time (synchronised on CUDA) to record.times[phase]."""
        t = time.perf_counter()
        yield
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.record.times[phase] = self.record.times.get(phase, 0.0) + time.perf_counter() - t


def client_round(rnd: Round, seed: int, c: int) -> Round:
    """Round r as client c draws it with its own streams (Config.rng_streams="client", seeded with (seed, r, c)): the
    same numbers in-process and in a process of its own (semifl_core/flower). Shares rnd's record."""
    g_seed = int(np.random.SeedSequence([seed, rnd.r, c, 1]).generate_state(1, np.uint64)[0])
    return dataclasses.replace(rnd, rng=np.random.default_rng([seed, rnd.r, c, 0]),
                               g=torch.Generator(rnd.device).manual_seed(g_seed))
