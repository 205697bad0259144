"""SemiFL: semi-supervised federated learning by alternate training (Diao, Ding, Tarokh; NeurIPS 2022), Algorithm 1.
Equation numbers are the NeurIPS paper's. A round in the authors' order (round_order="code", the default):
  S_t: max(floor(C M), 1) clients sampled without replacement; sBN statistics of the global model
  ClientUpdate: pseudo-labels of the global model (2), fix set (3), mix set (4), E epochs of L_fix + L_mix (5, 6)
  Model Averaging: W = M_t^-1 sum_m W_u,m, then global momentum (beta_g, Table 5)
  ServerUpdate: E epochs of supervised SGD on the server's labeled data (1): the next global model
The round is begin_round (the server up to the clients), client_tasks + train_clients (ClientUpdate), end_round
(the server after them): the Flower app (semifl_core/flower) calls the same pieces from its own processes.
round_order="paper" runs Algorithm 1 as printed: ServerUpdate first, and once more after the last round.
Table 2's switches: finetune=False trains the server beside the clients and averages it in with weight 1/2;
global_pseudo_labels=False pseudo-labels each batch with the model being trained (FixMatch's loss).
"""
from __future__ import annotations

import numpy as np
import torch

from .. import augment
from ..net import batch_ce, graph_safe
from ..models import load_weights, predict
from ..rounds import Round, RoundRecord, client_round
from ..tasks import make_tasks
from . import client_state, pseudo_labels, skew_losses
from .semifl_loss import Parts, parts_loss, semifl_client_loss
from .losses import fixmatch_loss, record_fixmatch, supervised_loss  # noqa: F401 (SemiFL's, shared)


# ---------------------------------------------------------------------- the loss of one local step
@graph_safe
def client_loss(f, b, remedy: skew_losses.Remedy | None = None):
    """One local step's loss, Eq. (5) with lambda = 1: L = L_fix + L_mix, each CE a mean over the step's real samples.
      L_fix = CE(f(A(x_fix)), y_fix)                                    the fix batch, strongly augmented (Eq. 3)
      x_mix = lam alpha(x_fix) + (1 - lam) alpha(x_b^mix)               mixup with the mix batch (Eq. 4)
      L_mix = lam CE(f(x_mix), y_fix) + (1 - lam) CE(f(x_mix), y_mix)   Eq. (6)
    The fix and mix batches run as the authors' two calls of the network, each with its own batch statistics (f.parts:
    one forward of both where it can); without a mix batch (mix_loss=False) L = L_fix. With a label-skew remedy (or a
    variant's changed parts: semifl_loss.Parts) the same equations run through parts_loss, in the same order."""
    if remedy is not None:
        return parts_loss(f, b, Parts(remedy))
    if "x_mix" not in b:
        return batch_ce(f(b["x"]), b["y"], b), b["x"].new_zeros(0)
    mixed = augment.mixup(b["x_weak"], b["x_mix"], b["lam"])
    out_fix, out_mix = f.parts(b["x"], mixed)
    loss = batch_ce(out_fix, b["y"], b)                             # L_fix
    loss = loss + b["lam"] * batch_ce(out_mix, b["y"], b)           # + L_mix, its two terms summed one by one
    loss = loss + (1 - b["lam"]) * batch_ce(out_mix, b["y_mix"], b)
    return loss, b["x"].new_zeros(0)


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
def fix_and_mix(confidence: np.ndarray, threshold, rng: np.random.Generator):
    """Eq. (3): fix = the client's samples with max probability >= tau (one tau, or one per sample: the selection
    rules of pseudo_labels.py). Eq. (4): mix = |fix| draws WITH replacement from all of the client's samples.
    Returns (fix, mix) indices; an empty fix set -> both empty."""
    fix = np.flatnonzero(confidence >= threshold)
    return (fix, fix) if len(fix) == 0 else (fix, rng.integers(0, len(confidence), size=len(fix)))


def client_data(exp, c: int) -> dict:
    """Client c's own images with their true labels (a supervised client trains on them; FixMatch's loss reads the
    labels for its counts only)."""
    return {"x": exp.data.x_train[exp.client_idx[c]], "y": exp.data.y_train[exp.client_idx[c]]}


