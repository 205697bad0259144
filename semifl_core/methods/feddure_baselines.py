"""The baselines of FedDure's Table 1, on the same label placement and with FedDure's own pieces (the batch plan,
Adam at a constant learning rate, FedAvg weighted by data size), so that they differ from it only in the local loss:

- FedAvg* (labeled only): each client trains on its labeled part alone; weight = its labeled size.
- FedAvg + FixMatch (client labels): CE on the labeled batch + mean_u 1[max p >= tau] CE(f(T_s(u)), argmax p),
  p = softmax(f(T_w(u))) of the model being trained (lambda_u = 1); weight = labeled + unlabeled size.
- FedAvg-SL (all labeled): the same clients with every label revealed, one epoch of CE over all their data (batch
  cfg.client_batch); weight = its data size.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..rounds import Round, RoundRecord
from ..tasks import make_tasks
from .feddure import _adam, _step, client_tasks, federated_round, step_batches


def labeled_client(exp, rnd: Round, c: int, model) -> tuple[int, list]:
    """FedAvg*'s client: CE on its labeled part alone; (its labeled size, stats rows), (0, []) if it holds none."""
    labeled, _, steps = client_tasks(exp, c, rnd)
    if labeled is None:
        return 0, []
    opt, stats = _adam(model, exp.cfg.lr), []
    for s in range(steps):
        b, _ = step_batches(exp, labeled, None, s)
        loss = F.cross_entropy(model(b["x"]), b["y"])
        _step(opt, loss)
        stats.append([loss.item(), math.nan, math.nan, math.nan, math.nan])
    return len(exp.labeled_idx[c]), stats


def fedavg_labeled_round(exp, st, rnd: Round) -> RoundRecord:
    return federated_round(exp, st, rnd, lambda c, model: labeled_client(exp, rnd, c, model))


def fedavg_fixmatch_clients_round(exp, st, rnd: Round) -> RoundRecord:
    tau = exp.cfg.threshold

    def train_client(c, model):
        labeled, unlabeled, steps = client_tasks(exp, c, rnd)
        if unlabeled is None:   # a client with labels only (one-client: client 0) trains as FedAvg*'s clients
            return labeled_client(exp, rnd, c, model)
        opt, stats = _adam(model, exp.cfg.lr), []
        for s in range(steps):
            b, u = step_batches(exp, labeled, unlabeled, s)
            n_l, n_u = len(b.get("x", ())), len(u["x"])
            z = model(torch.cat([*([b["x"]] if n_l else []), u["x_weak"], u["x"]]))
            conf, y_hat = torch.softmax(z[n_l:n_l + n_u].detach(), 1).max(1)
            mask = (conf >= tau).float()
            loss = (mask * F.cross_entropy(z[n_l + n_u:], y_hat, reduction="none")).mean()
            if n_l:
                loss = loss + F.cross_entropy(z[:n_l], b["y"])
            _step(opt, loss)
            stats.append([loss.item(), math.nan, math.nan, (y_hat == u["y"]).float().mean().item(),
                          mask.mean().item()])
        return len(exp.labeled_idx[c]) + len(exp.client_idx[c]), stats
    return federated_round(exp, st, rnd, train_client)


def fedavg_sl_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, data = exp.cfg, exp.data

    def train_client(c, model):
        idx = torch.cat([exp.labeled_idx[c], exp.client_idx[c]])
        task = make_tasks([{"x": data.x_train[idx], "y": data.y_train[idx]}], cfg.client_batch, cfg.local_epochs,
                          rnd.rng, rnd.g, flip=data.flip)[0]
        opt, stats = _adam(model, cfg.lr), []
        for s in range(task.steps):
            b, _ = step_batches(exp, task, None, s)
            loss = F.cross_entropy(model(b["x"]), b["y"])
            _step(opt, loss)
            stats.append([loss.item(), math.nan, math.nan, math.nan, math.nan])
        return len(idx), stats
    return federated_round(exp, st, rnd, train_client)
