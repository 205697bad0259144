"""SemiFL: semi-supervised federated learning by alternate training (Diao, Ding, Tarokh; NeurIPS 2022), Algorithm 1.
Equation numbers are the NeurIPS paper's. A round in the authors' order (round_order="code", the default):
  S_t: max(floor(C M), 1) clients sampled without replacement; sBN statistics of the global model
  ClientUpdate: pseudo-labels of the global model (2), fix set (3), mix set (4), E epochs of L_fix + L_mix (5, 6)
  Model Averaging: W = M_t^-1 sum_m W_u,m, then global momentum (beta_g, Table 5)
  ServerUpdate: E epochs of supervised SGD on the server's labeled data (1): the next global model
round_order="paper" runs Algorithm 1 as printed: ServerUpdate first, and once more after the last round.
Table 2's switches: finetune=False trains the server beside the clients and averages it in with weight 1/2;
global_pseudo_labels=False pseudo-labels each batch with the model being trained (FixMatch's loss).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .. import augment
from ..models import load_weights, predict
from ..rounds import Round, RoundRecord
from ..tasks import make_tasks


# ---------------------------------------------------------------------- losses of one local step
def supervised_loss(f, b):
    """Eq. (1): CE(f(alpha(x)), y) on a weakly augmented labeled batch."""
    return F.cross_entropy(f(b["x"]), b["y"]), b["x"].new_zeros(0)


def client_loss(f, b):
    """Eq. (5), (6) with lambda = 1: L_fix = CE(f(A(x_fix)), y_fix) on the strong view; with a mix batch also
    L_mix = lam CE(f(x_mix), y_fix) + (1 - lam) CE(f(x_mix), y_mix), x_mix = lam alpha(x_fix) + (1 - lam) alpha(x_b^mix).
    Each CE is a batch mean."""
    loss = F.cross_entropy(f(b["x"]), b["y"])
    if "x_mix" in b:
        out = f(augment.mixup(b["x_weak"], b["x_mix"], b["lam"]))
        loss = loss + b["lam"] * F.cross_entropy(out, b["y"]) + (1 - b["lam"]) * F.cross_entropy(out, b["y_mix"])
    return loss, b["x"].new_zeros(0)


def fixmatch_loss(threshold: float):
    """Table 2, no global pseudo-labels: mean_i 1[max p_i >= tau] CE(f(A(x_i)), argmax p_i), p = softmax(f(alpha(x_i)))
    of the model being trained. aux: (seen, right, >= tau, right and >= tau); b["y"]: true labels, for aux only."""
    def loss_fn(f, b):
        conf, pseudo = torch.softmax(f(b["x_weak"]).detach(), dim=1).max(dim=1)
        mask = (conf >= threshold).float()
        loss = (F.cross_entropy(f(b["x"]), pseudo, reduction="none") * mask).mean()
        right = (pseudo == b["y"]).float()
        n = torch.tensor(float(len(pseudo)), device=mask.device)
        return loss, torch.stack([n, right.sum(), mask.sum(), (right * mask).sum()])
    return loss_fn


# ---------------------------------------------------------------------- ServerUpdate
def server_update(exp, st, rnd: Round, losses: list | None = None):
    """ServerUpdate: E epochs of Eq. (1) on the server's labeled data from the global model; (weights, mean loss)."""
    cfg, data = exp.cfg, exp.data
    spec = {"x": data.x_train[exp.server_idx], "y": data.y_train[exp.server_idx]}
    tasks = make_tasks([spec], cfg.server_batch, cfg.server_epochs, rnd.rng, rnd.g, flip=data.flip)
    kept = st.server_state if cfg.server_momentum == "keep" else None   # the authors keep it across rounds
    stacked, states, stats = exp.server_engine.train(st.model, tasks, supervised_loss, rnd.lr, [kept], losses)
    st.server_state = states[0] or None
    return {k: v[0] for k, v in stacked.items()}, stats[0, 0].item() / tasks[0].steps


