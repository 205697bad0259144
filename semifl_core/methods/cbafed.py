"""CBAFed: class balanced adaptive pseudo labeling for federated semi-supervised learning (Li et al., CVPR 2023).
Equation numbers are its paper's. Labels are at one client (Config.labels_at="one-client"): client 0 holds the
labeled set D_L and nothing else, clients 1..K-1 hold unlabeled data only; every client takes part in every round.
Client 0's labeled set (cfg.cbafed_labeled): "balanced" (the default), cfg.client_labels images of every class, the rest
cut over clients 1..K-1 by the partition's Dirichlet; "dirichlet", the released code's split (`code_split`).

Warm-up, rounds 1..W (W = cfg.cbafed_warmup): Eq. (3) with the one labeled client, one epoch of CE a round, with the
residual weight connection (the first round's model is the snapshot R; after every s = 5 further rounds
theta = a1 R + (1 - a1) theta, R = theta; a1 = 0.8).

A federated round (after the warm-up), from the global model theta_G:
  labeled client: LABELED_EPOCHS epochs of CE over D_L (lr cfg.lr) with the local residual connection: R = theta
    after epoch 0, theta = a1 R + (1 - a1) theta and R = theta after epochs 5 and 10.
  unlabeled client mu: the global model's class probabilities p on a weak view of each of its images, y_hat = argmax p:
      D~_mu      = {(x, y_hat) : max p > T_t(y_hat)}                              (the fixed training set)
      D^tail_mu  = {(x, y_hat') : max p <= T_t(y_hat) and p~_t(y_hat') < beta / C}  (tail-class data discovery)
    with y_hat' the second most probable class; one epoch of CE on D_train = D~ u D^tail (lr UNLABELED_LR).
  thresholds (CBAPL): T(c) = min(p~(c) + 0.84 - std(p~), tau_h), p~ the class shares of the previous round's counts
    sigma (the labeled set's class counts plus every unlabeled client's D_train class counts; in the first federated
    round the labeled set's alone) times C / 10, tau_h = cfg.threshold (pseudo_labels.class_balanced_thresholds).
  server: theta_G = sum_i w_i theta_i over the whole state (BN statistics too), w_labeled = |D_L|, w_mu = |D_train_mu|
    (a client with an empty D_train sends nothing); R_g = the warm-up's last model, and after every s = 5 federated
    rounds the global residual connection theta_G = a2 R_g + (1 - a2) theta_G, R_g = theta_G (a2 = 0.5).
Every client keeps its SGD momentum between rounds (cfg.momentum, weight decay, gradient clipping cfg.clip_norm), and
the learning rates are constant, as the released code runs; batch cfg.client_batch (64).

Variants (cfg.cbafed_variant; notebooks/cbafed_table1.ipynb lists each difference): "paper" (the default) as its paper
describes it; "code" as its released code runs (CBAFed and both bounds):
  - the server's residual after federated rounds 6, 11, 16, ... (its `com_round > 0 and com_round % 5 == 0`, rounds
    counted from 0) instead of after rounds 5, 10, 15, ...;
  - its input pipeline (`code_inputs`, `code_view`): a one-channel set copied to three channels, training images resized
    (bilinear) to 36 x 36 (40 x 40 for three-channel 32 x 32 sets) and randomly cropped to 32 x 32 without padding, plus
    flips; test images resized to 32 x 32 (our CNN pools globally: it runs at 32 x 32, as their ResNet-18);
  - an unlabeled client trains on the very weak views it pseudo-labeled (paper: a fresh weak view of the images it
    selected), drops a last batch of one image, and takes p~ < 0.03 as tail whatever C is (beta / C for ten classes).
  Not reproduced: it concatenates the confident images, then the tail ones, unshuffled (ours are shuffled every epoch).

The Table 1 rows beside CBAFed run its warm-up and schedule (`part`) and differ only in the federated phase:
  "labeled-only"   the labeled client alone (its epochs and residuals; the server's residual): the lower bound
  "all-labeled"    every unlabeled client trains on all its images with their true labels, w = its size: the upper bound
  "fixmatch"       FedAvg + FixMatch: the labeled client's epochs (no residual); each unlabeled client one epoch of
                   mean 1[max p >= tau_h] CE(f(A(u)), argmax p), p = softmax(f(alpha(u))) of the model it trains,
                   w = its size; no thresholds of CBAPL, no tail discovery, no server residual
"""
from __future__ import annotations

import copy
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from ..augment import weak
from ..models import load_weights, predict
from ..rounds import Round, RoundRecord
from ..tasks import make_tasks
from .feddure import fedavg
from .pseudo_labels import class_balanced_thresholds, class_shares
from .losses import fixmatch_loss

