"""(FL)^2 (Lee, Le, Shin, Lee; NeurIPS 2024, "Overcoming Few Labels in Federated Semi-Supervised Learning"): SemiFL's
setting and round, with the clients' training replaced. Equation numbers are its paper's.

  CAT   client-specific adaptive threshold (Eq. 7-9): per client, from the global model's probabilities q on a weak
        view of its images (once a round), tau_k = mean max q, tau_k(c) = tau_k p~(c) / max p~ with p~(c) the mean
        q(c); the client trains on the images with max q >= tau_k(argmax q), labeled argmax q (pseudo_labels).
  SACR  sharpness-aware consistency (Eq. 10-14), each step on a strong view x of a batch (both engines: `sacr_loss`):
          L_a  = CE(f_W(x), y_hat)                                   every selected image (Eq. 10)
          L_p  = CE(f_W(x), y_hat) on the high-confidence images, max q >= tau_f = `threshold` (Eq. 11)
          eps  = rho grad L_p / ||grad L_p||                        SAM (Eq. 12; fl2_variant="code": ASAM, below)
          L_cs = KL(Q || Q*) on the high-confidence images, mean over the batch; Q = softmax f_W(x) (no gradient),
                 Q* = softmax f_{W+eps}(x) (Eq. 13, temperature 1)
          step on grad_W L_a(W) + grad L_cs(W + eps) (Eq. 14, w_a = w_cs = 1; eps held fixed, as SAM does)
        written as one loss, L_a(W) + L_cs(W + eps.detach()), whose gradient is exactly that.
  LSAA  learning-status-aware aggregation (Eq. 15): client k weighs (1 - tau_k) / sum_j (1 - tau_j), then SemiFL's
        global momentum and server fine-tune.
No mixup (its Table 4). fl2_variant="code" runs its released code's perturbation, ASAM: T = |w| + 0.01 on weight
tensors (1 elsewhere), eps = rho T^2 g / ||T g||. Its code also never steps the cosine schedule (lr stays 0.03) and
pre-trains the server for 50 epochs before round 1; neither is the paper's and neither is run here.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..net import batch_ce, batch_mean, sample_ce
from ..rounds import Round, RoundRecord
from ..tasks import make_tasks
from . import pseudo_labels
from .pseudo_labels import record_client_models
from .semifl import (begin_round, end_round, label_clients, record_labels, strong_options,
                     train_clients)

ASAM_ETA = 0.01


def perturbation(params: dict, grads: dict, rho: float, variant: str = "paper") -> dict:
    """Eq. (12): eps = rho g / ||g|| (SAM; the norm over all parameters), or with variant="code" ASAM's
    rho T^2 g / ||T g||, T = |w| + eta on weight tensors. Zero where the gradient is zero (no branch on a tensor's
    value: it runs inside vmap)."""
    scale = {k: (p.detach().abs() + ASAM_ETA if variant == "code" and "weight" in k else torch.ones_like(p))
             for k, p in params.items()}
    norm = torch.sqrt(sum(((scale[k] * g) ** 2).sum() for k, g in grads.items()))
    return {k: rho * scale[k] ** 2 * g / norm.clamp_min(torch.finfo(g.dtype).tiny) for k, g in grads.items()}


def sacr_loss(rho: float, variant: str = "paper"):
    """One step's loss (Eq. 10-14), batch b: x (strong view), y (CAT pseudo-labels), confident (max q >= tau_f).
    It reads the weights (f.params) and runs the network at perturbed ones (f.at), so it trains in both engines.
    aux: (seen, right, high-confidence, right and high-confidence), b["truth"] the true labels for the counts only."""
    def loss_fn(f, b):
        logits = f(b["x"])
        loss_a = batch_ce(logits, b["y"], b)
        mask = b["confident"].float()

        def loss_p(weights):   # Eq. (11): CE on the high-confidence images (0 without any)
            return (sample_ce(f.at(weights, b["x"]), b["y"]) * mask).sum(-1) / mask.sum(-1).clamp_min(1)
        weights = {k: v.detach() for k, v in f.params.items()}
        eps = perturbation(weights, torch.func.grad(loss_p)(weights), rho, variant)
        log_q_star = F.log_softmax(f.at({k: p + eps[k] for k, p in f.params.items()}, b["x"]), dim=-1)
        q = F.softmax(logits.detach(), dim=-1)
        kl = (q * (torch.log(q.clamp_min(1e-12)) - log_q_star)).sum(-1)
        loss_cs = batch_mean(kl * mask, b)
        right = (b["y"] == b["truth"]).float()
        return loss_a + loss_cs, torch.stack([mask.new_tensor(float(mask.shape[-1])), right.sum(-1), mask.sum(-1),
                                              (right * mask).sum(-1)], -1)
    return loss_fn


def client_specs(exp, st, rnd: Round, active) -> tuple[list, list, list]:
    """CAT for every active client: (training specs, ids of the clients with a non-empty set, their levels tau_k)."""
    cfg, rec = exp.cfg, rnd.record
    labeled = label_clients(exp, st.model, rnd, active)   # the config's rule is client-adaptive: Eq. (7)-(9)
    specs, trained, levels, counts = [], [], [], np.zeros(4, dtype=np.int64)
    for c, lab in zip(active, labeled):
        keep = np.flatnonzero(lab["conf"] >= lab["tau"])
        right = lab["pseudo"] == lab["truth"]
        counts += [len(right), right.sum(), len(keep), right[keep].sum()]
        if len(keep):
            dev = exp.device
            specs.append({"x": lab["x"][keep], "y": torch.as_tensor(lab["pseudo"][keep], device=dev),
                          "confident": torch.as_tensor(lab["conf"][keep] >= cfg.threshold, device=dev),
                          "truth": torch.as_tensor(lab["truth"][keep], device=dev)})
            trained.append(int(c))
            levels.append(float(lab["conf"].mean()))     # tau_k, Eq. (7)
    record_labels(rec, counts)
    if rnd.diagnose:
        rec.diagnostics.update(pseudo_labels.skew_measures(labeled, cfg.num_classes))
    shares = pseudo_labels.confident_counts(labeled, cfg.num_classes)
    rec.diagnostics.update({f"fix_share_c{k}": v / max(shares.sum(), 1) for k, v in enumerate(shares)})
    return specs, trained, levels


def lsaa_weights(levels) -> torch.Tensor:
    """Eq. (15): beta_k = (1 - tau_k) / sum_j (1 - tau_j) (equal weights if every client is fully confident)."""
    w = 1 - torch.as_tensor(levels, dtype=torch.float64)
    return w / w.sum() if w.sum() > 0 else torch.full_like(w, 1 / len(w))


def fl2_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, rec = exp.cfg, rnd.record
    active = begin_round(exp, st, rnd)
    with rnd.timed("pseudo_label"):
        specs, trained, levels = client_specs(exp, st, rnd, active)
    with rnd.timed("augment"):
        tasks = make_tasks(specs, cfg.client_batch, cfg.local_epochs, rnd.rng, rnd.g, flip=exp.data.flip,
                           view="strong", strong_variant=cfg.strong_aug, **strong_options(cfg))
    rec.clients_trained = len(trained)
    stacked, stats = train_clients(exp, st, rnd, tasks, trained, sacr_loss(cfg.sam_rho, cfg.fl2_variant))
    if len(stats):
        _, n, right, n_conf, right_conf = stats.sum(0).tolist()
        rec.diagnostics.update(high_confidence_share=n_conf / n if n else float("nan"),
                               high_confidence_acc=100 * right_conf / n_conf if n_conf else float("nan"))
    if rnd.diagnose and stacked:
        record_client_models(exp, st, rnd, stacked, trained)
    end_round(exp, st, rnd, stacked, lsaa_weights(levels) if trained else None)
    return rec
