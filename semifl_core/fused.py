"""K networks of one architecture run as ONE network (horizontal fusion, as HFTA does it: Wang et al., MLSys 2021):
the vectorized engine's Speed.fused step. Model k's batch of N images and its weights stay its own; the layout is

    input   (N, P*K*C, H, W) in channels_last, channel (p, k, c): part p (a batch with its own batch statistics,
            SemiFL's fix and mix batches) of model k's input channel c
    layers  models.fused_layout: a convolution is one grouped convolution (groups P*K), static BN one batch norm over
            P*K*C channels (per part, model and channel statistics), the classifier one batched matmul
    output  (N, P, K, classes), handed to the loss as P tensors (K, N, classes)

so a step is one network's kernels for every client at once (no vmap: no per-client batch-norm affine kernels,
and the activations keep one memory layout end to end). A loss sees leading model dimensions: its batch tensors are
(K, N, ...), its logits (K, N, classes), and it returns K losses (net.batch_ce and batch_mean reduce over the
last sample dimension). It computes what K separate networks compute, up to float rounding (tests/test_fused.py).
"""
from __future__ import annotations

import torch
from torch.func import functional_call

from .models import fused_layout


def fused_input(xs: tuple) -> torch.Tensor:
    """P batches of K models' images, each (K, N, C, H, W), as the fused layout's (N, P*K*C, H, W), channels_last (its
    memory order N, H, W, P, K, C)."""
    x = torch.stack(xs, 1)                                            # (K, P, N, C, H, W)
    k, p, n, c, h, w = x.shape
    return x.permute(2, 4, 5, 1, 0, 3).reshape(n, h, w, p * k * c).permute(0, 3, 1, 2)


def fused_logits(model, weights: dict, buffers: dict, xs: tuple, bf16: bool = False) -> tuple:
    """The logits of K networks (weights: name -> (K, ...)) on P batches each (xs: P tensors (K, N, C, H, W)), each
    batch normalised by its own statistics: P tensors (K, N, classes)."""
    k = next(iter(weights.values())).shape[0]
    x = fused_input(xs)
    with fused_layout(k, len(xs)), torch.autocast(x.device.type, torch.bfloat16, enabled=bf16, cache_enabled=False):
        out = functional_call(model, (weights, buffers), (x,))        # (N, P, K, classes)
    return out.float().permute(1, 2, 0, 3).unbind(0)


def stacked(weights: dict, k: int) -> dict:
    """One network's weights as K models' (a view: the start weights every client received)."""
    return {name: v.expand(k, *v.shape) for name, v in weights.items()}
