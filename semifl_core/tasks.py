"""A model's local training laid out as steps (a `Task`): the batch plan of E shuffled epochs and the augmented views
each step trains on. All tasks are augmented before any training, in one batched call per view (per-sample randomness
from the round's generator); both engines consume the same tasks."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from . import augment


@dataclass
class Task:
    views: dict          # name -> (S, B, ...) per-sample tensor (uint8 images, int labels) or (S,) per-step value
    size: np.ndarray     # (S,) real batch size of each step (<= B); the rest of a step is padding

    @property
    def steps(self) -> int:
        return len(self.size)

    def batch(self, s: int, n: int | None = None) -> dict:
        """Step s: every view, its first n samples (default: all B)."""
        sl = slice(None) if n is None else slice(0, n)
        return {k: (v[s, sl] if v.dim() >= 2 else v[s]) for k, v in self.views.items()}


def epoch_batches(n: int, batch: int, epochs: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of shuffled epochs over n samples: ceil(epochs * ceil(n / batch)) steps (at least one), so a
    fractional E is that fraction of an epoch. The last batch of an epoch may be partial."""
    per_epoch = math.ceil(n / batch)
    total = max(1, math.ceil(round(epochs * per_epoch, 9)))
    out = []
    while len(out) < total:
        perm = rng.permutation(n)
        out.extend(perm[i * batch:(i + 1) * batch] for i in range(per_epoch))
    return out[:total]


def _pad(batches: list[np.ndarray], batch: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.zeros((len(batches), batch), dtype=np.int64)
    for s, b in enumerate(batches):
        idx[s, :len(b)] = b
    return idx, np.array([len(b) for b in batches], dtype=np.int64)


def make_tasks(specs: list[dict], batch: int, epochs: float, rng: np.random.Generator, g: torch.Generator, *,
               flip: bool, view: str = "weak", strong_variant: str = "semifl", weak_too: bool = False,
               mix_alpha: float | None = None, strong_options: dict | None = None) -> list[Task]:
    """One Task per spec {"x": uint8 images, "y": labels, other per-sample values} (+ "x_mix", "y_mix" with mix_alpha).

    Step views: "x" (the `view` augmentation: weak, strong, or "none") and "y"; with weak_too "x_weak" (a weak view of
    the same images); with mix_alpha "x_mix" / "y_mix" (a weak view of a batch of the mix data, its own E epochs; a spec
    with "mix_per_read" draws each mix sample afresh from all of x_mix, with replacement, as the authors' loader does)
    and "lam" (one lambda ~ Beta(a, a) per step). strong_options: augment.strong's shear and cutout."""
    plans = []
    for spec in specs:
        idx, size = _pad(epoch_batches(len(spec["x"]), batch, epochs, rng), batch)
        plan = {"idx": idx, "size": size}
        if mix_alpha is not None:
            if spec.get("mix_per_read"):
                plan["mix_idx"] = rng.integers(0, len(spec["x_mix"]), size=idx.shape)
            else:
                plan["mix_idx"], _ = _pad(epoch_batches(len(spec["x_mix"]), batch, epochs, rng), batch)
            plan["lam"] = rng.beta(mix_alpha, mix_alpha, size=len(size))
        plans.append(plan)
    if not specs:
        return []
    dev = specs[0]["x"].device

    def gather(key, idx_key):
        return torch.cat([s[key][torch.as_tensor(p[idx_key], device=dev).flatten()] for s, p in zip(specs, plans)])

    def split(t):
        out, start = [], 0
        for p in plans:
            n = p["idx"].size
            out.append(t[start:start + n].unflatten(0, p["idx"].shape))
            start += n
        return out

    x = gather("x", "idx")
    strong = lambda t: augment.strong(t, flip, g, strong_variant, **(strong_options or {}))  # noqa: E731
    views = {"x": split(x if view == "none" else augment.weak(x, flip, g) if view == "weak" else strong(x))}
    for key in specs[0]:   # y, and any other per-sample value a method gives its steps (e.g. a mask)
        if key not in ("x", "x_mix", "y_mix", "mix_per_read"):
            views[key] = split(gather(key, "idx"))
    if weak_too or mix_alpha is not None:
        views["x_weak"] = split(augment.weak(x, flip, g))
    if mix_alpha is not None:
        views["x_mix"] = split(augment.weak(gather("x_mix", "mix_idx"), flip, g))
        views["y_mix"] = split(gather("y_mix", "mix_idx"))
        views["lam"] = [torch.as_tensor(p["lam"], dtype=torch.float32, device=dev) for p in plans]
    return [Task({k: v[i] for k, v in views.items()}, p["size"]) for i, p in enumerate(plans)]
