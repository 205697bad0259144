"""The label-skew remedies of SemiFL's client step (notebooks/label_skew.ipynb), each off by default. Under Non-IID K=2
a client's update raises the two classes it has and lowers the eight others (local forgetting); a remedy changes what
its local step asks of those eight. methods/semifl.py's client loss calls one hook, a `Remedy` (`remedy(cfg)` picks it;
the base class changes nothing). Their fields are SemiFL's own (methods.SKEW_FIELDS):

- FedRS's restricted softmax (Li and Zhan, KDD 2021; fedrs_alpha): the logits of a client's other classes scaled
  by alpha in every CE of its loss (`FedRS`).
- FedNTD's not-true distillation (Lee et al., NeurIPS 2022, Eq. 4; ntd_beta, ntd_tau): on each fix sample, the
  client model's softmax over the classes other than its pseudo-label pulled towards the received global model's
  (`NotTrue`, `teacher_logits`).
- FedVLS's vacant-class distillation term alone (Guo et al., AAAI 2025, Eq. 6; vls_lambda): the same pull over
  the classes with no pseudo-label in the client's fix set (`VacantTerm`).
- FedVLS as its released code trains (vls_variant="released"): prior correction, LADE, vacant-class KL (`FedVLS`).
- A head the clients do not train (FedBABU: Oh, Kim and Yun, ICLR 2022; frozen_head): `FrozenHead`, net.frozen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..net import batch_ce, batch_mean, sample_ce
from ..models import predict
from . import fields_of, pseudo_labels

HEAD = "fc."   # the classifier's parameter names in every model of models.py


@dataclass(frozen=True)
class Remedy:
    """How a remedy enters SemiFL's client step. `rows`: per-client vectors (C,) from its fix set's pseudo-labels,
    copied to each fix sample (a step's batch reads b[name], (B, C)); `ce`: every cross-entropy of the loss; `extra`:
    terms added to it; `frozen`: parameter-name prefixes the clients do not train; `teacher`: the step reads
    b["t_logits"] (`teacher_logits`). Frozen dataclasses: equal settings make equal losses (engine.loss_key)."""
    frozen = ()
    teacher = False

    def rows(self, pseudo_fix: np.ndarray, num_classes: int) -> dict:
        return {}

    def ce(self, logits: torch.Tensor, y: torch.Tensor, b: dict) -> torch.Tensor:
        return batch_ce(logits, y, b)

    def logits(self, logits: torch.Tensor, b: dict) -> torch.Tensor:
        """The logits every cross-entropy of the remedy reads (a variant's own per-sample CE reads them too)."""
        return logits

    def weights(self, y: torch.Tensor, b: dict) -> torch.Tensor | None:
        """Per-sample weights of the remedy's cross-entropies (None: the step's real samples, batch_mean)."""
        return None

    def extra(self, f, b: dict, out_fix: torch.Tensor, out_mix, mixed) -> torch.Tensor | float:
        return 0.0


# ---------------------------------------------------------------------- FedRS
def fedrs_scale(pseudo_fix: np.ndarray, num_classes: int, alpha: float) -> np.ndarray:
    """FedRS's alpha_c: 1 for a client's own classes (those of at least pseudo_labels.HELD_SHARE of its fix set: it
    knows no labels), alpha for the others, whose logits it scales so that its update pushes them down less."""
    return np.where(pseudo_labels.held_classes(pseudo_fix, num_classes), 1.0, alpha).astype(np.float32)


@dataclass(frozen=True)
class FedRS(Remedy):
    alpha: float = 0.5

    def rows(self, pseudo_fix, num_classes):
        return {"rs": fedrs_scale(pseudo_fix, num_classes, self.alpha)}

    def logits(self, logits, b):
        return logits * b["rs"]

    def ce(self, logits, y, b):
        return batch_ce(self.logits(logits, b), y, b)


# ---------------------------------------------------------------------- FedNTD
def not_true(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The logits of the classes other than each sample's label, in class order: (B, C) -> (B, C - 1). A gather with
    fixed shapes (no boolean indexing), so it runs inside vmap and a CUDA graph."""
    c = logits.shape[-1]
    others = torch.arange(c - 1, device=logits.device).expand(*y.shape, -1)
    return logits.gather(-1, others + (others >= y[..., None]).long())


def not_true_distillation(student: torch.Tensor, teacher: torch.Tensor, y: torch.Tensor, b: dict, beta: float,
                          tau: float) -> torch.Tensor:
    """FedNTD's Eq. (4): beta tau^2 mean_i KL(q~_g,i || q~_i), q~ = softmax(not-true logits / tau) of the global model
    (teacher, no gradient) and of the client model (student), over the step's real samples. FedNTD's released loss
    (algorithms/fedntd/criterion.py) keeps the tau^2 too; at its tau = 1 it is 1."""
    log_q = F.log_softmax(not_true(student, y) / tau, dim=-1)
    log_q_g = F.log_softmax(not_true(teacher.detach(), y) / tau, dim=-1)
    kl = (log_q_g.exp() * (log_q_g - log_q)).sum(-1)
    return beta * tau ** 2 * batch_mean(kl, b)


@dataclass(frozen=True)
class NotTrue(Remedy):
    """Not-true distillation on the fix samples (L_mix as it is: a mixed image has two labels, no one true class)."""
    beta: float = 1.0
    tau: float = 1.0
    teacher = True

    def extra(self, f, b, out_fix, out_mix, mixed):
        return not_true_distillation(out_fix, b["t_logits"], b["y"], b, self.beta, self.tau)


# ---------------------------------------------------------------------- FedVLS
def vacant_classes(pseudo_fix: np.ndarray, num_classes: int) -> np.ndarray:
    """FedVLS's vacant classes of a client from its fix set's pseudo-labels: 1.0 for a class with none, else 0.0."""
    return (np.bincount(pseudo_fix, minlength=num_classes) == 0).astype(np.float32)


def vacant_distillation(student: torch.Tensor, teacher: torch.Tensor, vacant: torch.Tensor, b: dict,
                        lam: float) -> torch.Tensor:
    """FedVLS's Eq. (6) as its released code computes it: lam mean_i KL(softmax_V(z_g,i) || softmax_V(z_i)) over the
    step's real samples, each softmax over the vacant classes V only (vacant: (B, C), 1 for vacant); 0 for a client with
    none. The other classes get a logit far below any real one: fixed shapes for vmap and CUDA graphs."""
    keep = vacant > 0
    log_q = F.log_softmax(student.masked_fill(~keep, -1e4), dim=-1)
    log_q_g = F.log_softmax(teacher.detach().masked_fill(~keep, -1e4), dim=-1)
    kl = torch.where(keep, log_q_g.exp() * (log_q_g - log_q), 0).sum(-1)
    return lam * batch_mean(kl, b)


@dataclass(frozen=True)
class VacantTerm(Remedy):
    """The vacant-class term alone, on the fix samples, with the eval-mode teacher (the label-skew study's part 2)."""
    lam: float = 0.1
    teacher = True

    def rows(self, pseudo_fix, num_classes):
        return {"vacant": vacant_classes(pseudo_fix, num_classes)}

    def extra(self, f, b, out_fix, out_mix, mixed):
        return vacant_distillation(out_fix, b["t_logits"], b["vacant"], b, self.lam)


PRIOR_EPS = 1e-9      # the released code's log(prior + 1e-9): an absent class's logit lowered by about 20.7
LADE_WEIGHT = 0.005   # its new_LADEloss's factor


def prior(pseudo_fix: np.ndarray, num_classes: int) -> np.ndarray:
    """A client's class prior as FedVLS corrects by it, from its fix set: the share of each present class (at least
    pseudo_labels.HELD_SHARE of the fix labels) among the fix labels of the present classes; 0 for an absent one."""
    counts = np.bincount(pseudo_fix, minlength=num_classes).astype(np.float64)
    counts[~pseudo_labels.held_classes(pseudo_fix, num_classes)] = 0
    return (counts / counts.sum()).astype(np.float32)


def lade(logits: torch.Tensor, y: torch.Tensor, p: torch.Tensor, b: dict) -> torch.Tensor:
    """FedVLS's released `new_LADEloss` (logit-adjusted suppression): for each class c, over the batch's real samples
    s = z_c - log(p_c + 1e-9) + log(1/C) where the label is not c and 0 where it is (the released code multiplies by
    the mask, so those zeros stay in the sum), L = 0.005 sum_c p_c (logsumexp_i s_ic - log N). p: (..., C) the prior,
    logits (..., B, C), one L per leading index."""
    c = logits.shape[-1]
    s = (logits - torch.log(p[..., None, :] + PRIOR_EPS) + math.log(1 / c)) * (
        y[..., None] != torch.arange(c, device=y.device))
    if "valid" in b:   # a padded step: its padding leaves the sums
        s = s.masked_fill(~b["valid"][..., None], float("-inf"))
        n = b["valid"].sum(-1).to(s.dtype)
    else:
        n = torch.full(y.shape[:-1], float(y.shape[-1]), device=s.device)
    return LADE_WEIGHT * ((torch.logsumexp(s, dim=-2) - torch.log(n)[..., None]) * p).sum(-1)


@dataclass(frozen=True)
class FedVLS(Remedy):
    """FedVLS as its released client loss trains (clientvls.py): every CE reads z + log(p + 1e-9): the absent classes
    (p = 0) leave the softmax, nothing pushes them down, and a sample labeled with one leaves the CE; LADE on the fix
    batch; lam KL over the absent classes on each batch of the step (fix view and mixed images), the teacher being the
    round's starting weights in training mode on the same batch (so the KL is 0 at a client's first step)."""
    lam: float = 0.1

    def rows(self, pseudo_fix, num_classes):
        return {"prior": prior(pseudo_fix, num_classes)}

    def logits(self, logits, b):
        return logits + torch.log(b["prior"] + PRIOR_EPS)

    def weights(self, y, b):
        """A sample labeled with an absent class leaves the CE (the step's padding too)."""
        present = (b["prior"].gather(-1, y[..., None])[..., 0] > 0).to(b["prior"].dtype)
        return present * b["valid"].to(present.dtype) if "valid" in b else present

    def ce(self, logits, y, b):
        ce = sample_ce(self.logits(logits, b), y)
        present = self.weights(y, b).to(ce.dtype)
        return (ce * present).sum(-1) / present.sum(-1).clamp_min(1)

    def extra(self, f, b, out_fix, out_mix, mixed):
        vacant = (b["prior"] == 0).to(out_fix.dtype)
        xs = (b["x"],) if mixed is None else (b["x"], mixed)
        teacher = [t.detach() for t in f.parts(*xs, weights=f.start)]
        loss = lade(out_fix, b["y"], b["prior"][..., 0, :], b)
        for student, t in zip((out_fix, out_mix), teacher):
            loss = loss + vacant_distillation(student, t, vacant, b, self.lam)
        return loss


# ---------------------------------------------------------------------- FedBABU
@dataclass(frozen=True)
class FrozenHead(Remedy):
    """The classifier (models' `fc`) left untrained by the clients; the server's fine-tune trains it."""
    frozen = (HEAD,)


def check_head(model) -> None:
    """A frozen head needs one: ConfigError naming the field otherwise."""
    from ..errors import ConfigError
    if not any(n.startswith(HEAD) for n, _ in model.named_parameters()):
        raise ConfigError(f"frozen_head=True: the model {type(model).__name__} has no classifier head "
                          f"(no parameter named {HEAD}*); allowed with it: False")


def remedy(cfg) -> Remedy:
    """The config's remedy (methods.SKEW_FIELDS, one at a time), or the base Remedy (none)."""
    if "fedrs_alpha" not in fields_of(cfg.algorithm):   # a method that is not SemiFL's family has none
        return Remedy()
    if cfg.fedrs_alpha != 1:
        return FedRS(cfg.fedrs_alpha)
    if cfg.ntd_beta > 0:
        return NotTrue(cfg.ntd_beta, cfg.ntd_tau)
    if cfg.vls_lambda > 0:
        return FedVLS(cfg.vls_lambda) if cfg.vls_variant == "released" else VacantTerm(cfg.vls_lambda)
    if cfg.frozen_head:
        return FrozenHead()
    return Remedy()


@torch.no_grad()
def teacher_logits(exp, model, tasks) -> None:
    """Each task's "t_logits" view: the received global model's eval-mode logits (the model that made the pseudo-labels)
    on every step's fix view, in one forward before training (the teacher does not change during it)."""
    for t in tasks:
        x = t.views["x"]
        t.views["t_logits"] = predict(model, x.flatten(0, 1), exp.mean, exp.std, logits=True).unflatten(0, x.shape[:2])
