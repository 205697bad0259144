"""Local training of several models (the active clients of a round, or the server) from the same start.

A `Task` is one model's whole local training, laid out as steps: the uint8 views each step trains on (already
augmented, see algorithms.make_tasks), their labels and the real batch size of each step. Both engines
consume the same tasks, so they train on identical inputs:

- `sequential`: one model after another with torch.optim.SGD and clip_grad_norm_: the readable reference.
- `vectorized`: every client at once; parameters stacked along a leading client dimension, one
  vmap(grad) forward/backward for all clients whose step is a full batch, and the same SGD (momentum,
  weight decay, Nesterov, per-client gradient-norm clipping) written out on the stacked tensors. A client
  whose step is a last partial batch gets its gradient from its own un-padded batch, and a client that has
  run out of steps is masked (not updated), so the result equals the sequential engine's up to float
  rounding (batched kernels sum in another order: about 4e-7 relative after a round's client training).
  Training amplifies such differences over rounds, so whole runs of the two engines end within seed noise
  of each other, not bit-identical (measured in BENCHMARKS.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from . import algorithms
from .augment import mixup, normalize


@dataclass
class Task:
    kind: str                   # "sup" | "fix" | "fix-mix" | "fixmatch" (see algorithms.local_loss)
    x: torch.Tensor             # uint8 (S, B, C, H, W): the view the loss trains on (weak for sup, strong else)
    y: torch.Tensor             # (S, B) labels: true (sup; fixmatch: for metrics only) or pseudo (fix)
    size: np.ndarray            # (S,) real batch size of each step (<= B); the rest is padding
    x_weak: torch.Tensor | None = None   # fixmatch: view to pseudo-label; fix-mix: weak view of the fix batch
    x_mix: torch.Tensor | None = None    # fix-mix: weak view of the mix batch
    y_mix: torch.Tensor | None = None
    lam: torch.Tensor | None = None      # fix-mix: (S,) mixup coefficient of each step

    @property
    def steps(self) -> int:
        return len(self.size)

    def batch(self, s: int, n: int | None = None) -> dict:
        """Step s as model inputs (normalised floats), the first n samples (default: all B)."""
        sl = slice(None) if n is None else slice(0, n)
        b = {"x": self.x[s, sl], "y": self.y[s, sl]}
        if self.x_weak is not None:
            b["x_weak"] = self.x_weak[s, sl]
        if self.x_mix is not None:
            b["x_mix"], b["y_mix"], b["lam"] = self.x_mix[s, sl], self.y_mix[s, sl], self.lam[s]
        return b


def model_inputs(batch: dict, mean, std) -> dict:
    """uint8 views -> normalised float inputs; the mix batch becomes the mixup image."""
    out = {"x": normalize(batch["x"], mean, std), "y": batch["y"]}
    if "x_mix" in batch:
        out["x_mixed"] = mixup(normalize(batch["x_weak"], mean, std), normalize(batch["x_mix"], mean, std),
                               batch["lam"])
        out["y_mix"], out["lam"] = batch["y_mix"], batch["lam"]
    elif "x_weak" in batch:
        out["x_weak"] = normalize(batch["x_weak"], mean, std)
    return out


class SequentialEngine:
    """The reference: each task trains its own copy of the start model, one after another."""

    def __init__(self, cfg, mean, std):
        self.cfg, self.mean, self.std = cfg, mean, std

    def train(self, model: torch.nn.Module, tasks: list[Task], lr: float, states: list[dict | None],
              losses: list | None = None):
        """Train each task from model's weights; `losses`, if given, receives every step's loss (floats)."""
        start = {k: v.detach().clone() for k, v in model.state_dict().items()}
        names = [n for n, _ in model.named_parameters()]
        results, new_states, stats = [], [], []
        model.train()
        for task, state in zip(tasks, states):
            model.load_state_dict(start)
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=self.cfg.momentum,
                                  weight_decay=self.cfg.weight_decay, nesterov=self.cfg.nesterov)
            if state is not None:
                for name, p in model.named_parameters():
                    opt.state[p]["momentum_buffer"] = state[name].clone()
            task_stats = torch.zeros(len(algorithms.STAT_NAMES))
            for s in range(task.steps):
                inputs = model_inputs(task.batch(s, int(task.size[s])), self.mean, self.std)
                loss, aux = algorithms.local_loss(model, task.kind, inputs, self.cfg.threshold)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if self.cfg.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), self.cfg.clip_norm)
                opt.step()
                task_stats += torch.stack([loss.detach(), *aux]).cpu()
                if losses is not None:
                    losses.append(loss.item())
            # plain BN (norm=bn) also carries its running statistics to the average
            results.append({k: v.detach().clone() for k, v in model.state_dict().items()
                            if k in names or k.endswith(("running_mean", "running_var"))})
            new_states.append({n: opt.state[p]["momentum_buffer"].clone()
                               for n, p in zip(names, model.parameters()) if "momentum_buffer" in opt.state[p]})
            stats.append(task_stats)
        model.load_state_dict(start)
        stacked = {k: torch.stack([r[k] for r in results]) for k in results[0]} if results else {}
        return stacked, new_states, torch.stack(stats) if stats else torch.zeros(0, len(algorithms.STAT_NAMES))


class VectorizedEngine:
    """All tasks at once: stacked parameters, vmap(grad) over clients, SGD on the stacked tensors."""

    def __init__(self, cfg, mean, std):
        self.cfg, self.mean, self.std = cfg, mean, std

    def train(self, model: torch.nn.Module, tasks: list[Task], lr: float, states: list[dict | None]):
        cfg, n = self.cfg, len(tasks)
        if n == 0:
            return {}, [], torch.zeros(0, len(algorithms.STAT_NAMES))
        model.train()
        buffers = {k: v for k, v in model.named_buffers()}
        params = {k: v.detach().unsqueeze(0).repeat(n, *[1] * v.dim()) for k, v in model.named_parameters()}
        has_buf = torch.tensor([s is not None for s in states], device=next(iter(params.values())).device)
        momentum = {k: torch.stack([s[k] if s is not None else torch.zeros_like(v[0]) for s in states])
                    for k, v in params.items()}
        kind = tasks[0].kind
        assert all(t.kind == kind for t in tasks), "one kind of task per call"

        def loss_fn(p, inputs):
            f = lambda x: functional_call(model, (p, buffers), (x,))
            loss, aux = algorithms.local_loss(f, kind, inputs, cfg.threshold)
            return loss, torch.stack([loss.detach(), *aux])

        grad_all = vmap(grad(loss_fn, has_aux=True))
        grad_one = grad(loss_fn, has_aux=True)
        stacked = _stack_tasks(tasks)
        sizes = np.zeros((n, max(t.steps for t in tasks)), dtype=np.int64)
        for i, t in enumerate(tasks):
            sizes[i, :t.steps] = t.size
        full_size = tasks[0].x.shape[1]
        dev = has_buf.device
        # Which clients take a full / a partial batch at each step: index tensors built before the loop, so the
        # step loop itself makes no host-to-device copies.
        plan = []
        for s in range(sizes.shape[1]):
            full = np.flatnonzero(sizes[:, s] == full_size)
            partial = np.flatnonzero((sizes[:, s] > 0) & (sizes[:, s] < full_size))
            active = np.concatenate([full, partial])
            whole = len(active) == n and (active == np.arange(n)).all()
            plan.append((full, None if len(full) in (0, n) else torch.as_tensor(full, device=dev), partial,
                         torch.as_tensor(active, device=dev), whole))
        stats = torch.zeros(n, len(algorithms.STAT_NAMES), device=dev)
        for s, (full, full_idx, partial, idx, whole) in enumerate(plan):
            grads, aux = {}, []
            if len(full):
                p_full = params if full_idx is None else {k: v[full_idx] for k, v in params.items()}
                batch = {k: (v[:, s] if full_idx is None else v[full_idx, s]) for k, v in stacked.items()}
                g, a = grad_all(p_full, model_inputs_batched(batch, self.mean, self.std))
                grads, aux = {k: [v] for k, v in g.items()}, [a]
            for c in partial:
                inputs = model_inputs(tasks[c].batch(s, int(sizes[c, s])), self.mean, self.std)
                g, a = grad_one({k: v[c] for k, v in params.items()}, inputs)
                for k, v in g.items():
                    grads.setdefault(k, []).append(v[None])
                aux.append(a[None])
            grads = {k: torch.cat(v) for k, v in grads.items()}
            self._sgd(params, momentum, has_buf, grads, None if whole else idx, lr)
            stats.index_add_(0, idx, torch.cat(aux))
        return params, [{k: v[i].clone() for k, v in momentum.items()} for i in range(n)], stats.cpu()

    def _sgd(self, params, momentum, has_buf, grads, idx, lr):
        """torch.optim.SGD's update with clip_grad_norm_ first, for the clients in idx (None = all)."""
        cfg = self.cfg
        take = (lambda t: t) if idx is None else (lambda t: t[idx])
        if cfg.clip_norm > 0:
            norms = torch.sqrt(sum(g.pow(2).flatten(1).sum(1) for g in grads.values()))
            coef = (cfg.clip_norm / (norms + 1e-6)).clamp(max=1.0)
            grads = {k: g * coef.view(-1, *[1] * (g.dim() - 1)) for k, g in grads.items()}
        hb = take(has_buf)
        for k, g in grads.items():
            p = take(params[k])
            d = g + cfg.weight_decay * p if cfg.weight_decay else g
            if cfg.momentum:
                old = take(momentum[k])
                buf = torch.where(hb.view(-1, *[1] * (d.dim() - 1)), cfg.momentum * old + d, d)
                d = d + cfg.momentum * buf if cfg.nesterov else buf
                if idx is None:
                    momentum[k] = buf
                else:
                    momentum[k][idx] = buf
            if idx is None:
                params[k] = p - lr * d
            else:
                params[k][idx] = p - lr * d
        if idx is None:
            has_buf.fill_(True)
        else:
            has_buf[idx] = True


