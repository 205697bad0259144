"""SGD as torch.optim.SGD computes it (momentum, weight decay, Nesterov, gradient-norm clipping), written out for many
models at once (`FlatModels`: parameters and momentum in two flat buffers), and a CUDA-graph step (`CapturedStep`)."""
from __future__ import annotations

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_map


def clip_grads_(grads: list, max_norm: float) -> None:
    """clip_grad_norm_ on a list of gradients, in place: g <- g min(1, max_norm / (||g|| + 1e-6)), the norm over all."""
    total = torch.nn.utils.get_total_norm(grads)
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))


def sgd_(params: list, grads: list, bufs: list, lr: float, cfg) -> None:
    """torch.optim.SGD's step (no dampening) in place on lists of tensors, as torch._foreach_* ops: one kernel per op
    on a GPU, torch.optim.SGD's very ops on a CPU (bit-identical). bufs: momentum, zeros where there is none yet."""
    if cfg.weight_decay:
        grads = torch._foreach_add(grads, params, alpha=cfg.weight_decay)
    if cfg.momentum:
        torch._foreach_mul_(bufs, cfg.momentum)
        torch._foreach_add_(bufs, grads)
        grads = torch._foreach_add(grads, bufs, alpha=cfg.momentum) if cfg.nesterov else bufs
    if torch.is_tensor(lr):   # a captured graph's learning rate, read from device memory
        torch._foreach_sub_(params, torch._foreach_mul(grads, lr))
    else:
        torch._foreach_add_(params, grads, alpha=-lr)


def sgd_update(p, buf, d, lr: float, cfg):
    """`sgd_` on stacked tensors or a flat buffer (the vectorized engine): returns (new p, new buf)."""
    if cfg.weight_decay:
        d = d + cfg.weight_decay * p
    if cfg.momentum:
        buf = cfg.momentum * buf + d
        d = d + cfg.momentum * buf if cfg.nesterov else buf
    return p - lr * d, buf


def clip_coefficients(grads: list, max_norm: float, one_reduction: bool) -> torch.Tensor:
    """Per model (leading dimension) clip_grad_norm_'s factor min(1, max_norm / (||g|| + 1e-6)). one_reduction: the
    squared norm in one reduction; else summed tensor by tensor (the reference's order: the CPU stays bit-identical)."""
    if one_reduction:
        norms = torch.cat([g.flatten(1) for g in grads], 1).pow(2).sum(1).sqrt()
    else:
        norms = torch.sqrt(sum(g.pow(2).flatten(1).sum(1) for g in grads))
    return (max_norm / (norms + 1e-6)).clamp(max=1.0)


