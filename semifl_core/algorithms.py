"""SemiFL (alternate training) and its baselines: the paper's equations, each in one place.

round order (semifl_round), per the authors' code:
  1. sample max(floor(C*M), 1) clients without replacement
  2. sBN statistics for the global model
  3. each client pseudo-labels all its data once with the global model (eval mode, one weak view);
     fix set = max prob >= tau; an empty fix set -> the client is left out
  4. mix set = |fix| draws with replacement from all the client's data, with their pseudo-labels
  5. local training: E epochs over the fix set, batches zipped with mix batches, loss `local_loss`
  6. equal-weight mean of the client weights, then server SGD (lr 1, momentum beta_g) on w_global - mean
  7. server fine-tune: E epochs of supervised CE on weakly augmented labeled batches
  8. sBN statistics again, evaluation; the fine-tuned model is the next global model
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from . import augment
from .augment import normalize

STAT_NAMES = ("loss", "n_seen", "n_correct", "n_mask", "n_mask_correct")


# ---------------------------------------------------------------------- losses
def local_loss(f, kind: str, b: dict, threshold: float):
    """Loss of one local step of model f on inputs b (see engine.model_inputs); returns (loss, aux) where
    aux = (n_seen, n_correct, n_mask, n_mask_correct) counts the step's pseudo-labels (fixmatch only).

    sup:      CE(f(weak x), y)
    fix:      CE(f(strong x_fix), y_fix)
    fix-mix:  CE(f(strong x_fix), y_fix) + lam CE(f(mix), y_fix) + (1 - lam) CE(f(mix), y_mix),
              mix = lam weak(x_fix) + (1 - lam) weak(x_mix)                  (each CE a batch mean)
    fixmatch: mean_i 1[max p_i >= tau] CE(f(strong x_i), argmax p_i), p = softmax(f(weak x)) from the
              model being trained, per batch (Table 2, pseudo-labels *not* from the global model)
    """
    zero = torch.zeros((), device=b["x"].device)
    if kind in ("sup", "fix", "fix-mix"):
        loss = F.cross_entropy(f(b["x"]), b["y"])
        if kind == "fix-mix":
            out = f(b["x_mixed"])
            loss = loss + b["lam"] * F.cross_entropy(out, b["y"]) + (1 - b["lam"]) * F.cross_entropy(out, b["y_mix"])
        return loss, (zero, zero, zero, zero)
    if kind == "fixmatch":
        probs = torch.softmax(f(b["x_weak"]).detach(), dim=1)
        conf, pseudo = probs.max(dim=1)
        mask = (conf >= threshold).float()
        loss = (F.cross_entropy(f(b["x"]), pseudo, reduction="none") * mask).mean()
        right = (pseudo == b["y"]).float()   # b["y"] holds the true labels, used for metrics only
        n = torch.tensor(float(len(pseudo)), device=mask.device)
        return loss, (n, right.sum(), mask.sum(), (right * mask).sum())
    raise ValueError(kind)


# ---------------------------------------------------------------------- schedule and aggregation
def cosine_lr(cfg, r: int) -> float:
    """One cosine schedule over all T rounds (eta_min 0), stepped once per round, shared by server and clients."""
    return cfg.lr * (1 + math.cos(math.pi * r / cfg.rounds)) / 2


def average(stacked: dict, server: dict | None = None) -> dict:
    """Equal-weight mean of the client parameters (not weighted by data size). With `server` (parallel
    training, finetune off) the server gets weight 1/2 and each of n clients 1/(2n)."""
    mean = {k: v.mean(0) for k, v in stacked.items()}
    if server is None:
        return mean
    if not stacked:
        return dict(server)
    return {k: 0.5 * server[k] + 0.5 * mean[k] for k in mean}


def global_momentum_step(model: torch.nn.Module, opt: torch.optim.Optimizer, averaged: dict) -> None:
    """Server SGD on the pseudo-gradient g = w_global - w_average (lr 1, momentum beta_g, buffer kept
    across rounds). beta_g = 0 gives w_global = w_average."""
    for name, p in model.named_parameters():
        p.grad = p.detach() - averaged[name].to(p.dtype)
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad():  # plain BN's running statistics (norm=bn) are averaged, not momentum-stepped
        for name, b in model.named_buffers():
            if name in averaged:
                b.copy_(averaged[name])


def make_global_optimizer(cfg, model):
    return torch.optim.SGD(model.parameters(), lr=1.0, momentum=cfg.global_momentum)


# ---------------------------------------------------------------------- pseudo-labels and local plans
@torch.no_grad()
def predict(model, images: torch.Tensor, mean, std, batch_size: int = 1000) -> torch.Tensor:
    """Softmax outputs of model in eval mode (sBN statistics) for uint8 images."""
    was = model.training
    model.eval()
    out = torch.cat([torch.softmax(model(normalize(images[i:i + batch_size], mean, std)), 1)
                     for i in range(0, len(images), batch_size)]) if len(images) else torch.zeros(0)
    model.train(was)
    return out


def fix_and_mix(confidence: np.ndarray, threshold: float, rng: np.random.Generator):
    """Fix set: samples whose max probability >= tau. Mix set: |fix| draws WITH replacement from all of the
    client's samples. Returns (fix indices, mix indices) into the client's data; empty fix -> both empty."""
    fix = np.flatnonzero(confidence >= threshold)
    if len(fix) == 0:
        return fix, fix
    return fix, rng.integers(0, len(confidence), size=len(fix))


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


def make_tasks(kind: str, specs: list[dict], batch: int, epochs: float, flip: bool, strong_variant: str,
               alpha: float, rng: np.random.Generator, g: torch.Generator):
    """Build each model's local training as engine Tasks; all augmentation of all tasks in one batched call
    per view. Each spec: {"x": uint8 images, "y": labels} (+ "x_mix", "y_mix" for fix-mix)."""
    from .engine import Task
    plans = []
    for spec in specs:
        idx, size = _pad(epoch_batches(len(spec["x"]), batch, epochs, rng), batch)
        plan = {"idx": idx, "size": size}
        if kind == "fix-mix":
            plan["mix_idx"], _ = _pad(epoch_batches(len(spec["x_mix"]), batch, epochs, rng), batch)
            plan["lam"] = rng.beta(alpha, alpha, size=len(size))
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
    views = {"y": split(gather("y", "idx"))}
    if kind == "sup":
        views["x"] = split(augment.weak(x, flip, g))
    else:
        views["x"] = split(augment.strong(x, flip, g, strong_variant))
    if kind in ("fix-mix", "fixmatch"):
        views["x_weak"] = split(augment.weak(x, flip, g))
    if kind == "fix-mix":
        views["x_mix"] = split(augment.weak(gather("x_mix", "mix_idx"), flip, g))
        views["y_mix"] = split(gather("y_mix", "mix_idx"))
    none = [None] * len(plans)
    lams = [torch.as_tensor(p["lam"], dtype=torch.float32, device=dev) if kind == "fix-mix" else None for p in plans]
    return [Task(kind, *fields) for fields in zip(views["x"], views["y"], [p["size"] for p in plans],
                                                  views.get("x_weak", none), views.get("x_mix", none),
                                                  views.get("y_mix", none), lams)]