def label_clients(exp, model, rnd: Round, clients, labeling: dict | None = None) -> list[dict]:
    """Eq. (2) for the given clients: one weak view of all their data, in one batch, labeled by the global model
    (eval mode, sBN statistics), then selected by the config's pseudo_label_rule (methods/pseudo_labels.py; `fixed`
    is Eq. 3's max p >= tau). Per client: x (its images), conf, pseudo and tau (confidence, pseudo-label, the
    threshold it must reach), truth (its true labels, for the metrics only). `labeling`: the run's state of the rule
    (the class-balanced rule's previous counts)."""
    data, cfg = exp.data, exp.cfg
    xs = [data.x_train[exp.client_idx[c]] for c in clients]
    probs = predict(model, augment.weak(torch.cat(xs), data.flip, rnd.g), exp.mean, exp.std).cpu().numpy()
    truth = torch.cat([data.y_train[exp.client_idx[c]] for c in clients]).cpu().numpy()
    starts = np.cumsum([0] + [len(x) for x in xs])
    labeled_counts = np.bincount(data.y_train[exp.server_idx].cpu().numpy(), minlength=cfg.num_classes)
    picked = pseudo_labels.select(cfg.pseudo_label_rule, [probs[a:b] for a, b in zip(starts[:-1], starts[1:])],
                                  cfg.threshold, labeled_counts, labeling if labeling is not None else {})
    return [dict(x=x, truth=truth[a:b], **p) for x, a, b, p in zip(xs, starts[:-1], starts[1:], picked)]


def fix_mix_spec(exp, labeled: dict, rng: np.random.Generator):
    """Eq. (3), (4) for one labeled client (label_clients): its fix/mix training spec, or None for an empty fix set
    ("If D_fix is empty then stop": the client sends nothing); its label counts [samples, right, in fix, right in
    fix]; and its fix and mix indices."""
    fix, mix = fix_and_mix(labeled["conf"], labeled["tau"], rng)
    right = labeled["pseudo"] == labeled["truth"]
    counts = np.array([len(right), right.sum(), len(fix), right[fix].sum()], dtype=np.int64)
    if len(fix) == 0:
        return None, counts, fix, mix
    x, y_hat = labeled["x"], torch.as_tensor(labeled["pseudo"], device=exp.device)
    if exp.cfg.mix_draws == "per-read":   # the authors' loader: every read of a mix sample draws a fresh one
        spec = {"x": x[fix], "y": y_hat[fix], "x_mix": x, "y_mix": y_hat, "mix_per_read": True}
    else:
        spec = {"x": x[fix], "y": y_hat[fix], "x_mix": x[mix], "y_mix": y_hat[mix]}
    for name, v in skew_losses.remedy(exp.cfg).rows(labeled["pseudo"][fix], exp.cfg.num_classes).items():
        spec[name] = torch.as_tensor(v, device=exp.device).expand(len(fix), -1)   # one row per fix sample
    return spec, counts, fix, mix


def record_labels(rec: RoundRecord, counts: np.ndarray) -> None:
    """Figure 6's measures from the active clients' summed label counts [samples, right, in fix, right in fix]."""
    n, right, n_fix, right_fix = (int(v) for v in counts)
    rec.pseudo_acc, rec.label_ratio = 100 * (right / n), n_fix / n
    rec.threshold_acc = 100 * right_fix / n_fix if n_fix else float("nan")


def pseudo_label(exp, st, rnd: Round, active) -> tuple[list, list]:
    """Eq. (2)-(4) for every active client from the round's one stream: fix/mix specs and ids of the clients whose
    fix set is not empty."""
    cfg, rec = exp.cfg, rnd.record
    labeled = label_clients(exp, st.model, rnd, active, st.labeling)
    if cfg.pseudo_label_rule == pseudo_labels.CLASS_BALANCED:   # the counts the next round's thresholds read
        st.labeling["counts"] = pseudo_labels.confident_counts(labeled, cfg.num_classes)
    specs, trained, counts, picked = [], [], np.zeros(4, dtype=np.int64), []
    for c, lab in zip(active, labeled):
        spec, n, fix, mix = fix_mix_spec(exp, lab, rnd.rng)
        counts += n
        picked.append((lab, fix, mix))
        if spec is not None:
            specs.append(spec)
            trained.append(int(c))
    record_labels(rec, counts)
    if rnd.diagnose or cfg.pseudo_label_rule != pseudo_labels.FIXED:   # which classes the fix set teaches
        pseudo = np.concatenate([lab["pseudo"][fix] for lab, fix, _ in picked])
        shares = np.bincount(pseudo, minlength=cfg.num_classes) / max(len(pseudo), 1)
        rec.diagnostics.update({f"fix_share_c{k}": v for k, v in enumerate(shares)})
    if rnd.diagnose:   # how the rule treats the classes a client holds and those it does not; the mix labels
        rec.diagnostics.update(pseudo_labels.skew_measures(labeled, cfg.num_classes))
        mix_right = np.concatenate([(lab["pseudo"] == lab["truth"])[mix] for lab, _, mix in picked])
        mix_conf = np.concatenate([lab["conf"][mix] for lab, _, mix in picked])
        rec.diagnostics.update(mix_acc=100 * mix_right.sum() / len(mix_right) if len(mix_right) else float("nan"),
                               mix_confident=(mix_conf >= cfg.threshold).mean() if len(mix_conf) else float("nan"))
    return specs, trained