LABELED_EPOCHS = 11       # the labeled client's epochs a federated round (its residual after epochs 0, 5, 10)
RESIDUAL_EVERY = 5        # s: epochs (labeled client, warm-up rounds) or federated rounds (server) between residuals
ALPHA_LOCAL = 0.8         # a1: the labeled client's residual weight (warm-up and local epochs)
ALPHA_GLOBAL = 0.5        # a2: the server's residual weight
UNLABELED_LR = 0.02       # the unlabeled clients' SGD learning rate (the labeled client's is cfg.lr, 0.03)
TAIL_BETA = 0.3           # beta: tail classes are p~ < beta / C (0.03 for ten classes, the code's constant)
CODE_TAIL = 0.03          # the code's tail bound, for every C
LABELED = 0               # the labeled client's id
CODE_INPUT = 32           # the code's input size (all sets), and its training images' size before the crop:
CODE_RESIZE = {1: 36, 3: 40}   # 36 for one-channel (Fashion-MNIST), 40 for three-channel sets


# ---------------------------------------------------------------------- its settings and its split
def released(cfg) -> bool:
    """cbafed_variant="code" (FedAvg + FixMatch on CBAFed's schedule declares no variant: its paper's rules)."""
    return getattr(cfg, "cbafed_variant", "paper") == "code"


def check(cfg) -> str:
    """Method.check: what CBAFed's fields need of the others (one line, or "")."""
    if not 0 <= cfg.cbafed_warmup < cfg.rounds:
        return (f"cbafed_warmup={cfg.cbafed_warmup!r}: must be an integer from 0 to rounds - 1 ({cfg.rounds - 1}): "
                "the warm-up rounds come first, and at least one federated round after them")
    if cfg.cbafed_labeled == "dirichlet" and cfg.partition_kind[0] != "dir":
        return (f"cbafed_labeled='dirichlet': cuts the whole training set over the clients by the partition's "
                f"Dirichlet: partition must be 'dir-ALPHA', not {cfg.partition!r}")
    if not 0 < cfg.threshold <= 1:
        return (f"threshold={cfg.threshold!r}: must be in (0, 1] for {cfg.algorithm} (tau_h, the upper bound of its "
                "class thresholds)")
    return ""


def code_split(cfg, labels: np.ndarray, rng: np.random.Generator):
    """Method.split for cbafed_labeled="dirichlet" (else None: partition.make_split's), as the released code splits: one
    Dirichlet(alpha) draw (partition.dirichlet, alpha the partition's: CBAFed's 0.8) cuts the whole training set over
    all the clients; client 0 keeps its share as its labeled set, so its size and class counts are as skewed as any
    client's. The code reads the split from a partition file (its SVHN one gives client 0 6,621 of the 73,257 training
    images), drawn in cifar_load.partition_data_allnoniid by `dirichlet`'s rule."""
    from ..partition import Split, dirichlet
    if cfg.cbafed_labeled != "dirichlet":
        return None
    none = np.zeros(0, dtype=np.int64)
    parts = dirichlet(np.arange(len(labels)), labels, cfg.num_clients, cfg.partition_kind[1], cfg.num_classes, rng)
    return Split(none, [none, *parts[1:]], [parts[0], *[none] * (cfg.num_clients - 1)])


# ---------------------------------------------------------------------- the released code's input pipeline
def code_inputs(cfg, data):
    """cbafed_variant="code": the images as the released code's loader gives them, rounded to uint8; "paper": as is."""
    if not released(cfg):
        return data
    from ..data import Dataset

    def resize(x, size):
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        out = F.interpolate(x.float(), size=(size, size), mode="bilinear", align_corners=False)
        return out.round().clamp(0, 255).to(torch.uint8)
    return Dataset(data.name, resize(data.x_train, CODE_RESIZE[data.x_train.shape[1]]), data.y_train,
                   resize(data.x_test, CODE_INPUT), data.y_test, data.num_classes)


