"""The losses several methods share: Eq. (1)'s supervised loss (SemiFL's server, the supervised baselines) and
FixMatch's per-batch loss (Table 2's clients without global pseudo-labels, FedAvg + FixMatch, centralized FixMatch,
CBAFed's unlabeled clients), with the counts of its pseudo-labels."""
from __future__ import annotations

import torch

from ..net import batch_ce, batch_mean, graph_safe, sample_ce
from ..rounds import RoundRecord


@graph_safe
def supervised_loss(f, b):
    """Eq. (1): CE(f(alpha(x)), y) on a weakly augmented labeled batch."""
    return batch_ce(f(b["x"]), b["y"], b), b["x"].new_zeros(0)


def fixmatch_loss(threshold: float):
    """Table 2, no global pseudo-labels: mean_i 1[max p_i >= tau] CE(f(A(x_i)), argmax p_i), p = softmax(f(alpha(x_i)))
    of the model being trained. aux: (seen, right, >= tau, right and >= tau); b["y"]: true labels, for aux only."""
    @graph_safe
    def loss_fn(f, b):
        conf, pseudo = torch.softmax(f(b["x_weak"]).detach(), dim=-1).max(dim=-1)
        mask = (conf >= threshold).float()
        loss = batch_mean(sample_ce(f(b["x"]), pseudo) * mask, b)
        right = (pseudo == b["y"]).float()
        if "valid" in b:   # a padded step: count its real samples only
            real = b["valid"].float()
            right, mask, n = right * real, mask * real, real.sum(-1)
        else:   # a fill, not a host-to-device copy
            n = torch.full(pseudo.shape[:-1], float(pseudo.shape[-1]), device=mask.device)
        return loss, torch.stack([n, right.sum(-1), mask.sum(-1), (right * mask).sum(-1)], -1)
    return loss_fn


def record_fixmatch(rec: RoundRecord, stats: torch.Tensor) -> None:
    """Without global pseudo-labels: the per-batch pseudo-labels' counts that fixmatch_loss summed."""
    _, n, right, n_mask, mask_right = stats.sum(0)
    rec.pseudo_acc, rec.label_ratio = 100 * (right / n).item(), (n_mask / n).item()
    rec.threshold_acc = 100 * (mask_right / n_mask).item() if n_mask > 0 else float("nan")