def client_objective(cfg):
    """The clients' loss and the views their tasks need: L_fix + L_mix (Eq. 5, 6) on fix/mix specs (a SemiFL variant:
    its Method.client_loss built on it), or with global_pseudo_labels=False FixMatch's per-batch loss on the client's
    own data."""
    options = strong_options(cfg)
    if cfg.global_pseudo_labels:
        plain = not cfg.method.client_loss and type(skew_losses.remedy(cfg)) is skew_losses.Remedy
        return client_loss if plain else semifl_client_loss(cfg), dict(
            view="strong", mix_alpha=cfg.mixup_alpha if cfg.mix_loss else None, **options)
    return fixmatch_loss(cfg.threshold), dict(view="strong", weak_too=True, **options)


def strong_options(cfg) -> dict:
    """The strong augmentation's two details where the authors' code differs from ours (augment.semifl_pool)."""
    return {"strong_options": {"shear": cfg.shear_resample, "cutout": cfg.cutout_size}}


def client_task(exp, model, crnd: Round, c: int):
    """ClientUpdate's data for client c from its own streams (crnd = rounds.client_round): pseudo-labels, fix and
    mix sets (Eq. 2-4) and the step plan with its augmentations; or, without global pseudo-labels, its own images.
    Returns (Task, or None when its fix set is empty; label counts or None). The in-process harness with
    rng_streams="client" and the Flower ClientApp both call this."""
    cfg, data = exp.cfg, exp.data
    counts = None
    if cfg.global_pseudo_labels:
        spec, counts, _, _ = fix_mix_spec(exp, label_clients(exp, model, crnd, [c])[0], crnd.rng)
        if spec is None:
            return None, counts
    else:
        spec = client_data(exp, c)
    _, views = client_objective(cfg)
    task, = make_tasks([spec], cfg.client_batch, cfg.local_epochs, crnd.rng, crnd.g, flip=data.flip,
                       strong_variant=cfg.strong_aug, **views)
    if skew_losses.remedy(cfg).teacher:
        skew_losses.teacher_logits(exp, model, [task])
    return task, counts


def record_training(rec: RoundRecord, samples: int, steps: int, stats: torch.Tensor) -> None:
    """The clients' samples (summed over their steps) and mean loss per local step, from the engine's per-client
    stats (rows in S_t's order)."""
    rec.client_samples = int(samples)
    if len(stats):
        rec.client_loss = (stats[:, 0].sum() / steps).item()


def train_clients(exp, st, rnd: Round, tasks, clients: list[int], loss_fn):
    """Each client trains a copy of the global model on its task (ClientUpdate's loop); with client_momentum=keep a
    client resumes its own SGD momentum from its last round (the authors' code); a variant's state per client
    (methods/client_state.py) is read by its loss and updated after. Returns (weights, stats)."""
    keep, rec = exp.cfg.client_momentum == "keep", rnd.record
    states = [st.client_states.get(c) if keep else None for c in clients]
    with rnd.timed("clients"):
        stacked, new_states, stats = exp.engine.train(st.model, tasks, loss_fn, rnd.lr, states, ids=clients,
                                                      given=client_state.given(exp, st, clients))
        rnd.client_changes = client_state.after_training(exp, st, clients, stacked, [t.steps for t in tasks],
                                                         rnd.lr)   # a variant's state per client, if it keeps one
    if keep:
        st.client_states.update({c: s for c, s in zip(clients, new_states) if s})
    record_training(rec, sum(t.size.sum() for t in tasks), sum(t.steps for t in tasks), stats)
    return stacked, stats


