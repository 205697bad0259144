"""FedDure: federated semi-supervised learning with dual regulators (Bai et al., AAAI 2024); equation numbers are its
paper's. Labels are at the clients (Config.labels_at="clients"): each holds a labeled part (x, y) and an unlabeled u.

A round: S = max(floor(C K), 1) clients sampled; each runs `local_update` from the global model; the server takes
the FedAvg average of the whole state (BN statistics included) weighted by each client's data size.

Local update, variant "paper" (the default): three networks per client, all trained with Adam at cfg.lr:
  f_l (theta)  the local model, a copy of the global model (what is sent back)
  f_d (phi)    C-reg, the coarse-grained regulator: a second copy of the global model, discarded after the round
  f_w (w)      F-reg, the fine-grained regulator: Linear(C, 128)-ReLU-Linear(128, 1)-sigmoid on a model's softmax
               (detached); one per client, kept between the rounds it takes part in (client_states)
and per iteration t, on a labeled batch (x, y) and an unlabeled batch u (weak view T_w(u), strong view T_s(u)):
  y_hat = argmax f_l(T_w(u); theta)                                                              pseudo-labels
  phi^-(w) = phi - eta_s grad_phi mean_u f_w(f_d(T_s(u))) CE(y_hat, f_d(T_s(u); phi))              (4)
  w <- Adam step on CE(y, f_d(x; phi^-(w)))    (the one-step look-ahead, differentiated through phi^-)  (5)
  phi <- Adam step on mean_u f_w(f_d(T_s(u)); w_new) CE(y_hat, f_d(T_s(u); phi))                  (2)
  d = CE(y, f_d(x; phi_old)) - CE(y, f_d(x; phi_new))                                             (3)
  m_i = f_w(f_l(T_s(u_i); theta); w_new)                                                          (6)
  theta <- Adam step on CE(y, f_l(x)) [g_s, (9)] + mean_u m CE(y_hat, f_l(T_s(u))) [g_u, (7)]
                        + d mean_u CE(y_hat, f_l(T_s(u))) [g_d, (8)]                               (10)
Choices the paper leaves open (ours): the look-ahead step (4) is plain SGD with eta_s = cfg.lr (it must be
differentiable in w); F-reg reads softmax outputs, detached; F-reg's Adam is fresh each round like the other two.

Variant "code": what the authors' released code runs (White1973/FedDure, groups/client_ssl/base_ssl.py): Meta Pseudo
Labels with f_l as teacher and f_d as student, and an F-reg that is never trained or used:
  FINE_TUNE_STEPS supervised Adam steps on the teacher, then per step t of the local steps:
  q = softmax(T(T_w(u))), y_hat = argmax q, mask = max q >= CODE_THRESHOLD
  L_T = CE(T(x), y) + 8 min(1, (t+1)/20) mean(mask softCE(q, T(T_s(u))))
  S <- Adam step on CE(S(T_w(u)), y_hat) (no mask); d = CE(S_new(x), y) - CE(S_old(x), y)  (new minus old: the
  opposite sign to Eq. 3); L_T += d CE(T(T_s(u)), argmax T(T_s(u))); T <- Adam step
  with the code's per-round warm-up: the teacher's learning rate ramps over WARMUP_STEPS steps (factor step/10:
  0, 0.1, ..., 0.9), the student's is 0 for its first STUDENT_WAIT steps (so d = 0 there).

Batches (both variants): labeled batch cfg.client_batch; local steps per epoch S = round(|D_L| / batch) (the code's
rule: 4 if that is <= 2; ours: a quarter of it if >= 400, `local_steps`); unlabeled batch |D_U| // S.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from ..engine import model_inputs
from ..rounds import Round, RoundRecord
from ..tasks import make_tasks

FREG_HIDDEN = 128         # the paper's footnote (the code's WNet has 100)
CODE_THRESHOLD = 0.6      # the code's confidence mask
CODE_UDA_FACTOR = 8.0     # the code's weight of the masked consistency loss, ramped over 20 steps
FINE_TUNE_STEPS = 5       # the code's supervised steps on the teacher before the MPL steps (CIFAR-10)
WARMUP_STEPS = 10         # the code's teacher warm-up, rebuilt every round
STUDENT_WAIT = 2          # the code's student steps at learning rate 0


class FReg(nn.Module):
    """F-reg (the paper's footnote 1): one hidden layer of 128 and a sigmoid, from a softmax to a weight in (0, 1)."""

    def __init__(self, num_classes: int, hidden: int = FREG_HIDDEN):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(num_classes, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Sigmoid())

    def forward(self, p):
        return self.net(p).squeeze(1)


# ---------------------------------------------------------------------- the batch plan (both variants)
def local_steps(n_labeled: int, batch: int) -> int:
    """Local steps per epoch: S = round(|D_L| / batch), 4 if that is <= 2 (the released code's num_step,
    FedDureClientSSL.get_bs), S // 4 if S >= 400. That quarter is ours: get_bs keeps S and quarters the unlabeled batch
    u_bs = |D_U| // S (all of D_U if that is 0) when u_bs >= 400; client_tasks takes max(1, |D_U| // S), with neither.
    feddure_table1's splits reach no quarter (Fashion-MNIST, seeds 0-2: S is 3 to 13, |D_U| // S at most 350)."""
    steps = round(n_labeled / batch)
    return 4 if steps <= 2 else steps // 4 if steps >= 400 else steps


def freg_steps(cfg) -> float:
    """F-reg's expected Adam steps per client in a paper-variant run: local_steps at the mean labeled size times E, over
    its rounds x num_active / num_clients active rounds (small's 50 rounds: ~12; FedDure's 200: ~50)."""
    per_round = math.ceil(round(local_steps(cfg.client_labels * cfg.num_classes, cfg.client_batch)
                                * cfg.local_epochs, 9))
    return cfg.rounds * cfg.num_active / cfg.num_clients * per_round


def _tasks_for(spec: dict, batch: int, steps: int, rnd: Round, flip: bool, **views):
    """`steps` batches of `batch` from shuffled epochs over spec's images."""
    per_epoch = math.ceil(len(spec["x"]) / batch)
    return make_tasks([spec], batch, steps / per_epoch, rnd.rng, rnd.g, flip=flip, **views)[0]


def client_tasks(exp, c: int, rnd: Round, extra_labeled_steps: int = 0):
    """Client c's labeled task (weak views) and unlabeled task (strong "x", weak "x_weak", true "y" for the metrics
    only), each of S x E steps (plus extra_labeled_steps labeled ones); None for a part it does not hold."""
    cfg, data = exp.cfg, exp.data
    lab, unl = exp.labeled_idx[c], exp.client_idx[c]
    per_epoch = local_steps(len(lab), cfg.client_batch)
    steps = math.ceil(round(per_epoch * cfg.local_epochs, 9))
    labeled = unlabeled = None
    if len(lab):
        labeled = _tasks_for({"x": data.x_train[lab], "y": data.y_train[lab]}, cfg.client_batch,
                             steps + extra_labeled_steps, rnd, data.flip)
    if len(unl):
        u_batch = max(1, len(unl) // per_epoch)
        unlabeled = _tasks_for({"x": data.x_train[unl], "y": data.y_train[unl]}, u_batch, steps, rnd, data.flip,
                               view="strong", strong_variant="fixmatch", weak_too=True)
    return labeled, unlabeled, steps


def step_batches(exp, labeled, unlabeled, s: int, offset: int = 0) -> tuple[dict, dict]:
    """Step s's labeled batch (at step offset + s of its task) and unlabeled batch, normalised; {} if not held."""
    def get(task, i):
        return {} if task is None else model_inputs(task.batch(i, int(task.size[i])), exp.mean, exp.std)
    return get(labeled, offset + s), get(unlabeled, s)


# ---------------------------------------------------------------------- F-reg's look-ahead, Eq. (4), (5)
def weighted_pseudo_loss(logits, y_hat, weights):
    """mean_u weight * CE(y_hat, logits): the unlabeled loss of Eq. (2), (4) and (7)."""
    return (weights * F.cross_entropy(logits, y_hat, reduction="none")).mean()


def lookahead_loss(creg: nn.Module, freg: FReg, u_strong, y_hat, x, y, eta_s: float):
    """Eq. (4), then (5)'s loss CE(y, f_d(x; phi^-(w))): one SGD step (eta_s) of C-reg on the F-reg-weighted
    pseudo-label loss, differentiable in F-reg's parameters; C-reg itself (BN buffers too) is left unchanged."""
    params = dict(creg.named_parameters())
    buffers = {k: v.clone() for k, v in creg.named_buffers()}
    logits = functional_call(creg, (params, buffers), (u_strong,))
    inner = weighted_pseudo_loss(logits, y_hat, freg(torch.softmax(logits.detach(), 1)))
    grads = torch.autograd.grad(inner, list(params.values()), create_graph=True)
    ahead = {k: v - eta_s * g for (k, v), g in zip(params.items(), grads)}
    return F.cross_entropy(functional_call(creg, (ahead, buffers), (x,)), y)


# ---------------------------------------------------------------------- one client's local update
def _adam(model, lr):
    return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=0.0)


def _step(opt, loss, scale: float = 1.0):
    for group in opt.param_groups:
        group["lr"] = group.setdefault("base_lr", group["lr"]) * scale
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def paper_local_update(exp, model, freg, labeled, unlabeled, steps, stats):
    lr = exp.cfg.lr
    creg = copy.deepcopy(model)
    opt_l, opt_d, opt_w = _adam(model, lr), _adam(creg, lr), _adam(freg, lr)
    for s in range(steps):
        b, u = step_batches(exp, labeled, unlabeled, s)
        n_l = len(b["x"])
        z = model(torch.cat([b["x"], u["x_weak"], u["x"]]))
        z_l, z_w, z_s = z[:n_l], z[n_l:n_l + len(u["x"])], z[n_l + len(u["x"]):]
        y_hat = z_w.detach().argmax(1)
        # F-reg, Eq. (4), (5)
        meta = lookahead_loss(creg, freg, u["x"], y_hat, b["x"], b["y"], eta_s=lr)
        opt_w.zero_grad(set_to_none=True)
        meta.backward(inputs=list(freg.parameters()))
        opt_w.step()
        # C-reg, Eq. (2), and its learning effect d, Eq. (3)
        with torch.no_grad():
            old = F.cross_entropy(creg(b["x"]), b["y"])
        logits = creg(u["x"])
        _step(opt_d, weighted_pseudo_loss(logits, y_hat, freg(torch.softmax(logits.detach(), 1)).detach()))
        with torch.no_grad():
            d = old - F.cross_entropy(creg(b["x"]), b["y"])
            m = freg(torch.softmax(z_s.detach(), 1))                                    # Eq. (6)
        # the local model, Eq. (7)-(10)
        ce_u = F.cross_entropy(z_s, y_hat, reduction="none")
        loss = F.cross_entropy(z_l, b["y"]) + (m * ce_u).mean() + d * ce_u.mean()
        _step(opt_l, loss)
        stats.append([loss.item(), d.item(), m.mean().item(), (y_hat == u["y"]).float().mean().item(), 1.0])


def code_local_update(exp, model, freg, labeled, unlabeled, steps, stats):
    """The authors' code (module docstring): teacher = model, student = a copy; F-reg is left as it is."""
    lr = exp.cfg.lr
    student = copy.deepcopy(model)
    opt_t, opt_s = _adam(model, lr), _adam(student, lr)
    for s in range(FINE_TUNE_STEPS):
        b, _ = step_batches(exp, labeled, None, s)
        _step(opt_t, F.cross_entropy(model(b["x"]), b["y"]), min(1.0, s / WARMUP_STEPS))
    for t in range(steps):
        b, u = step_batches(exp, labeled, unlabeled, t, offset=FINE_TUNE_STEPS)
        n_l, n_u = len(b["x"]), len(u["x"])
        z = model(torch.cat([b["x"], u["x_weak"], u["x"]]))
        z_l, z_w, z_s = z[:n_l], z[n_l:n_l + n_u], z[n_l + n_u:]
        q = torch.softmax(z_w.detach(), 1)
        conf, y_hat = q.max(1)
        mask = (conf >= CODE_THRESHOLD).float()
        uda = (mask * -(q * F.log_softmax(z_s, 1)).sum(1)).mean()
        loss = F.cross_entropy(z_l, b["y"]) + CODE_UDA_FACTOR * min(1.0, (t + 1) / 20) * uda
        with torch.no_grad():
            old = F.cross_entropy(student(b["x"]), b["y"])
        _step(opt_s, F.cross_entropy(student(u["x_weak"]), y_hat), 0.0 if t < STUDENT_WAIT else 1.0)
        with torch.no_grad():
            d = F.cross_entropy(student(b["x"]), b["y"]) - old
        loss = loss + d * F.cross_entropy(z_s, z_s.detach().argmax(1))
        _step(opt_t, loss, min(1.0, (FINE_TUNE_STEPS + t) / WARMUP_STEPS))
        stats.append([loss.item(), d.item(), float("nan"), (y_hat == u["y"]).float().mean().item(),
                      mask.mean().item()])


def new_freg(exp, c: int) -> FReg:
    """Client c's F-reg, initialised from (seed, c) so that a resumed run builds the same one."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(exp.cfg.seed * 1_000_003 + c)
        return FReg(exp.cfg.num_classes).to(exp.device)


# ---------------------------------------------------------------------- the server: FedAvg by data size
def fedavg(states: list[dict], sizes: list[int]) -> dict:
    """theta_g = sum_k n_k theta_k / sum_k n_k over every floating-point tensor of the state (BN statistics too)."""
    w = torch.tensor(sizes, dtype=torch.float64)
    w = (w / w.sum()).tolist()
    return {k: sum(wk * s[k] for wk, s in zip(w, states)) for k, v in states[0].items() if v.is_floating_point()}


def federated_round(exp, st, rnd: Round, train_client) -> RoundRecord:
    """FedDure's round for any local update: `train_client(c, model) -> (data size, stats rows)` trains `model` (a copy
    of the global model) in place; a client that trains nothing returns size 0 and is left out."""
    cfg, rec = exp.cfg, rnd.record
    rec.lr = cfg.lr   # FedDure's Adam runs at a constant learning rate (no schedule over the rounds)
    active = [int(c) for c in rnd.rng.choice(cfg.num_clients, cfg.num_active, replace=False)]
    states, sizes, rows = [], [], []
    with rnd.timed("clients"):
        for c in active:
            model = copy.deepcopy(st.model).train()
            size, stats = train_client(c, model)
            if size:
                states.append({k: v.detach() for k, v in model.state_dict().items()})
                sizes.append(size)
                rows += stats
    rec.clients_trained = len(states)
    if rows:
        rows = np.array(rows, dtype=float)
        rec.client_loss = float(rows[:, 0].mean())
        if not np.isnan(rows[:, 3]).all():
            rec.pseudo_acc = 100 * float(np.nanmean(rows[:, 3]))
            rec.label_ratio = float(np.nanmean(rows[:, 4]))
        if not np.isnan(rows[:, 1]).all():
            rec.diagnostics["reward_d"] = float(np.nanmean(rows[:, 1]))
        if not np.isnan(rows[:, 2]).all():
            rec.diagnostics["freg_weight"] = float(np.nanmean(rows[:, 2]))
    with rnd.timed("aggregate"):
        if states:
            st.model.load_state_dict({**st.model.state_dict(), **fedavg(states, sizes)})
    return rec


def feddure_round(exp, st, rnd: Round) -> RoundRecord:
    cfg = exp.cfg
    code = cfg.feddure_variant == "code"

    def train_client(c, model):
        with rnd.timed("augment"):
            labeled, unlabeled, steps = client_tasks(exp, c, rnd, FINE_TUNE_STEPS if code else 0)
        if labeled is None or unlabeled is None:
            return 0, []
        freg = new_freg(exp, c)
        if c in st.client_states:
            freg.load_state_dict(st.client_states[c])
        stats = []
        (code_local_update if code else paper_local_update)(exp, model, freg, labeled, unlabeled, steps, stats)
        st.client_states[c] = {k: v.detach().clone() for k, v in freg.state_dict().items()}
        return len(exp.labeled_idx[c]) + len(exp.client_idx[c]), stats

    return federated_round(exp, st, rnd, train_client)
