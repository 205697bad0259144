"""Local training of several models (the active clients of a round, or the server) from the same start, on a loss
function it is given. The engine knows no method: a method builds the tasks (tasks.make_tasks) and the loss.

A loss function is `loss_fn(f, inputs) -> (loss, aux)`: f maps a normalised image batch to logits, inputs is one
step of a Task with its uint8 images normalised, aux a 1-D tensor of counts the method wants summed over the steps
(may be empty). `train` returns the trained weights stacked along a leading model dimension, each model's SGD
momentum, and per model the sums over its steps of [loss, *aux]. Both engines consume the same tasks, so they
train on identical inputs:

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

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from .augment import normalize
from .tasks import Task


@dataclass(frozen=True)
class Speed:
    """How the engines and the experiment run, not what they compute (never in the run key). Every switch but bf16
    keeps the results: bit-identical on a CPU, equal to float rounding on a GPU (cuda_graphs). All False: the code
    paths as they were before these switches (`baseline`); `default(device)`: what runs.

    sync_free    stats and losses summed on the device, read once per round (no host sync inside step loops)
    flat_sgd     one set of optimizer kernels per step over flat buffers, not one set per parameter tensor
    cuda_graphs  the fixed-shape steps (all clients at a full batch; the server's step) captured once, replayed (CUDA)
    sbn_one_pass sBN statistics of many groups of 250 images per forward, instead of one forward per group
    bf16         bfloat16 autocast of the forward/backward (CHANGES results: for `semifl bench` only, never a run)
    """
    sync_free: bool = False
    flat_sgd: bool = False
    cuda_graphs: bool = False
    sbn_one_pass: bool = False
    bf16: bool = False

    @classmethod
    def baseline(cls) -> "Speed":
        return cls()

    @classmethod
    def default(cls, device) -> "Speed":
        """Every change that keeps results on; CUDA graphs only on a CUDA device; fp32."""
        return cls(sync_free=True, flat_sgd=True, cuda_graphs=torch.device(device).type == "cuda",
                   sbn_one_pass=True)

    def check(self, device) -> "Speed":
        """self, if this device can run it; ConfigError (one line) otherwise."""
        from .config import ConfigError
        dev = torch.device(device)
        if self.cuda_graphs and dev.type != "cuda":
            raise ConfigError(f"cuda_graphs=True: needs a CUDA device, this run is on {dev}; allowed on {dev}: False")
        if self.bf16 and not (dev.type == "cuda" and torch.cuda.is_bf16_supported()):
            raise ConfigError(f"bf16=True: needs a CUDA GPU with bfloat16 support, this run is on "
                              f"{torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev}; allowed: False")
        return self


def cosine_lr(cfg, r: int) -> float:
    """One cosine schedule over all T rounds (eta_min 0), stepped once per round, shared by server and clients."""
    return cfg.lr * (1 + math.cos(math.pi * r / cfg.rounds)) / 2


def model_inputs(batch: dict, mean, std) -> dict:
    """A step's views with every uint8 image view normalised to float model input."""
    return {k: normalize(v, mean, std) if v.dtype == torch.uint8 else v for k, v in batch.items()}


class SequentialEngine:
    """The reference: each task trains its own copy of the start model, one after another."""

    def __init__(self, cfg, mean, std, speed: Speed | None = None):
        self.cfg, self.mean, self.std, self.speed = cfg, mean, std, speed

    def train(self, model: torch.nn.Module, tasks: list[Task], loss_fn, lr: float, states: list[dict | None],
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
            task_stats = None
            for s in range(task.steps):
                inputs = model_inputs(task.batch(s, int(task.size[s])), self.mean, self.std)
                loss, aux = loss_fn(model, inputs)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if self.cfg.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), self.cfg.clip_norm)
                opt.step()
                step = torch.cat([loss.detach()[None], aux]).cpu()
                task_stats = step if task_stats is None else task_stats + step
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
        return stacked, new_states, torch.stack(stats) if stats else torch.zeros(0, 1)


class VectorizedEngine:
    """All tasks at once: stacked parameters, vmap(grad) over clients, SGD on the stacked tensors."""

    def __init__(self, cfg, mean, std, speed: Speed | None = None):
        self.cfg, self.mean, self.std, self.speed = cfg, mean, std, speed

    def train(self, model: torch.nn.Module, tasks: list[Task], loss_fn, lr: float, states: list[dict | None]):
        cfg, n = self.cfg, len(tasks)
        if n == 0:
            return {}, [], torch.zeros(0, 1)
        model.train()
        buffers = {k: v for k, v in model.named_buffers()}
        params = {k: v.detach().unsqueeze(0).repeat(n, *[1] * v.dim()) for k, v in model.named_parameters()}
        has_buf = torch.tensor([s is not None for s in states], device=next(iter(params.values())).device)
        momentum = {k: torch.stack([s[k] if s is not None else torch.zeros_like(v[0]) for s in states])
                    for k, v in params.items()}

        def step_loss(p, inputs):
            loss, aux = loss_fn(lambda x: functional_call(model, (p, buffers), (x,)), inputs)
            return loss, torch.cat([loss.detach()[None], aux])

        grad_all = vmap(grad(step_loss, has_aux=True))
        grad_one = grad(step_loss, has_aux=True)
        stacked = _stack_tasks(tasks)
        sizes = np.zeros((n, max(t.steps for t in tasks)), dtype=np.int64)
        for i, t in enumerate(tasks):
            sizes[i, :t.steps] = t.size
        full_size = tasks[0].views["x"].shape[1]
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
        stats = None
        for s, (full, full_idx, partial, idx, whole) in enumerate(plan):
            grads, aux = {}, []
            if len(full):
                p_full = params if full_idx is None else {k: v[full_idx] for k, v in params.items()}
                batch = {k: (v[:, s] if full_idx is None else v[full_idx, s]) for k, v in stacked.items()}
                g, a = grad_all(p_full, model_inputs(batch, self.mean, self.std))
                grads, aux = {k: [v] for k, v in g.items()}, [a]
            for c in partial:
                inputs = model_inputs(tasks[c].batch(s, int(sizes[c, s])), self.mean, self.std)
                g, a = grad_one({k: v[c] for k, v in params.items()}, inputs)
                for k, v in g.items():
                    grads.setdefault(k, []).append(v[None])
                aux.append(a[None])
            grads = {k: torch.cat(v) for k, v in grads.items()}
            self._sgd(params, momentum, has_buf, grads, None if whole else idx, lr)
            aux = torch.cat(aux)
            if stats is None:
                stats = torch.zeros(n, aux.shape[1], device=dev)
            stats.index_add_(0, idx, aux)
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

    return {key: torch.stack([pad(t.views[key]) for t in tasks]) for key in tasks[0].views}


def make_engine(cfg, mean, std, device_type: str, speed: Speed | None = None):
    """The client engine for this device; speed None: Speed.default(device_type)."""
    engine = VectorizedEngine if cfg.resolved_engine(device_type) == "vectorized" else SequentialEngine
    return engine(cfg, mean, std, Speed.default(device_type) if speed is None else speed)