# ---------------------------------------------------------------------- aggregation
def average(stacked: dict, server: dict | None = None, weights: torch.Tensor | None = None) -> dict:
    """Model Averaging: W = M_t^-1 sum_m W_u,m, equal weights (not by data size), or sum_m weights_m W_u,m (weights
    summing to 1: (FL)^2's learning-status-aware aggregation). With `server` (finetune=False, Table 2) the server
    gets weight 1/2 and each of n clients 1/(2n)."""
    if weights is None:
        mean = {k: v.mean(0) for k, v in stacked.items()}
    else:
        mean = {k: torch.tensordot(weights.to(v.dtype), v, dims=1) for k, v in stacked.items()}
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
def begin_round(exp, st, rnd: Round) -> list[int]:
    """The round up to ClientUpdate: (round_order=paper: ServerUpdate first), S_t, the global model's sBN
    statistics. Returns S_t's client ids."""
    cfg, diag = exp.cfg, rnd.record.diagnostics
    if rnd.diagnose:
        diag["acc_start"] = exp.diagnostic_accuracy(st.model, per_class=diag, prefix="start_")
    if cfg.finetune and cfg.round_order == "paper":
        finetune(exp, st, rnd)
        st.sbn_fresh = False
    active = rnd.rng.choice(cfg.num_clients, cfg.num_active, replace=False)
    if cfg.global_pseudo_labels and not st.sbn_fresh:   # after an evaluation they belong to this global model
        with rnd.timed("sbn"):
            exp.refresh_sbn(st.model)
    return [int(c) for c in active]


def end_round(exp, st, rnd: Round, stacked: dict, weights: torch.Tensor | None = None) -> None:
    """The round after ClientUpdate, given the client models stacked in S_t's order (and their averaging weights, if
    not equal): (finetune=False: the server trains beside them), Model Averaging + global momentum, ServerUpdate
    (round_order=paper: after the last round)."""
    cfg, rec, diag = exp.cfg, rnd.record, rnd.record.diagnostics
    server_weights = None
    if not cfg.finetune:   # "parallel": the server trains from the same global model beside the clients
        with rnd.timed("server"):
            server_weights, rec.server_loss = server_update(exp, st, rnd)
    with rnd.timed("aggregate"):
        if stacked or server_weights is not None:
            averaged = average(stacked, server_weights, weights)
            if rnd.diagnose:
                diag["acc_average"] = exp.diagnostic_accuracy(st.model, averaged)
            step = lambda avg: global_momentum_step(st.model, st.global_opt, avg)  # noqa: E731
            if cfg.method.server_state_hooks() is None:
                step(averaged)
            else:   # a variant's own aggregation step (methods/client_state.py)
                client_state.server_step(exp, st, averaged, rnd.client_changes, step)
    if rnd.diagnose:
        diag["acc_aggregate"] = exp.diagnostic_accuracy(st.model, per_class=diag, prefix="aggregate_")
    if cfg.finetune and (cfg.round_order != "paper" or rnd.last):
        finetune(exp, st, rnd)


def client_tasks(exp, st, rnd: Round, active: list[int]) -> tuple[list, list]:
    """ClientUpdate's tasks for S_t, drawn from the round's one stream or from each client's own (rng_streams).
    Returns (tasks, ids of the clients that train)."""
    cfg, data, rec = exp.cfg, exp.data, rnd.record
    if cfg.rng_streams == "client":
        with rnd.timed("prepare"):
            made = [(c, *client_task(exp, st.model, client_round(rnd, cfg.seed, c), c)) for c in active]
        if cfg.global_pseudo_labels:
            record_labels(rec, sum(counts for _, _, counts in made))
        return [t for _, t, _ in made if t is not None], [c for c, t, _ in made if t is not None]
    if cfg.global_pseudo_labels:
        with rnd.timed("pseudo_label"):
            specs, trained = pseudo_label(exp, st, rnd, active)
    else:
        trained = active
        specs = [client_data(exp, c) for c in trained]
    with rnd.timed("augment"):
        tasks = make_tasks(specs, cfg.client_batch, cfg.local_epochs, rnd.rng, rnd.g, flip=data.flip,
                           strong_variant=cfg.strong_aug, **client_objective(cfg)[1])
    if skew_losses.remedy(cfg).teacher:   # the distillation's teacher: the global model that made the pseudo-labels
        with rnd.timed("teacher"):
            skew_losses.teacher_logits(exp, st.model, tasks)
    return tasks, trained


def semifl_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, rec = exp.cfg, rnd.record
    if skew_losses.remedy(cfg).frozen:
        skew_losses.check_head(st.model)
    active = begin_round(exp, st, rnd)
    tasks, trained = client_tasks(exp, st, rnd, active)
    rec.clients_trained = len(trained)
    stacked, stats = train_clients(exp, st, rnd, tasks, trained, client_objective(cfg)[0])
    if not cfg.global_pseudo_labels and stacked:
        record_fixmatch(rec, stats)
    if rnd.diagnose and stacked:
        pseudo_labels.record_client_models(exp, st, rnd, stacked, trained)
    end_round(exp, st, rnd, stacked)
    return rec