def _stack_tasks(tasks: list[Task]) -> dict:
    """Per-step tensors of every task stacked along a leading client dimension, steps padded to the max."""
    steps = max(t.steps for t in tasks)

    def pad(t):
        if t.shape[0] == steps:
            return t
        return torch.cat([t, t[:1].expand(steps - t.shape[0], *t.shape[1:])])

    out = {}
    for key in ("x", "y", "x_weak", "x_mix", "y_mix", "lam"):
        if getattr(tasks[0], key) is not None:
            out[key] = torch.stack([pad(getattr(t, key)) for t in tasks])
    return out


def model_inputs_batched(batch: dict, mean, std) -> dict:
    """model_inputs for a (clients, B, ...) batch; the per-client lam broadcasts over each client's batch."""
    n = batch["x"].shape[0]
    flat = {k: (v.flatten(0, 1) if k != "lam" else v) for k, v in batch.items()}
    if "lam" in flat:
        flat["lam"] = batch["lam"].repeat_interleave(batch["x"].shape[1])
    out = model_inputs(flat, mean, std)
    out = {k: (v.unflatten(0, (n, -1)) if k != "lam" else batch["lam"]) for k, v in out.items()}
    return out


def make_engine(cfg, mean, std, device_type: str):
    engine = VectorizedEngine if cfg.resolved_engine(device_type) == "vectorized" else SequentialEngine
    return engine(cfg, mean, std)
