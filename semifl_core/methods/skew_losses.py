"""Two variants of SemiFL's client loss against label skew (docs/label_skew.md), each off by default. Under Non-IID K=2
a client's update raises the two classes it holds and lowers the eight it does not (local forgetting); these change
what the client's loss asks of those eight. methods/semifl.py's client_loss reads what they put in a step's batch.

- FedRS's restricted softmax (Li and Zhan, KDD 2021; Config.fedrs_alpha): the logits of the classes a client does not
  hold are scaled by alpha in every CE of its loss (b["rs"], `fedrs_scale`).
- FedNTD's not-true distillation (Lee et al., "Preservation of the global knowledge by not-true distillation in
  federated learning", NeurIPS 2022, Eq. 4; Config.ntd_beta, ntd_tau): on each fix sample, the client model's softmax
  over the classes other than its pseudo-label is pulled towards the global model's softmax over the same classes
  (b["t_logits"], the received global model's logits: `teacher_logits`, `not_true_distillation`).
- FedVLS's vacant-class distillation (Guo et al., "Exploring vacant classes in label-skewed federated learning",
  AAAI 2025, Eq. 6; Config.vls_lambda): the same pull over the client's vacant classes only, those with no pseudo-label
  in its fix set this round (b["vacant"], `vacant_classes`, `vacant_distillation`). Its logit suppression and
  prior-corrected cross-entropy are not included: this is the distillation term alone.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..engine import batch_mean
from ..models import predict
from . import pseudo_labels


# ---------------------------------------------------------------------- FedRS
def fedrs_scale(pseudo_fix: np.ndarray, num_classes: int, alpha: float) -> np.ndarray:
    """FedRS's restricted softmax: alpha_c = 1 for the classes a client holds and alpha for the others, which scale
    their logits in its local loss, so that its update pushes the weights of classes it has no data of down less. An
    unlabeled client knows no labels: it holds the classes of at least pseudo_labels.HELD_SHARE of its fix set (the
    share the label-skew diagnostics read from true labels)."""
    return np.where(pseudo_labels.held_classes(pseudo_fix, num_classes), 1.0, alpha).astype(np.float32)


# ---------------------------------------------------------------------- FedNTD
def not_true(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The logits of the classes other than each sample's label, in class order: (B, C) -> (B, C - 1). A gather with
    fixed shapes (no boolean indexing), so it runs inside vmap and a CUDA graph."""
    c = logits.shape[-1]
    others = torch.arange(c - 1, device=logits.device).expand(len(y), -1)
    return logits.gather(1, others + (others >= y[:, None]).long())


def not_true_distillation(student: torch.Tensor, teacher: torch.Tensor, y: torch.Tensor, b: dict, beta: float,
                          tau: float) -> torch.Tensor:
    """FedNTD's Eq. (4): beta tau^2 mean_i KL(q~_g,i || q~_i), q~ = softmax(not-true logits / tau) of the global model
    (teacher, no gradient) and of the client model (student), over the step's real samples. FedNTD's released code
    (beta = 1, tau = 1) leaves out the tau^2, which is 1 there."""
    log_q = F.log_softmax(not_true(student, y) / tau, dim=1)
    log_q_g = F.log_softmax(not_true(teacher.detach(), y) / tau, dim=1)
    kl = (log_q_g.exp() * (log_q_g - log_q)).sum(1)
    return beta * tau ** 2 * batch_mean(kl, b)


def vacant_classes(pseudo_fix: np.ndarray, num_classes: int) -> np.ndarray:
    """FedVLS's vacant classes of a client, from what it knows (its fix set's pseudo-labels): 1.0 for a class with
    none, else 0.0."""
    return (np.bincount(pseudo_fix, minlength=num_classes) == 0).astype(np.float32)


def vacant_distillation(student: torch.Tensor, teacher: torch.Tensor, vacant: torch.Tensor, b: dict,
                        lam: float) -> torch.Tensor:
    """FedVLS's Eq. (6) as its released code computes it: lam mean_i KL(softmax_V(z_g,i) || softmax_V(z_i)), each softmax
    over the vacant classes V only (vacant: (B, C), 1 for a vacant class), over the step's real samples; 0 where a client
    has no vacant class. Other classes are filled with a logit far below any real one (exp underflows to 0), which
    keeps the shapes fixed for vmap and CUDA graphs."""
    keep = vacant > 0
    log_q = F.log_softmax(student.masked_fill(~keep, -1e4), dim=1)
    log_q_g = F.log_softmax(teacher.detach().masked_fill(~keep, -1e4), dim=1)
    kl = torch.where(keep, log_q_g.exp() * (log_q_g - log_q), 0).sum(1)
    return lam * batch_mean(kl, b)


@torch.no_grad()
def teacher_logits(exp, model, tasks) -> None:
    """Each task's "t_logits" view: the received global model's logits (eval mode, its sBN statistics: the model that
    made the pseudo-labels) on every step's fix view, the same strong views the client trains on. The teacher does not
    change during local training, so one batched forward before it gives what a forward in every step would."""
    for t in tasks:
        x = t.views["x"]
        t.views["t_logits"] = predict(model, x.flatten(0, 1), exp.mean, exp.std, logits=True).unflatten(0, x.shape[:2])
