"""Static batch normalisation: inference statistics computed from scratch for the current global model.

Every StaticBatchNorm2d layer gets, as its eval-mode statistics, the plain average over batches of 250 un-augmented
images (in order, no shuffle) of each batch's mean and unbiased variance, with the network run in training mode (each
layer normalised by its batch's statistics): the cumulative average that the authors' code gets from
BatchNorm(momentum=None). Source `server`: the server's labeled images; `all`: those plus every client's images.
"""
from __future__ import annotations

import copy

import torch

from .augment import normalize
from .models import StaticBatchNorm2d


# sbn_one_pass: images per forward (groups of 250 each); bounds the activation memory (WRN-28-2 on 32x32: about 1 GB)
ONE_PASS_IMAGES = 5000
# wide_passes (engine.Speed): images per forward of the sBN statistics and the evaluation, sized for a GPU of >= 80 GB
# (WRN-28-2, 32x32: ~5 GB of activations): Fashion-MNIST's 60,000 sBN images in 3 forwards, 10,000 test images in 1
WIDE_IMAGES = 25000


@torch.no_grad()
def compute_statistics(model: torch.nn.Module, images: torch.Tensor, mean, std, batch_size: int = 250,
                       one_pass: bool = False, wide: bool = False) -> None:
    """one_pass: the same statistic from forwards of ONE_PASS_IMAGES images, each layer normalising every group of
    batch_size by its own statistics (StaticBatchNorm2d.grouped; equal up to float rounding). wide (Speed.wide_passes):
    forwards of WIDE_IMAGES, channels_last, on a copy of the model whose statistics are then copied into model's layers
    (model's own weights keep their memory: a captured step reads them)."""
    layers = [m for m in model.modules() if isinstance(m, StaticBatchNorm2d)]
    if not layers:
        return
    if wide:
        net = copy.deepcopy(model).to(memory_format=torch.channels_last)
        _statistics(net, images.contiguous(memory_format=torch.channels_last), mean, std, batch_size, WIDE_IMAGES)
        for layer, done in zip(layers, [m for m in net.modules() if isinstance(m, StaticBatchNorm2d)]):
            layer.mean.copy_(done.mean)
            layer.var.copy_(done.var)
        return
    _statistics(model, images, mean, std, batch_size, ONE_PASS_IMAGES if one_pass else None)


def _statistics(model, images, mean, std, batch_size: int, per_forward: int | None) -> None:
    """compute_statistics on model itself: per_forward images a forward (groups of batch_size), or None: one a batch."""
    layers = [m for m in model.modules() if isinstance(m, StaticBatchNorm2d)]
    was_training = model.training
    model.train()
    for layer in layers:
        layer.record = []
    try:
        if per_forward:
            whole = len(images) // batch_size * batch_size   # the last, partial batch is a forward of its own
            per = max(1, per_forward // batch_size) * batch_size
            batches = [(a, min(a + per, whole), batch_size) for a in range(0, whole, per)]
            batches += [(whole, len(images), None)] if whole < len(images) else []
        else:
            batches = [(a, a + batch_size, None) for a in range(0, len(images), batch_size)]
        for start, end, group in batches:
            for layer in layers:
                layer.group = group
            model(normalize(images[start:end], mean, std))
        for layer in layers:
            layer.mean.copy_(torch.cat([m for m, _ in layer.record]).mean(0))
            layer.var.copy_(torch.cat([v for _, v in layer.record]).mean(0))
    finally:
        for layer in layers:
            layer.record, layer.group = None, None
        model.train(was_training)


def source_indices(cfg, server_idx, client_idx):
    """Training-set indices whose images give the sBN statistics."""
    if cfg.sbn_source == "server" and len(server_idx):
        return server_idx
    import numpy as np
    return np.concatenate([server_idx, *client_idx]) if len(client_idx) else server_idx
