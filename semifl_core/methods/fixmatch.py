"""Centralized FixMatch (Sohn et al., NeurIPS 2020): the semi-supervised ceiling SemiFL is measured against.

One model, no federation: the server's N_S labeled images, every client image pooled as one unlabeled set. Each step:
  L = CE(f(alpha(x_l)), y_l) + lambda_u mean_i 1[max p_i >= tau] CE(f(A(u_i)), argmax p_i), p = softmax(f(alpha(u_i)))
of the model being trained (FixMatch's Eq. 2-4; lambda_u = 1, tau and the weak/strong augmentations as SemiFL's
clients'). Budget, so that the ceiling and SemiFL differ only in federation: per round the steps SemiFL's active clients
take at the most, E epochs over each client's share at the client batch (FedAvg + FixMatch's clients take exactly
these), num_active x ceil(E ceil((N - N_S) / M / B)); one labeled batch (server_batch) beside each unlabeled one; the
round's learning rate from the same cosine over R rounds; SGD with the config's momentum, Nesterov, weight decay and
clipping, its momentum kept across rounds (server_momentum=keep).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..models import load_weights
from ..rounds import Round, RoundRecord
from ..tasks import Task, make_tasks
from .losses import fixmatch_loss, record_fixmatch
from .semifl import strong_options


def steps_per_round(cfg, num_unlabeled: int) -> int:
    """The steps of SemiFL's active clients in one round when all their images train (the module docstring's budget)."""
    per_epoch = math.ceil(num_unlabeled / cfg.num_clients / cfg.client_batch)
    return cfg.num_active * max(1, math.ceil(round(cfg.local_epochs * per_epoch, 9)))


def loss(threshold: float):
    """FixMatch's loss of one step: supervised CE on the labeled batch + the masked unlabeled CE (lambda_u = 1)."""
    unlabeled = fixmatch_loss(threshold)

    def loss_fn(f, b):
        u, counts = unlabeled(f, b)
        return F.cross_entropy(f(b["x_l"]), b["y_l"]) + u, counts
    return loss_fn


def round_task(exp, rnd: Round) -> Task:
    """The round's steps: the pooled unlabeled images (strong and weak views) beside labeled batches (weak view)."""
    cfg, data = exp.cfg, exp.data
    pooled = torch.cat(exp.client_idx)
    steps = steps_per_round(cfg, len(pooled))
    spec_u = {"x": data.x_train[pooled], "y": data.y_train[pooled]}
    spec_l = {"x": data.x_train[exp.server_idx], "y": data.y_train[exp.server_idx]}
    epochs = lambda n, b: steps / math.ceil(n / b)  # noqa: E731  (exactly `steps` batches of n samples)
    unlabeled, = make_tasks([spec_u], cfg.client_batch, epochs(len(pooled), cfg.client_batch), rnd.rng, rnd.g,
                            flip=data.flip, view="strong", strong_variant=cfg.strong_aug, weak_too=True,
                            **strong_options(cfg))
    labeled, = make_tasks([spec_l], cfg.server_batch, epochs(len(exp.server_idx), cfg.server_batch), rnd.rng, rnd.g,
                          flip=data.flip)
    n = min(unlabeled.views["x"].shape[1], labeled.views["x"].shape[1])   # a step's views share one batch size
    views = {**unlabeled.views, "x_l": labeled.views["x"][:, :n], "y_l": labeled.views["y"][:, :n]}
    return Task(views, unlabeled.size.clip(max=n))


def fixmatch_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, rec = exp.cfg, rnd.record
    with rnd.timed("augment"):
        task = round_task(exp, rnd)
    kept = st.server_state if cfg.server_momentum == "keep" else None
    with rnd.timed("server"):
        stacked, states, stats = exp.server_engine.train(st.model, [task], loss(cfg.threshold), rnd.lr, [kept])
        load_weights(st.model, {k: v[0] for k, v in stacked.items()})
    st.server_state = states[0] or None
    rec.server_loss = stats[0, 0].item() / task.steps
    rec.client_samples = int(task.size.sum())
    record_fixmatch(rec, stats)
    return rec