def code_view(x: torch.Tensor, flip: bool, g: torch.Generator) -> torch.Tensor:
    """The code's training view: a random CODE_INPUT x CODE_INPUT crop without padding (and a flip), as one gather."""
    n, _, h, w = x.shape
    dev = x.device
    oy = torch.randint(0, h - CODE_INPUT + 1, (n, 1), generator=g, device=dev)
    ox = torch.randint(0, w - CODE_INPUT + 1, (n, 1), generator=g, device=dev)
    rows, cols = torch.arange(CODE_INPUT, device=dev) + oy, torch.arange(CODE_INPUT, device=dev) + ox
    if flip:
        mirror = torch.rand(n, 1, generator=g, device=dev) < 0.5
        cols = torch.where(mirror, 2 * ox + CODE_INPUT - 1 - cols, cols)
    return x[torch.arange(n, device=dev)[:, None, None], :, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def residual_due(cfg, t: int) -> bool:
    """Whether the server's residual follows federated round t (0-based; each variant's timing: module docstring)."""
    if released(cfg):
        return t > 0 and t % RESIDUAL_EVERY == 0
    return (t + 1) % RESIDUAL_EVERY == 0


# ---------------------------------------------------------------------- the pieces the tests check by hand
def residual(weights: dict, snapshot: dict, alpha: float) -> dict:
    """The residual weight connection: alpha R + (1 - alpha) theta for every floating-point tensor."""
    return {k: alpha * snapshot[k] + (1 - alpha) * v if v.is_floating_point() else v for k, v in weights.items()}


def tail_classes(counts, variant: str = "paper") -> np.ndarray:
    """Per class, whether it is a tail class: p~(c) < beta / C ("paper") or < 0.03 ("code"), p~ from counts sigma."""
    shares = class_shares(counts)
    return shares < (TAIL_BETA / len(shares) if variant == "paper" else CODE_TAIL)


def select(probs: np.ndarray, thresholds: np.ndarray, tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """D_train = D~ u D^tail of one client from the global model's probabilities: (kept image indices, their labels)."""
    order = np.argsort(-probs, axis=1, kind="stable")
    first, second = order[:, 0], order[:, 1]
    confident = probs.max(1) > thresholds[first]
    keep = np.flatnonzero(confident | tail[second])
    return keep, np.where(confident, first, second)[keep]


def aggregation_weights(labeled_size: int, train_sizes: list[int]) -> list[int]:
    """The server's weights before normalization: |D_L| for the labeled client, |D_train_mu| for the others."""
    return [labeled_size, *train_sizes]


# ---------------------------------------------------------------------- local training
def _state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _ce(f, b):
    return F.cross_entropy(f(b["x"]), b["y"]), torch.zeros(0, device=b["y"].device)


def train_client(exp, st, model, spec: dict, lr: float, c: int, rnd: Round, loss_fn=_ce, totals=None,
                 **views) -> float:
    """Client c trains `model` in place for one epoch over spec (batch cfg.client_batch, SGD with the momentum it
    kept); returns the mean step loss. `totals` (a list), if given, receives loss_fn's aux summed over the steps."""
    tasks = make_tasks([spec], exp.cfg.client_batch, 1.0, rnd.rng, rnd.g, flip=exp.data.flip, **views)
    stacked, states, stats = exp.server_engine.train(model, tasks, loss_fn, lr, [st.client_states.get(c)])
    load_weights(model, {k: v[0] for k, v in stacked.items()})
    st.client_states[c] = states[0]
    if totals is not None:
        totals.append(stats[0, 1:].to(torch.float64))
    return float(stats[0, 0]) / tasks[0].steps


def labeled_epochs(exp, st, model, rnd: Round, epochs: int, with_residual: bool = True) -> float:
    """The labeled client's epochs, with the local residual connection after epochs 0, s, 2s, ...; mean step loss."""
    idx = exp.labeled_idx[LABELED]
    spec = {"x": exp.data.x_train[idx], "y": exp.data.y_train[idx]}
    code = released(exp.cfg)
    losses, snapshot = [], None
    for e in range(epochs):
        if code:   # a fresh crop of the resized images every epoch, as the code's loader reads them
            views = {"x": code_view(spec["x"], exp.data.flip, rnd.g), "y": spec["y"]}
            losses.append(train_client(exp, st, model, views, exp.cfg.lr, LABELED, rnd, view="none"))
        else:
            losses.append(train_client(exp, st, model, spec, exp.cfg.lr, LABELED, rnd))
        if with_residual and e % RESIDUAL_EVERY == 0:
            theta = _state(model) if snapshot is None else residual(_state(model), snapshot, ALPHA_LOCAL)
            load_weights(model, theta)
            snapshot = theta
    return float(np.mean(losses))


# ---------------------------------------------------------------------- a round
def warmup_round(exp, st, rnd: Round) -> RoundRecord:
    """Eq. (3) with one labeled client: one epoch; the residual connection over the warm-up's rounds."""
    rec = rnd.record
    with rnd.timed("clients"):
        rec.client_loss = labeled_epochs(exp, st, st.model, rnd, 1, with_residual=False)
    rec.clients_trained = 1
    if rnd.r == 0:
        st.server_state = {"residual": _state(st.model)}
    elif rnd.r % RESIDUAL_EVERY == 0:
        theta = residual(_state(st.model), st.server_state["residual"], ALPHA_LOCAL)
        load_weights(st.model, theta)
        st.server_state = {"residual": theta}
    return rec


def cbafed_round(exp, st, rnd: Round, part: str = "semi") -> RoundRecord:
    cfg, data, rec = exp.cfg, exp.data, rnd.record
    rec.lr = cfg.lr   # constant learning rates (no schedule)
    if rnd.r < cfg.cbafed_warmup:
        return warmup_round(exp, st, rnd)
    t = rnd.r - cfg.cbafed_warmup                       # federated rounds done before this one
    if t == 0:
        st.server_state = {"residual": _state(st.model)}   # R_g: the warm-up's last model
    labeled_counts = np.bincount(data.y_train[exp.labeled_idx[LABELED]].cpu().numpy(), minlength=cfg.num_classes)
    counts = st.labeling.get("counts", labeled_counts)
    code = released(cfg)
    thresholds = class_balanced_thresholds(counts, cfg.threshold)
    tail = tail_classes(counts, "code" if code else "paper")
    states, sizes, new_counts, right, seen, kept_total, fixmatch = [], [], labeled_counts.copy(), 0, 0, 0, []
    with rnd.timed("clients"):
        model = copy.deepcopy(st.model)
        rec.client_loss = labeled_epochs(exp, st, model, rnd, LABELED_EPOCHS, with_residual=part != "fixmatch")
        states.append(_state(model))
        sizes.append(len(exp.labeled_idx[LABELED]))
        for c in range(cfg.num_clients) if part != "labeled-only" else ():
            idx = exp.client_idx[c]
            if c == LABELED or not len(idx):
                continue
            x, y = data.x_train[idx], data.y_train[idx]
            seen += len(idx)
            model = copy.deepcopy(st.model)
            if part == "fixmatch":
                train_client(exp, st, model, {"x": x, "y": y}, UNLABELED_LR, c, rnd, fixmatch_loss(cfg.threshold),
                             fixmatch, view="strong", strong_variant="fixmatch", weak_too=True)
                states.append(_state(model))
                sizes.append(len(idx))
                continue
            view = code_view(x, data.flip, rnd.g) if code else weak(x, data.flip, rnd.g)
            if part == "all-labeled":
                keep, labels = np.arange(len(idx)), y.cpu().numpy()
            else:
                keep, labels = select(predict(st.model, view, exp.mean, exp.std).cpu().numpy(), thresholds, tail)
            if not len(keep):
                continue
            keep_t, labels_t = torch.as_tensor(keep, device=y.device), torch.as_tensor(labels, device=y.device)
            right += int((labels_t == y[keep_t]).sum())
            kept_total += len(keep)
            new_counts += np.bincount(labels, minlength=cfg.num_classes)
            spec = {"x": (view if code else x)[keep_t], "y": labels_t}
            if code and len(keep) % cfg.client_batch == 1:   # the code's loader skips a last batch of one image
                spec = {k: v[:-1] for k, v in spec.items()}
            train_client(exp, st, model, spec, UNLABELED_LR, c, rnd, view="none" if code else "weak")
            states.append(_state(model))
            sizes.append(len(keep))
    if part == "semi":
        st.labeling["counts"] = new_counts   # sigma, for the next round's thresholds
    rec.clients_trained = len(states)
    if fixmatch:   # FixMatch's aux, summed over its steps: (seen, right, >= tau_h, right and >= tau_h)
        seen, _, kept_total, right = (float(v) for v in torch.stack(fixmatch).sum(0))
    if seen and part in ("semi", "all-labeled", "fixmatch"):
        rec.label_ratio = kept_total / seen
        rec.pseudo_acc = 100 * right / kept_total if kept_total else None
    if part == "semi":
        rec.diagnostics.update(tau_min=float(thresholds.min()), tail_classes=int(tail.sum()))
    with rnd.timed("aggregate"):
        st.model.load_state_dict({**st.model.state_dict(), **fedavg(states, aggregation_weights(sizes[0], sizes[1:]))})
        if part != "fixmatch" and residual_due(cfg, t):
            theta = residual(_state(st.model), st.server_state["residual"], ALPHA_GLOBAL)
            load_weights(st.model, theta)
            st.server_state = {"residual": theta}
    return rec


labeled_only_round = partial(cbafed_round, part="labeled-only")
all_labeled_round = partial(cbafed_round, part="all-labeled")
fixmatch_round = partial(cbafed_round, part="fixmatch")
