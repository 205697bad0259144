"""Static batch normalisation: inference statistics computed from scratch for the current global model.

Every StaticBatchNorm2d layer gets, as its eval-mode statistics, the plain average over batches of 250
un-augmented images (in order, no shuffle) of each batch's mean and unbiased variance, with the network
run in training mode (each layer normalised by its batch's statistics) - the cumulative average that the
authors' code gets from BatchNorm(momentum=None). Source `server`: the server's labeled images; `all`:
those plus every client's images.
"""
from __future__ import annotations

import torch

from .augment import normalize
from .models import StaticBatchNorm2d


@torch.no_grad()
def compute_statistics(model: torch.nn.Module, images: torch.Tensor, mean, std, batch_size: int = 250) -> None:
    layers = [m for m in model.modules() if isinstance(m, StaticBatchNorm2d)]
    if not layers:
        return
    was_training = model.training
    model.train()
    for layer in layers:
        layer.record = []
    try:
        for start in range(0, len(images), batch_size):
            model(normalize(images[start:start + batch_size], mean, std))
        for layer in layers:
            layer.mean.copy_(torch.stack([m for m, _ in layer.record]).mean(0))
            layer.var.copy_(torch.stack([v for _, v in layer.record]).mean(0))
    finally:
        for layer in layers:
            layer.record = None
        model.train(was_training)


def source_indices(cfg, server_idx, client_idx):
    """Training-set indices whose images give the sBN statistics."""
    if cfg.sbn_source == "server" and len(server_idx):
        return server_idx
    import numpy as np
    return np.concatenate([server_idx, *client_idx]) if len(client_idx) else server_idx
