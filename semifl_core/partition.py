"""Who holds which training sample: the labeled images (at the server, or at the clients) and the clients' unlabeled
shares. All functions take a numpy Generator, so a split is a pure function of the seed.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .methods import ONE_CLIENT, SERVER


def split_server(labels: np.ndarray, num_supervised: int, num_classes: int, rng: np.random.Generator):
    """N_S / num_classes random samples of each class go to the server; the rest form the client pool."""
    per_class = num_supervised // num_classes
    server = []
    for c in range(num_classes):
        idx = np.flatnonzero(labels == c)
        if len(idx) < per_class:
            raise ValueError(f"num_supervised={num_supervised}: class {c} has only {len(idx)} samples, "
                             f"{per_class} are needed per class")
        server.append(rng.choice(idx, per_class, replace=False))
    server = np.sort(np.concatenate(server))
    pool = np.setdiff1d(np.arange(len(labels)), server)
    return server, pool


def iid(pool: np.ndarray, num_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Each client gets floor(N_U / M) random samples; leftovers are unused."""
    size = len(pool) // num_clients
    perm = rng.permutation(pool)
    return [np.sort(perm[i * size:(i + 1) * size]) for i in range(num_clients)]


def non_iid_label(pool: np.ndarray, labels: np.ndarray, num_clients: int, k: int, num_classes: int,
                  rng: np.random.Generator) -> list[np.ndarray]:
    """Non-IID, K classes per client (the authors' shard scheme): each class's pool indices are cut into K*M/num_classes
    contiguous shards (leftover samples spread one each over the first shards); a shuffled list of labels (range(C)
    repeated) reshaped to (M, K) gives each client K shard labels, and for each it takes a random remaining shard of
    that class. A client can draw the same class twice."""
    shards_per_class = k * num_clients // num_classes
    shards = {}
    for c in range(num_classes):
        idx = pool[labels[pool] == c]
        leftover = len(idx) % shards_per_class
        body, extra = idx[:len(idx) - leftover].reshape(shards_per_class, -1), idx[len(idx) - leftover:]
        shards[c] = [np.append(row, extra[i:i + 1]) for i, row in enumerate(body)]
    label_list = np.array(list(range(num_classes)) * shards_per_class)
    rng.shuffle(label_list)
    clients = []
    for client_labels in label_list.reshape(num_clients, k):
        own = [shards[c].pop(rng.integers(len(shards[c]))) for c in client_labels]
        clients.append(np.sort(np.concatenate(own)))
    return clients


def dirichlet(pool: np.ndarray, labels: np.ndarray, num_clients: int, alpha: float, num_classes: int,
              rng: np.random.Generator, min_size: int = 10) -> list[np.ndarray]:
    """Unbalanced non-IID: per class, proportions ~ Dir(alpha * 1_M); clients already holding >= N/M samples
    get proportion 0 (renormalised); the class's shuffled indices are cut at the cumulative proportions.
    Everything is drawn again until every client holds >= min_size samples."""
    n = len(pool)
    if n < min_size * num_clients:  # no draw could ever succeed: fail instead of looping forever
        raise ValueError(f"dirichlet: {n} samples cannot give {num_clients} clients >= {min_size} samples each")
    while True:
        clients = [[] for _ in range(num_clients)]
        for c in range(num_classes):
            idx = pool[labels[pool] == c]
            rng.shuffle(idx)
            p = rng.dirichlet(np.full(num_clients, alpha))
            p = p * np.array([len(h) < n / num_clients for h in clients])
            if not p.sum() > 0:   # only full clients drew a share of this class: draw everything again
                break
            p = p / p.sum()
            cuts = (np.cumsum(p) * len(idx)).astype(int)[:-1]
            for h, part in zip(clients, np.split(idx, cuts)):
                h.extend(part.tolist())
        else:
            if min(len(h) for h in clients) >= min_size:
                return [np.sort(np.array(h, dtype=np.int64)) for h in clients]


def split_clients_labeled(labels: np.ndarray, per_class: int, num_clients: int, num_classes: int, kind: str,
                          alpha: float, rng: np.random.Generator):
    """FedDure's labeled parts: a pool of per_class x num_clients random images of each class, spread over the
    clients either `iid` (every client exactly per_class of each class) or `dir` (the pool cut by Dirichlet(alpha)
    per class, every client >= 10 images). Returns (list of client labeled index arrays, the rest of the set)."""
    drawn = [rng.choice(np.flatnonzero(labels == c), per_class * num_clients, replace=False)
             for c in range(num_classes)]
    pool = np.sort(np.concatenate(drawn))
    if kind == "dir":
        labeled = dirichlet(pool, labels, num_clients, alpha, num_classes, rng)
    else:
        labeled = [np.sort(np.concatenate([d[k * per_class:(k + 1) * per_class] for d in drawn]))
                   for k in range(num_clients)]
    rest = np.setdiff1d(np.arange(len(labels)), pool)
    return labeled, rest


class Split(NamedTuple):
    server: np.ndarray      # the server's labeled indices (empty when the labels are at the clients)
    clients: list           # per client: its unlabeled indices (all its data for methods that label it all)
    labeled: list           # per client: its labeled indices (labels_at=clients / one-client; else empty)


def make_split(cfg, labels: np.ndarray) -> Split:
    """The run's split, all from the split seed (default: cfg.seed)."""
    rng = np.random.default_rng(cfg.seed if cfg.split_seed == -1 else cfg.split_seed)
    none, labeled = np.zeros(0, dtype=np.int64), []
    own = cfg.method.own_split(cfg, labels, rng)   # a method that draws its own split (CBAFed's released code's)
    if own is not None:
        return own
    if cfg.labels_at != SERVER:
        one = cfg.labels_at == ONE_CLIENT
        kind, alpha = ("iid", 0) if one else cfg.labeled_partition_kind
        labeled, pool = split_clients_labeled(labels, cfg.client_labels, 1 if one else cfg.num_clients,
                                              cfg.num_classes, kind, alpha, rng)
        labeled += [none] * (cfg.num_clients - len(labeled))   # one-client: client 0 holds all the labels
        server = none
    elif cfg.method.labels == "clients":  # every sample labeled, at the clients (no server split)
        server, pool = none, np.arange(len(labels))
    else:
        server, pool = split_server(labels, cfg.num_supervised, cfg.num_classes, rng)
    if not cfg.federated:
        return Split(server, [], [])
    kind, value = cfg.partition_kind
    # one-client (CBAFed's setting): client 0 holds the labeled set and nothing else; the others share the pool
    m = cfg.num_clients - (cfg.labels_at == ONE_CLIENT)
    if kind == "iid":
        clients = iid(pool, m, rng)
    elif kind == "non-iid-l":
        clients = non_iid_label(pool, labels, m, int(value), cfg.num_classes, rng)
    else:
        clients = dirichlet(pool, labels, m, value, cfg.num_classes, rng)
    if cfg.labels_at == ONE_CLIENT:
        clients = [none, *clients]
    return Split(server, clients, labeled)


# ---------------------------------------------------------------------- what a seed fixes (docs/verdicts.md)
def labeled_draw(cfg) -> tuple:
    """What decides the server's labeled set at cfg.seed: make_split draws it first, from the split seed, so two
    configs with equal labeled_draw hold the same labeled images (whatever their method, partition or schedule)."""
    if cfg.labels_at != SERVER or cfg.method.labels != SERVER:
        return ("no server set", cfg.dataset, cfg.method.labels, cfg.labels_at)
    return (cfg.dataset, cfg.num_supervised, cfg.seed if cfg.split_seed == -1 else cfg.split_seed)