def finetune(exp, st, rnd: Round) -> None:
    """W_s <- ServerUpdate(x_s, y_s, W_s): the global model becomes its fine-tuned self."""
    rec, losses = rnd.record, [] if rnd.diagnose else None
    with rnd.timed("server"):
        weights, rec.server_loss = server_update(exp, st, rnd, losses)
        load_weights(st.model, weights)
    if rnd.diagnose:
        rec.diagnostics.update(server_loss_first=losses[0], server_loss_last=losses[-1],
                               acc_finetuned=exp.diagnostic_accuracy(st.model))


# ---------------------------------------------------------------------- ClientUpdate
def fix_and_mix(confidence: np.ndarray, threshold: float, rng: np.random.Generator):
    """Eq. (3): fix = the client's samples with max probability >= tau. Eq. (4): mix = |fix| draws WITH replacement
    from all of the client's samples. Returns (fix, mix) indices; an empty fix set -> both empty."""
    fix = np.flatnonzero(confidence >= threshold)
    return (fix, fix) if len(fix) == 0 else (fix, rng.integers(0, len(confidence), size=len(fix)))


def pseudo_label(exp, st, rnd: Round, active) -> tuple[list, list]:
    """Eq. (2)-(4) for every active client: one weak view of all its data labeled by the global model (eval mode,
    sBN statistics); returns (fix/mix specs, client ids) of the clients whose fix set is not empty."""
    cfg, data, rec = exp.cfg, exp.data, rnd.record
    xs = [data.x_train[exp.client_idx[c]] for c in active]
    probs = predict(st.model, augment.weak(torch.cat(xs), data.flip, rnd.g), exp.mean, exp.std)
    conf, pseudo = (t.cpu().numpy() for t in probs.max(1))
    truth = torch.cat([data.y_train[exp.client_idx[c]] for c in active]).cpu().numpy()   # for the metrics only
    starts = np.cumsum([0] + [len(x) for x in xs])
    specs, trained, fix_all, mix_all = [], [], [], []
    for c, x, a, b in zip(active, xs, starts[:-1], starts[1:]):
        fix, mix = fix_and_mix(conf[a:b], cfg.threshold, rnd.rng)
        fix_all.append(a + fix)
        mix_all.append(a + mix)
        if len(fix) == 0:
            continue   # "If D_fix is empty then stop": the client sends nothing
        y_hat = torch.as_tensor(pseudo[a:b], device=exp.device)
        specs.append({"x": x[fix], "y": y_hat[fix], "x_mix": x[mix], "y_mix": y_hat[mix]})
        trained.append(int(c))
    fix, mix = np.concatenate(fix_all), np.concatenate(mix_all)
    right = pseudo == truth
    rec.pseudo_acc, rec.label_ratio = 100 * float(right.mean()), len(fix) / len(truth)
    rec.threshold_acc = 100 * right[fix].sum() / len(fix) if len(fix) else float("nan")
    if rnd.diagnose:   # the mix labels, and which classes the fix set teaches
        shares = np.bincount(pseudo[fix], minlength=cfg.num_classes) / max(len(fix), 1)
        rec.diagnostics.update(mix_acc=100 * right[mix].sum() / len(mix) if len(mix) else float("nan"),
                               mix_confident=(conf[mix] >= cfg.threshold).mean() if len(mix) else float("nan"),
                               **{f"fix_share_c{k}": v for k, v in enumerate(shares)})
    return specs, trained


def train_clients(exp, st, rnd: Round, tasks, clients: list[int], loss_fn):
    """Each client trains a copy of the global model on its task (ClientUpdate's loop); with client_momentum=keep a
    client resumes its own SGD momentum from its last round (the authors' code). Returns (weights, stats)."""
    keep, rec = exp.cfg.client_momentum == "keep", rnd.record
    states = [st.client_states.get(c) if keep else None for c in clients]
    with rnd.timed("clients"):
        stacked, new_states, stats = exp.engine.train(st.model, tasks, loss_fn, rnd.lr, states)
    if keep:
        st.client_states.update({c: s for c, s in zip(clients, new_states) if s})
    rec.client_samples = int(sum(t.size.sum() for t in tasks))
    if len(stats):
        rec.client_loss = (stats[:, 0].sum() / sum(t.steps for t in tasks)).item()
    return stacked, stats


