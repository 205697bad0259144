"""Which global pseudo-labels a client trains on: the selection rule beside SemiFL's Eq. (3) (Config.pseudo_label_rule).

Every rule reads the global model's class probabilities on a client's weakly augmented images (Eq. 2) and returns,
per image, its pseudo-label, its confidence and the threshold it must reach to enter the fix set:

  fixed            SemiFL, Eq. (3): argmax p, confident when max p >= tau (the paper's rule; the default).
  class-balanced   CBAFed (Li et al., CVPR 2023), Sec. 3.2: tau_c = min(p_c + 0.84 - std(p), tau_up), p the class shares
                   of the previous round's confident pseudo-labels (summed over the active clients, which send their
                   class counts: C integers) plus the labeled set; std unbiased; tau_up = tau. Its released code scales
                   p by C / 10 (= 1 for ten classes; kept).
  aligned          Distribution alignment (ReMixMatch, Berthelot et al., ICLR 2020): p~ = Normalize(p * prior / mean p),
                   prior the labeled set's class shares, mean p the mean prediction of the global model on this round's
                   active clients' images (each client sends its mean, C numbers; about 6,000 images a round at the
                   small profile, ReMixMatch's 128 batches of 64); then argmax p~ >= tau.
  client-adaptive  (FL)^2 (Lee et al., NeurIPS 2024), its client-specific adaptive threshold, FreeMatch's self-adaptive
                   rule on one client: t = mean_i max p_i, l_c = mean_i p_ic, tau_c = t * l_c / max_c l_c (computed once
                   a round from the global model, as its `make_pseudo_lb_dataset`); nothing is sent.
  global-adaptive  FreeMatch's self-adaptive threshold (Wang et al., ICLR 2023) as FreeMatch computes it, over all the
                   unlabeled data: here the round's active clients together (each sends the sums of max p and of p over
                   its images, C + 1 numbers): t = mean max p, l_c = mean p_c, tau_c = t * l_c / max_c l_c, one set for
                   every client. The label-skew study's fix, fixed before its runs (notebooks/label_skew.ipynb):
                   client-adaptive's l_c, from one client's own predictions, gives a client holding two classes
                   thresholds near 0.1 for the eight others, so it trains on nearly every (necessarily wrong)
                   pseudo-label of those; the federation's l_c does not know which client holds what.

The class-balanced rule carries the last round's counts in the run's state (checkpointed); the others are stateless.
"""
from __future__ import annotations

import numpy as np

FIXED, CLASS_BALANCED, ALIGNED, CLIENT_ADAPTIVE = "fixed", "class-balanced", "aligned", "client-adaptive"
GLOBAL_ADAPTIVE = "global-adaptive"
RULES = (FIXED, CLASS_BALANCED, ALIGNED, CLIENT_ADAPTIVE)   # the few-label study's rules (notebooks/few_labels)
ALL_RULES = RULES + (GLOBAL_ADAPTIVE,)                     # and the label-skew study's fix
CBAFED_OFFSET = 0.84   # CBAFed's constant in tau_c = p_c + 0.84 - std(p)


def class_shares(counts) -> np.ndarray:
    """CBAFed's p~: the class shares of counts sigma, times C / 10 (its paper's modified p~, and its code's)."""
    counts = np.asarray(counts, dtype=np.float64)
    return counts / counts.sum() * (len(counts) / 10)


def class_balanced_thresholds(counts, tau_up: float) -> np.ndarray:
    """CBAFed's thresholds from class counts: tau_c = min(p~_c + 0.84 - std(p~), tau_up), std with ddof=1
    (its paper's 1 / (C - 1), and torch.std's default, which its code calls); methods/cbafed.py calls it too."""
    p = class_shares(counts)
    return np.minimum(p + CBAFED_OFFSET - p.std(ddof=1), tau_up)