class FlatModels:
    """The parameters and SGD momentum of n models in two flat buffers, tensor k of all n models one contiguous
    (n, *shape_k) block: `params` are views that vmap and functional_call take as they are, and each elementwise op of a
    step is one kernel over all models. Updated in place (a captured CUDA graph keeps pointing at the same memory)."""

    def __init__(self, start: dict, states: list, cfg, lr: float, lr_on_device: bool = False, frozen=()):
        self.cfg, self.n, self.shapes = cfg, len(states), {k: v.shape for k, v in start.items()}
        self.bounds = np.cumsum([0] + [self.n * v.numel() for v in start.values()])
        self.p, self.m = self._weights(start), self._momentum(start, states)
        self.params = self.views(self.p)
        dev = self.p.device
        # a captured graph reads the learning rate from device memory (a Python float would be baked into it)
        self.lr = torch.full((), float(lr), device=dev) if lr_on_device else lr
        # the model each element belongs to: per-model values (clip factors, masks) reach every element in one gather
        self.owner = torch.cat([torch.arange(self.n, device=dev).repeat_interleave(v.numel()) for v in start.values()])
        # the elements a `frozen` loss leaves untrained (None: it trains them all)
        self.frozen_keys = set(frozen)
        self.frozen = None if not frozen else torch.cat([torch.full((self.n * v.numel(),), k in frozen, device=dev)
                                            for k, v in start.items()])

    def _weights(self, start: dict) -> torch.Tensor:
        return self.pack({k: v.detach().expand(self.n, *v.shape) for k, v in start.items()})

    def _momentum(self, start: dict, states: list) -> torch.Tensor:
        return self.pack({k: torch.stack([s[k] if s is not None else torch.zeros_like(v) for s in states])
                          for k, v in start.items()})

    def reset(self, start: dict, states: list, lr: float) -> None:
        """New start weights, momentum and learning rate, in the same memory (a kept, captured step reads it)."""
        with torch.no_grad():
            self.p.copy_(self._weights(start))
            self.m.copy_(self._momentum(start, states))
        if torch.is_tensor(self.lr):
            self.lr.fill_(float(lr))
        else:
            self.lr = lr

    def views(self, flat: torch.Tensor) -> dict:
        return {k: flat[a:b].view(self.n, *shape)
                for (k, shape), a, b in zip(self.shapes.items(), self.bounds[:-1], self.bounds[1:])}

    def pack(self, stacked: dict, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Stacked tensors (model dim first) as one flat buffer; with rows, those models' (rows' order), others zero."""
        if rows is None:
            return torch.cat([stacked[k].reshape(-1) for k in self.shapes])
        flat = torch.zeros(int(self.bounds[-1]), device=rows.device)
        for k, view in self.views(flat).items():
            view[rows] = stacked[k]
        return flat

    def step(self, grads: dict, rows: torch.Tensor | None = None, active: torch.Tensor | None = None,
             one_reduction: bool = False) -> None:
        """One SGD step (clip_grad_norm_ first) of the models in rows (None: all; grads in rows' order); active: (n,)
        bool, the models to update. Parameters a `frozen` loss leaves untrained are kept, out of the clip norm."""
        cfg = self.cfg
        if self.frozen is not None:
            grads = {k: torch.zeros_like(g) if k in self.frozen_keys else g for k, g in grads.items()}
        g = self.pack(grads, rows)
        if cfg.clip_norm > 0:
            coef = clip_coefficients(list(grads.values()), cfg.clip_norm, one_reduction)
            if rows is not None:
                coef = torch.ones(self.n, device=coef.device).index_copy(0, rows, coef)
            g = g * coef[self.owner]
        p, m = sgd_update(self.p, self.m, g, self.lr, cfg)
        if active is not None or self.frozen is not None:
            keep = active[self.owner] if active is not None else torch.ones_like(self.owner, dtype=torch.bool)
            keep = keep if self.frozen is None else keep & ~self.frozen
            p, m = torch.where(keep, p, self.p), torch.where(keep, m, self.m)
        self.p.copy_(p)
        self.m.copy_(m)


# ---------------------------------------------------------------------- CUDA graphs
class CapturedStep:
    """fn(**inputs) as a CUDA graph (Speed.cuda_graphs). Each call copies its inputs into static copies; the first
    WARMUP calls run fn eagerly on a side stream (lazy initialisation, as torch.cuda.graphs asks), the next captures it,
    and later calls replay. Warm-ups and capture read the same tensors, so a compiled fn (Speed.compile) compiles in the
    warm-ups and is not recompiled inside the capture (which would invalidate it). fn keeps its state in tensors it
    updates in place; its output is static, overwritten by the next call."""
    WARMUP = 3   # as torch's whole-network capture example

    def __init__(self, fn):
        self.fn, self.calls, self.graph, self.static, self.out = fn, 0, None, None, None

    def __call__(self, **inputs):
        if self.static is None:
            self.static = tree_map(lambda t: t.clone() if torch.is_tensor(t) else t, inputs)
        else:
            for dst, src in zip(tree_flatten(self.static)[0], tree_flatten(inputs)[0]):
                if torch.is_tensor(dst):
                    dst.copy_(src)
        if self.graph is None and self.calls < self.WARMUP:
            self.calls += 1
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                out = self.fn(**self.static)
            torch.cuda.current_stream().wait_stream(side)
            return out
        if self.graph is None:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = self.fn(**self.static)
        self.graph.replay()
        return self.out
