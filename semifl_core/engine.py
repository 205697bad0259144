"""Local training of several models (the active clients of a round, or the server) from the same start, on a loss
function it is given. The engine knows no method: a method builds the tasks (tasks.make_tasks) and the loss.

A loss function is `loss_fn(f, inputs) -> (loss, aux)` (net.py), inputs one step of a Task with its uint8 images
normalised, aux a 1-D tensor of counts summed over the steps (may be empty). `train` returns the trained weights stacked
along a leading model dimension, each model's SGD momentum, and per model the sums over its steps of [loss, *aux]. Both
engines consume the same tasks, so they train on the same inputs:

- `sequential`: one model after another: the readable reference. Its update is torch.optim.SGD's after clip_grad_norm_,
  written with torch._foreach_* ops (`sgd_`, bit-identical to them: tests/test_speed.py).
- `vectorized`: every client at once: one vmap(grad) forward/backward for all clients whose step is a full batch, and
  the same SGD on parameters and momentum stacked in two flat buffers (`FlatModels`, sgd.py). A client whose step is a
  last partial batch gets its gradient from its own un-padded batch, one out of steps is masked (not updated), so the
  result equals the sequential engine's up to float rounding (batched kernels sum in another order); whole runs end
  within seed noise of each other, not bit-identical (BENCHMARKS.md, "Same results"). With Speed.masked_steps a partial
  batch is instead padded to the full batch with a mask of its real samples (b["valid"]), which static BN
  (models.valid_samples) and every graph_safe loss honour: every step then has one shape, so a CUDA graph takes it too.

`Speed` chooses how they run, never what they compute. Both engines keep a step's statistics and losses on the device
and read them once per call (no host synchronisation inside a step loop).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from .augment import normalize
from .errors import ConfigError
from .models import valid_samples
from .net import ClientValues, Net, frozen_names, loss_key
from .sgd import CapturedStep, FlatModels, clip_grads_, sgd_
from .tasks import Task


@dataclass(frozen=True)
class Speed:
    """How the engines and the experiment run, not what they compute (never in the run key). Every switch but bf16
    keeps the results to float rounding. All False: no optional switch (`baseline`); `default(device)`: what runs, each
    switch as its rule decided (BENCHMARKS.md, "CPU switch rules" and "GPU switch rules"); wide_passes and compile stay
    off until the prepared device call (scripts/gpu_checks.sh) has measured them against their rules.

    cuda_graphs  fixed-shape steps as CUDA graphs, captured once per run: the vectorized engine's step where every
                 client still training has a full batch (one graph per client count), the sequential engine's (and
                 the server's) full-batch step; partial batches stay eager. graph_safe losses only; CUDA only
    sbn_one_pass sBN statistics of many groups of 250 images per forward (each group normalised by its own
                 statistics) instead of one forward per group
    bf16         forward/backward in bfloat16 autocast (fp32 master weights, gradients, loss). CHANGES results: set
                 by Config.precision="bf16" (in the run key), refused by run.run as a Speed. CPU (slowly) or bf16 GPUs
    masked_steps the vectorized engine's partial-batch steps padded to full ones with a mask (module docstring), in a
                 second CUDA graph: graphs take every step but the first. Plain BN (norm=bn) and losses not graph_safe
                 stay eager
    one_forward  Net.parts: several batches of one size (SemiFL's fix and mix batches) in one forward whose static BN
                 takes each batch's statistics apart (models.batch_parts), what the authors' two calls compute in half
                 the kernels; static BN and GroupNorm only
    wide_passes  sBN statistics and evaluation in forwards of sbn.WIDE_IMAGES images (the sBN groups of 250 normalised
                 apart), channels_last, on inference copies of the model: fewer, wider passes
    compile      torch.compile (inductor) of the vectorized engine's full-batch step (graph_safe losses), inside its
                 CUDA graph with cuda_graphs
    """
    cuda_graphs: bool = False
    sbn_one_pass: bool = False
    bf16: bool = False
    masked_steps: bool = False
    compile: bool = False
    one_forward: bool = False
    wide_passes: bool = False

    @classmethod
    def baseline(cls) -> "Speed":
        return cls()

    @classmethod
    def default(cls, device) -> "Speed":
        cuda = torch.device(device).type == "cuda"
        return cls(cuda_graphs=cuda, sbn_one_pass=cuda, masked_steps=cuda, one_forward=True)

    def check(self, device) -> "Speed":
        """self, if this device can run it; ConfigError (one line) otherwise."""
        dev = torch.device(device)
        if self.cuda_graphs and dev.type != "cuda":
            raise ConfigError(f"cuda_graphs=True: needs a CUDA device, this run is on {dev}; allowed on {dev}: False")
        if self.bf16 and dev.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ConfigError(f"bf16=True: needs a CUDA GPU with bfloat16 support (or the CPU), this run is on "
                              f"{torch.cuda.get_device_name(dev)}; allowed: False")
        return self


def cosine_lr(cfg, r: int) -> float:
    """One cosine schedule over all T rounds (eta_min 0), stepped once per round, shared by server and clients."""
    return cfg.lr * (1 + math.cos(math.pi * r / cfg.rounds)) / 2


def model_inputs(batch: dict, mean, std) -> dict:
    return {k: normalize(v, mean, std) if v.dtype == torch.uint8 else v for k, v in batch.items()}


def _one_forward(model, speed) -> bool:
    """Whether Net.parts may run one forward for this model: static BN (or none, or GroupNorm), not plain BN."""
    return speed.one_forward and not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


def module_net(model, speed: Speed | None = None, start: dict | None = None, state: dict | None = None,
               client: torch.Tensor | None = None) -> Net:
    """A Net training an nn.Module's parameters (the sequential engine's, and a test's way to call a loss); start: the
    round's start weights (default: a copy of the current ones); state, client: f.state, f.client (default: none, 0)."""
    speed = speed or Speed.default("cpu")
    start = start if start is not None else {k: v.detach().clone() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def at(weights, x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16, cache_enabled=False, enabled=speed.bf16):
            return functional_call(model, (weights, buffers), (x,)).float()
    if client is None:
        client = torch.zeros((), dtype=torch.long, device=next(model.parameters()).device)
    return Net(_bf16(model) if speed.bf16 else model, dict(model.named_parameters()), start, at,
               _one_forward(model, speed), state, client)


def _normalisation(mean, std, dev):
    """The image normalisation constants as device tensors (no host-to-device copy per step)."""
    return tuple(torch.as_tensor(v, dtype=torch.float32, device=dev) for v in (mean, std))


def _bf16(model):
    """model's forward in bfloat16 autocast, logits back in float32 (the loss stays fp32). No autocast weight cache:
    a captured CUDA graph must cast the weights it is replayed with."""
    def f(x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16, cache_enabled=False):
            out = model(x)
        return out.float()
    return f


KEPT = 4   # step sets an engine keeps between train calls (one per model, loss, client count; a run uses one or two)


def _keep(kept: dict, key, value):
    """value, stored under key as the most recently used of `kept`; the least recently used beyond KEPT dropped."""
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > KEPT:
        kept.pop(next(iter(kept)))
    return value


class SequentialEngine:
    """The reference: each task trains its own copy of the start model, one after another."""
    name = "sequential"

    def __init__(self, cfg, mean, std, speed: Speed | None = None):
        self.cfg, self.mean, self.std, self.speed = cfg, mean, std, speed
        self._kept = {}

    def _trainer(self, model, loss_fn, lr: float, speed):
        """The step's trainer; one whose full-batch step is a CUDA graph is kept for next calls (as _ClientSteps)."""
        if not (speed.cuda_graphs and getattr(loss_fn, "graph_safe", False)):
            return _SequentialTrainer(self.cfg, model, loss_fn, lr, speed)
        key = (id(model), loss_key(loss_fn))
        trainer = _keep(self._kept, key, self._kept.get(key) or
                        _SequentialTrainer(self.cfg, model, loss_fn, lr, speed, lr_on_device=True))
        trainer.lr.fill_(float(lr))
        trainer.loss_fn = loss_fn
        return trainer

    def train(self, model: torch.nn.Module, tasks: list[Task], loss_fn, lr: float, states: list[dict | None],
              losses: list | None = None, ids: list[int] | None = None, given: list[dict] | None = None):
        """Train each task from model's weights; `losses`, if given, receives every step's loss (floats); ids and
        given: each task's f.client and f.state (default: its index, none)."""
        dev = next(model.parameters()).device
        speed = (self.speed or Speed.default(dev)).check(dev)
        mean, std = _normalisation(self.mean, self.std, dev)
        start = {k: v.detach().clone() for k, v in model.state_dict().items()}
        names = [n for n, _ in model.named_parameters()]
        results, new_states, stats, step_losses = [], [], [], []
        model.train()
        trainer = self._trainer(model, loss_fn, lr, speed)
        trainer.set_start({n: start[n] for n in names})
        for i, (task, state) in enumerate(zip(tasks, states)):
            model.load_state_dict(start)
            trainer.begin(state)
            trainer.set_client(ids[i] if ids is not None else i, given[i] if given is not None else {})
            task_stats = None
            for s in range(task.steps):
                size = int(task.size[s])
                step = trainer.step(model_inputs(task.batch(s, size), mean, std), full=size == task.views["x"].shape[1])
                task_stats = step.clone() if task_stats is None else task_stats + step
                if losses is not None:
                    step_losses.append(step[0].clone())
            results.append(_trained(model, names))
            new_states.append(trainer.momentum(state))
            stats.append(task_stats)
        model.load_state_dict(start)
        if step_losses:   # read once
            losses.extend(torch.stack(step_losses).tolist())
        return _stacked(results), new_states, torch.stack(stats).cpu() if stats else torch.zeros(0, 1)


class _SequentialTrainer:
    """The sequential engine's step: torch.autograd.grad, then clip_grads_ and sgd_ in place on the trained parameters
    and their momentum buffers. With Speed.cuda_graphs and a graph_safe loss the full-batch step is captured once per
    run (lr_on_device: the graph reads lr on device)."""

    def __init__(self, cfg, model, loss_fn, lr, speed, lr_on_device: bool = False):
        self.cfg, self.model, self.loss_fn = cfg, model, loss_fn
        every = dict(model.named_parameters())
        dev = next(model.parameters()).device
        # the start weights, f.state and f.client in static memory (a captured step reads them in place)
        self.start = {k: v.detach().clone() for k, v in every.items()}
        self.state = ClientValues()
        self.client = torch.zeros((), dtype=torch.long, device=dev)
        self.f = module_net(model, speed, self.start, self.state, self.client)
        frozen = frozen_names(loss_fn, every)
        self.names, self.params = zip(*((n, p) for n, p in every.items() if n not in frozen))
        self.lr = torch.full((), float(lr), device=dev) if lr_on_device else lr
        self.bufs = [torch.zeros_like(p) for p in self.params]
        self.fixed = {n: (p, torch.zeros_like(p)) for n, p in every.items() if n in frozen}
        self.graph = CapturedStep(self._step) if speed.cuda_graphs and getattr(loss_fn, "graph_safe", False) else None

    def set_start(self, start: dict) -> None:
        with torch.no_grad():
            for k, v in self.start.items():
                v.copy_(start[k])

    def set_client(self, client: int, state: dict) -> None:
        """The next task's f.client and f.state, copied into the tensors the steps read."""
        with torch.no_grad():
            self.client.fill_(int(client))
            for k, v in state.items():
                if k in self.state and self.state[k].shape == v.shape:
                    self.state[k].copy_(v)
                else:
                    self.state[k] = v.detach().clone()

    def begin(self, state):
        with torch.no_grad():
            pairs = [*zip(self.names, self.bufs), *((n, b) for n, (_, b) in self.fixed.items())]
            for name, b in pairs:
                if state is None:
                    b.zero_()
                else:
                    b.copy_(state[name])

    def _step(self, inputs) -> torch.Tensor:
        loss, aux = self.loss_fn(self.f, inputs)
        grads = list(torch.autograd.grad(loss, self.params))
        with torch.no_grad():
            if self.cfg.clip_norm > 0:
                clip_grads_(grads, self.cfg.clip_norm)
            sgd_(list(self.params), grads, self.bufs, self.lr, self.cfg)
        return torch.cat([loss.detach()[None], aux])

    def step(self, inputs, full: bool) -> torch.Tensor:
        return self.graph(inputs=inputs) if self.graph is not None and full else self._step(inputs)

    def momentum(self, state) -> dict:
        if self.cfg.momentum:
            return {**{n: b.clone() for n, (_, b) in self.fixed.items()},
                    **{n: b.clone() for n, b in zip(self.names, self.bufs)}}
        return {n: v.clone() for n, v in state.items()} if state is not None else {}


class VectorizedEngine:
    """All tasks at once: stacked parameters, vmap(grad) over clients, SGD on the stacked tensors."""
    name = "vectorized"

    def __init__(self, cfg, mean, std, speed: Speed | None = None):
        self.cfg, self.mean, self.std, self.speed = cfg, mean, std, speed
        self._kept = {}

    def train(self, model: torch.nn.Module, tasks: list[Task], loss_fn, lr: float, states: list[dict | None],
              ids: list[int] | None = None, given: list[dict] | None = None):
        """As SequentialEngine.train, every task at once (no `losses`)."""
        cfg, n = self.cfg, len(tasks)
        if n == 0:
            return {}, [], torch.zeros(0, 1)
        model.train()
        dev = next(model.parameters()).device
        speed = (self.speed or Speed.default(dev)).check(dev)
        start = {k: v.detach() for k, v in model.named_parameters()}
        graphable = getattr(loss_fn, "graph_safe", False)
        plain_bn = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
        masked = speed.masked_steps and graphable and not plain_bn
        ids, given = _per_client(n, dev, ids, given)
        fixed = graphable and (speed.cuda_graphs or speed.compile or masked)
        key = (id(model), loss_key(loss_fn), n, tuple(sorted(tasks[0].views)),
               tuple((k, v.shape, v.dtype) for k, v in given.items()))
        steps = self._kept.get(key) if fixed else None
        if steps is None:
            steps = _ClientSteps(cfg, model, loss_fn, n, dev, speed, masked, fixed, self.mean, self.std, start, states,
                                 lr, ids, given)
        else:   # captured in an earlier call: the same memory, new weights, momentum, learning rate, clients
            steps.reset(start, states, lr, ids, given)
        if fixed:   # capture once per run: kept for the next call
            _keep(self._kept, key, steps)
        params, stats = steps.run(tasks)
        if fixed:   # the kept buffers are the next call's: hand out copies
            params = {k: v.clone() for k, v in params.items()}
        momentum = steps.flat.views(steps.flat.m)
        return params, [{k: v[i].clone() for k, v in momentum.items()} for i in range(n)], stats.to("cpu", copy=True)


class _ClientSteps:
    """The vectorized engine's steps for n clients of one model and loss, with their parameters and momentum
    (FlatModels) and stats. With fixed-shape steps the engine keeps it: its graphs read and write the same memory every
    round (weights, momentum reloaded in place, lr a device tensor), so are captured once per run."""

    def __init__(self, cfg, model, loss_fn, n, dev, speed, masked, fixed, mean, std, start, states, lr, ids, given):
        self.cfg, self.n, self.dev, self.speed, self.masked = cfg, n, dev, speed, masked
        self.ids, self.given = ids.clone(), {k: v.clone() for k, v in given.items()}   # static, as start
        self.mean, self.std = _normalisation(mean, std, dev)
        buffers = dict(model.named_buffers())

        def forward(p, x):
            if speed.bf16:   # vmap(grad) fails under autocast: cast the weights (differentiably) and the input instead
                p = {k: v.to(torch.bfloat16) for k, v in p.items()}
                return functional_call(model, (p, buffers), (x.to(torch.bfloat16),)).float()
            return functional_call(model, (p, buffers), (x,))

        self.start = {k: v.detach().clone() for k, v in start.items()}   # static: a kept step reads it in place
        one = _one_forward(model, speed)

        def step_loss(p, client, state, inputs):
            with valid_samples(inputs.get("valid")):   # None unless a padded step (masked_steps)
                loss, aux = loss_fn(Net(lambda x: forward(p, x), p, self.start, forward, one, state, client), inputs)
            return loss, torch.cat([loss.detach()[None], aux])

        self.frozen = frozen_names(loss_fn, start)

        self.grad_all = vmap(grad(step_loss, has_aux=True))
        self.grad_one = grad(step_loss, has_aux=True)
        self.one_reduction = dev.type != "cpu"   # clip norms: the CPU keeps the reference's sum order
        self.stats = None
        self.flat = FlatModels(start, states, cfg, lr, lr_on_device=fixed and speed.cuda_graphs, frozen=self.frozen)
        self.params = self.flat.params
        # The fixed-shape steps: one where every client still training has a full batch, one (masked steps) where some
        # have a partial one, padded (two graphs: the full steps keep plain batch norm). None: eager, un-padded.
        self.fixed_full = self.fixed_padded = None
        if fixed:
            step = torch.compile(self.full_step) if speed.compile else self.full_step
            self.fixed_full = CapturedStep(step) if speed.cuda_graphs else step
            if masked:
                self.fixed_padded = CapturedStep(step) if speed.cuda_graphs else step

    def reset(self, start: dict, states: list, lr: float, ids: torch.Tensor, given: dict) -> None:
        """A new train call on kept steps: new start weights, momentum, lr, client ids and state; zero stats."""
        self.flat.reset(start, states, lr)
        with torch.no_grad():
            for k, v in self.start.items():
                v.copy_(start[k])
            self.ids.copy_(ids)
            for k, v in self.given.items():
                v.copy_(given[k])
        if self.stats is not None:
            self.stats.zero_()

    def full_step(self, batch, active):
        """Every client's step on its full (masked_steps: padded) batch, those not in `active` masked: one shape."""
        g, a = self.grad_all(self.params, self.ids, self.given, model_inputs(batch, self.mean, self.std))
        self.flat.step(g, active=active, one_reduction=self.one_reduction)
        self.stats.add_(torch.where(active[:, None], a, 0))

    def run(self, tasks: list[Task]) -> tuple[dict, torch.Tensor]:
        """Every task's steps; returns the parameters (stacked) and per-client stats (on the device)."""
        n, dev = self.n, self.dev
        stacked = _stack_tasks(tasks)
        sizes = np.zeros((n, max(t.steps for t in tasks)), dtype=np.int64)
        for i, t in enumerate(tasks):
            sizes[i, :t.steps] = t.size
        full_size = tasks[0].views["x"].shape[1]
        if self.masked:   # each step's real samples; a client out of steps keeps a full mask (it is not updated anyway)
            real = torch.as_tensor(np.where(sizes == 0, full_size, sizes), device=dev)
            valid = torch.arange(full_size, device=dev) < real[..., None]                 # (n, S, B)
        # Each step's clients with a full / partial batch, on the device before the loop (no host-to-device copy in it)
        fulls = [np.flatnonzero(sizes[:, s] == full_size) for s in range(sizes.shape[1])]
        partials = [np.flatnonzero((sizes[:, s] > 0) & (sizes[:, s] < full_size)) for s in range(sizes.shape[1])]
        actives = [np.concatenate([f, p]) for f, p in zip(fulls, partials)]
        idxs = _on_device(actives, dev)
        masks = _on_device(list(sizes.T > 0), dev)
        every = torch.ones(n, dtype=torch.bool, device=dev)
        for s, (full, partial, active, idx, mask) in enumerate(zip(fulls, partials, actives, idxs, masks)):
            whole = len(active) == n and (active == np.arange(n)).all()
            fixed = self.fixed_full if len(partial) == 0 else self.fixed_padded
            if fixed is not None and self.stats is not None:
                batch = {k: v[:, s] for k, v in stacked.items()}
                if len(partial):
                    batch["valid"] = valid[:, s]
                fixed(batch=batch, active=every if whole else mask)
                continue
            grads, aux = {}, []
            if len(full):
                full_idx = None if len(full) in (0, n) else idx[:len(full)]
                take = (lambda d: d) if full_idx is None else (lambda d: {k: v[full_idx] for k, v in d.items()})
                batch = {k: (v[:, s] if full_idx is None else v[full_idx, s]) for k, v in stacked.items()}
                ids = self.ids if full_idx is None else self.ids[full_idx]
                g, a = self.grad_all(take(self.params), ids, take(self.given), model_inputs(batch, self.mean, self.std))
                grads, aux = {k: [v] for k, v in g.items()}, [a]
            for c in partial:
                inputs = model_inputs(tasks[c].batch(s, int(sizes[c, s])), self.mean, self.std)
                g, a = self.grad_one({k: v[c] for k, v in self.params.items()}, self.ids[c],
                                     {k: v[c] for k, v in self.given.items()}, inputs)
                for k, v in g.items():
                    grads.setdefault(k, []).append(v[None])
                aux.append(a[None])
            grads = {k: torch.cat(v) for k, v in grads.items()}
            self.flat.step(grads, None if whole else idx, None if whole else mask, one_reduction=self.one_reduction)
            aux = torch.cat(aux)
            if self.stats is None:
                self.stats = torch.zeros(n, aux.shape[1], device=dev)
            self.stats.index_add_(0, idx, aux)
        return self.params, self.stats


def _per_client(n: int, dev, ids: list[int] | None, given: list[dict] | None) -> tuple[torch.Tensor, dict]:
    ids = torch.as_tensor(list(range(n)) if ids is None else ids, dtype=torch.long).to(dev)
    given = given or [{}] * n
    return ids, {k: torch.stack([g[k] for g in given]) for k in given[0]}


def _trained(model, names) -> dict:
    """A trained model's parameters and plain BN's (norm=bn) running statistics (averaged too), to hand back."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()
            if k in names or k.endswith(("running_mean", "running_var"))}


def _stacked(results: list[dict]) -> dict:
    return {k: torch.stack([r[k] for r in results]) for k in results[0]} if results else {}


def _on_device(arrays: list[np.ndarray], dev) -> list[torch.Tensor]:
    """The arrays (one dtype) as tensors on dev, in one host-to-device copy."""
    return list(torch.as_tensor(np.concatenate(arrays), device=dev).split([len(a) for a in arrays]))


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
    speed = Speed.default(device_type) if speed is None else speed
    vectorized = cfg.resolved_engine(device_type) == "vectorized"
    return (VectorizedEngine if vectorized else SequentialEngine)(cfg, mean, std, speed)