def align(probs: np.ndarray, prior: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Distribution alignment: each row of probs times prior / mean, renormalized to sum 1."""
    out = probs * (np.asarray(prior) / np.asarray(mean))
    return out / out.sum(1, keepdims=True)


def client_adaptive_thresholds(probs: np.ndarray) -> np.ndarray:
    """(FL)^2's thresholds t * l_c / max_c l_c for one client from the global model's probabilities on its images."""
    level, per_class = probs.max(1).mean(), probs.mean(0)
    return level * per_class / per_class.max()


def select(rule: str, probs: list[np.ndarray], tau: float, labeled_counts: np.ndarray, state: dict) -> list[dict]:
    """The rule on the active clients' probabilities (one array per client, rows = images), given the labeled set's
    class counts: per client {"conf", "pseudo", "tau", "tau_class"} (tau: one threshold, or per image its pseudo-label's
    class's; tau_class: every class's, for the diagnostics). class-balanced reads state["counts"], the previous round's
    confident counts (absent in the first round), which the caller stores from `confident_counts`."""
    labeled_counts = np.asarray(labeled_counts, dtype=np.float64)
    if rule == ALIGNED:
        mean = np.concatenate(probs).mean(0)
        probs = [align(p, labeled_counts / labeled_counts.sum(), mean) for p in probs]
    if rule == CLASS_BALANCED:
        per_class = class_balanced_thresholds(labeled_counts + state.get("counts", 0), tau)
    if rule == GLOBAL_ADAPTIVE:
        per_class = client_adaptive_thresholds(np.concatenate(probs))   # the same formula on every client's images
    out = []
    for p in probs:
        pseudo = p.argmax(1)
        if rule in (CLASS_BALANCED, GLOBAL_ADAPTIVE):
            tau_c = per_class
        elif rule == CLIENT_ADAPTIVE:
            tau_c = client_adaptive_thresholds(p)
        else:
            tau_c = np.full(p.shape[1], tau)
        out.append({"conf": p.max(1), "pseudo": pseudo, "tau": tau if rule in (FIXED, ALIGNED) else tau_c[pseudo],
                    "tau_class": tau_c})
    return out


def confident_counts(selected: list[dict], num_classes: int) -> np.ndarray:
    """Class counts of the pseudo-labels that passed their thresholds, summed over clients (what a client sends)."""
    return sum((np.bincount(s["pseudo"][s["conf"] >= s["tau"]], minlength=num_classes) for s in selected),
               np.zeros(num_classes, dtype=np.int64))


# ---------------------------------------------------------------------- label skew (the label-skew study's diagnostics)
HELD_SHARE = 0.05   # a client "holds" a class when at least 5 % of its images are of it (Non-IID K=2: its two classes)


def held_classes(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Which classes a client holds (a boolean per class), from its labels: its true labels in the diagnostics, its
    fix set's pseudo-labels in FedRS's loss (skew_losses.fedrs_scale), which knows no true label."""
    return np.bincount(labels, minlength=num_classes) >= HELD_SHARE * len(labels)


def skew_measures(labeled: list[dict], num_classes: int) -> dict:
    """How a rule treats the classes a client holds and those it does not, a mean over the active clients (one vote
    each; nan for a measure with no case on any client), from each one's true labels (`truth`, diagnostics only),
    pseudo-labels, confidences and per-class thresholds (select):
      skew_held            classes held (2 under Non-IID K=2, 10 under IID)
      skew_tau_held/unheld mean threshold tau_c over the classes it holds / does not hold
      skew_pred_unheld     share of its images whose pseudo-label is a class it does not hold (all of them wrong)
      skew_fix_unheld      share of its fix set (pseudo-labels at or above their threshold) in classes it does not hold
      skew_pass_held/unheld share of the images pseudo-labeled as a held / not-held class that pass their threshold
      skew_fix_acc_held    % right among its fix-set labels of held classes (a not-held label is never right)"""
    mean = lambda v, m: v[m].mean() if m.any() else np.nan   # noqa: E731  (v over the cases m; nan if none)
    rows = []
    for lab in labeled:
        held = held_classes(lab["truth"], num_classes)
        fix = lab["conf"] >= lab["tau"]
        pred_held = held[lab["pseudo"]]
        right = lab["pseudo"] == lab["truth"]
        tau_c = lab["tau_class"]
        rows.append({"skew_held": held.sum(), "skew_tau_held": tau_c[held].mean(),
                     "skew_tau_unheld": mean(tau_c, ~held),
                     "skew_pred_unheld": (~pred_held).mean(),
                     "skew_fix_unheld": mean(~pred_held, fix),
                     "skew_pass_held": mean(fix, pred_held), "skew_pass_unheld": mean(fix, ~pred_held),
                     "skew_fix_acc_held": 100 * mean(right, fix & pred_held)})
    return {k: float(np.nanmean([r[k] for r in rows])) if any(np.isfinite(r[k]) for r in rows) else float("nan")
            for k in rows[0]} if rows else {}


def class_shift(client_acc: dict, start_acc: dict, held: np.ndarray) -> tuple[float, float]:
    """Per-class test accuracy of a client's model minus that of the global model it started from (percentage points;
    both `{k: acc}`), averaged over the classes the client holds and over the others (nan when it holds every class)."""
    delta = np.array([client_acc[k] - start_acc[k] for k in range(len(held))])
    return float(delta[held].mean()), float(delta[~held].mean()) if (~held).any() else float("nan")


def record_client_models(exp, st, rnd, stacked: dict, trained: list[int]) -> None:
    """Diagnostics of the trained client models before averaging: their test accuracy (mean, min, max) and each one's
    class_shift (the start model's sBN statistics from the same draw as the clients')."""
    classes, diag = range(exp.cfg.num_classes), rnd.record.diagnostics
    start = {}
    exp.diagnostic_accuracy(st.model, dict(st.model.state_dict()), per_class=start)
    accs, shifts = [], []
    for i, c in enumerate(trained):
        per = {}
        accs.append(exp.diagnostic_accuracy(st.model, {k: v[i] for k, v in stacked.items()}, per_class=per))
        held = held_classes(exp.data.y_train[exp.client_idx[c]].cpu().numpy(), exp.cfg.num_classes)
        shifts.append(class_shift({k: per[f"acc_c{k}"] for k in classes},
                                                {k: start[f"acc_c{k}"] for k in classes}, held))
    held_shift, unheld_shift = np.array(shifts).T
    diag.update(acc_client_mean=float(np.mean(accs)), acc_client_min=min(accs), acc_client_max=max(accs),
                skew_dacc_held=float(np.mean(held_shift)),
                skew_dacc_unheld=float(np.nanmean(unheld_shift)) if np.isfinite(unheld_shift).any() else float("nan"))