# ---------------------------------------------------------------------- aggregation
def average(stacked: dict, server: dict | None = None) -> dict:
    """Model Averaging: W = M_t^-1 sum_m W_u,m, equal weights (not by data size). With `server` (finetune=False, Table 2) the
    server gets weight 1/2 and each of n clients 1/(2n)."""
    mean = {k: v.mean(0) for k, v in stacked.items()}
    if server is None or not stacked:
        return mean if server is None else dict(server)
    return {k: 0.5 * server[k] + 0.5 * mean[k] for k in mean}


def global_momentum_step(model: torch.nn.Module, opt: torch.optim.Optimizer, averaged: dict) -> None:
    """Global momentum (Table 5's beta_g): server SGD (lr 1, momentum beta_g = st.global_opt) on the pseudo-gradient
    w_global - w_average; beta_g = 0 gives w_global = w_average. Plain BN's running statistics are copied."""
    for name, p in model.named_parameters():
        p.grad = p.detach() - averaged[name].to(p.dtype)
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name in averaged:
                b.copy_(averaged[name])


# ---------------------------------------------------------------------- one round
def semifl_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, data, rec, diag = exp.cfg, exp.data, rnd.record, rnd.record.diagnostics
    paper_order = cfg.finetune and cfg.round_order == "paper"
    if rnd.diagnose:
        diag["acc_start"] = exp.diagnostic_accuracy(st.model, per_class=diag, prefix="start_")
    if paper_order:
        finetune(exp, st, rnd)
        st.sbn_fresh = False
    active = rnd.rng.choice(cfg.num_clients, cfg.num_active, replace=False)
    if cfg.global_pseudo_labels:
        if not st.sbn_fresh:   # after an evaluation the statistics already belong to this global model
            with rnd.timed("sbn"):
                exp.refresh_sbn(st.model)
        with rnd.timed("pseudo_label"):
            specs, trained = pseudo_label(exp, st, rnd, active)
        loss_fn, views = client_loss, dict(view="strong", mix_alpha=cfg.mixup_alpha if cfg.mix_loss else None)
    else:
        trained = [int(c) for c in active]
        specs = [{"x": data.x_train[exp.client_idx[c]], "y": data.y_train[exp.client_idx[c]]} for c in trained]
        loss_fn, views = fixmatch_loss(cfg.threshold), dict(view="strong", weak_too=True)
    rec.clients_trained = len(trained)
    with rnd.timed("augment"):
        tasks = make_tasks(specs, cfg.client_batch, cfg.local_epochs, rnd.rng, rnd.g, flip=data.flip,
                           strong_variant=cfg.strong_aug, **views)
    stacked, stats = train_clients(exp, st, rnd, tasks, trained, loss_fn)
    if not cfg.global_pseudo_labels and stacked:   # the per-batch pseudo-labels' counts
        _, n, right, n_mask, mask_right = stats.sum(0)
        rec.pseudo_acc, rec.label_ratio = 100 * (right / n).item(), (n_mask / n).item()
        rec.threshold_acc = 100 * (mask_right / n_mask).item() if n_mask > 0 else float("nan")
    if rnd.diagnose and stacked:
        accs = [exp.diagnostic_accuracy(st.model, {k: v[i] for k, v in stacked.items()}) for i in range(len(trained))]
        diag.update(acc_client_mean=float(np.mean(accs)), acc_client_min=min(accs), acc_client_max=max(accs))
    server_weights = None
    if not cfg.finetune:   # "parallel": the server trains from the same global model beside the clients
        with rnd.timed("server"):
            server_weights, rec.server_loss = server_update(exp, st, rnd)
    with rnd.timed("aggregate"):
        if stacked or server_weights is not None:
            averaged = average(stacked, server_weights)
            if rnd.diagnose:
                diag["acc_average"] = exp.diagnostic_accuracy(st.model, averaged)
            global_momentum_step(st.model, st.global_opt, averaged)
    if rnd.diagnose:
        diag["acc_aggregate"] = exp.diagnostic_accuracy(st.model, per_class=diag, prefix="aggregate_")
    if cfg.finetune and (not paper_order or rnd.last):
        finetune(exp, st, rnd)
    return rec
