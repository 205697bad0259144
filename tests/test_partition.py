"""Who holds which sample: the balanced server set, the IID / label-skew / Dirichlet client splits."""
import numpy as np
import pytest

from semifl_core import partition as P
from semifl_core.config import profile


def make_labels(seed=0, base=150, num_classes=10):
    """Unequal class sizes (base + 7c samples in class c), in shuffled order."""
    labels = np.concatenate([np.full(base + 7 * c, c) for c in range(num_classes)])
    return np.random.default_rng(seed).permutation(labels)


def assert_disjoint(clients):
    allidx = np.concatenate(clients)
    assert len(np.unique(allidx)) == len(allidx), "a sample is held by two clients (or twice)"


# --------------------------------------------------------------------------- server split
def test_split_server_balanced_disjoint_complement_deterministic():
    labels = make_labels()
    server, pool = P.split_server(labels, 250, 10, np.random.default_rng(3))
    assert np.bincount(labels[server], minlength=10).tolist() == [25] * 10
    assert len(np.intersect1d(server, pool)) == 0
    assert np.array_equal(np.sort(np.concatenate([server, pool])), np.arange(len(labels)))
    assert len(np.unique(server)) == 250
    again, pool2 = P.split_server(labels, 250, 10, np.random.default_rng(3))
    assert np.array_equal(server, again) and np.array_equal(pool, pool2)
    other, _ = P.split_server(labels, 250, 10, np.random.default_rng(4))
    assert not np.array_equal(server, other)


def test_split_server_is_random_within_each_class():
    # not simply the first N_S/C samples of each class
    labels = make_labels()
    picks = [P.split_server(labels, 50, 10, np.random.default_rng(s))[0] for s in range(20)]
    assert len({tuple(p) for p in picks}) == 20
    assert len(np.unique(np.concatenate(picks))) > 500


def test_split_server_class_too_small():
    labels = np.array([0] * 5 + [1] * 50)
    with pytest.raises(ValueError, match="class 0 has only 5"):
        P.split_server(labels, 20, 2, np.random.default_rng(0))


# --------------------------------------------------------------------------- iid
def test_iid_equal_sizes_disjoint_within_pool():
    labels = make_labels()
    _, pool = P.split_server(labels, 100, 10, np.random.default_rng(0))
    clients = P.iid(pool, 13, np.random.default_rng(1))
    assert len(clients) == 13
    assert [len(c) for c in clients] == [len(pool) // 13] * 13          # floor(N_U / M), leftovers unused
    assert_disjoint(clients)
    assert np.isin(np.concatenate(clients), pool).all()
    # random, not contiguous blocks of the pool
    assert not np.array_equal(clients[0], pool[:len(clients[0])])


# --------------------------------------------------------------------------- non-iid-l-K
@pytest.mark.parametrize("num_clients, k", [(100, 2), (20, 2), (10, 3)])
def test_non_iid_label_shards(num_clients, k):
    labels = make_labels()
    _, pool = P.split_server(labels, 100, 10, np.random.default_rng(0))
    clients = P.non_iid_label(pool, labels, num_clients, k, 10, np.random.default_rng(5))
    assert len(clients) == num_clients
    for c in clients:
        assert len(np.unique(labels[c])) <= k
    assert_disjoint(clients)
    assert np.isin(np.concatenate(clients), pool).all()
    assert sum(len(c) for c in clients) == len(pool)                     # every shard handed out
    # shards of one class differ in size by at most 1 (floor or ceil of |pool_y| / shards_per_class), and a
    # client holds whole shards: its count of class y is a sum of at most K such shard sizes
    spc = k * num_clients // 10
    for y in range(10):
        n_y = int((labels[pool] == y).sum())
        lo, hi = n_y // spc, -(-n_y // spc)
        possible = {a * lo + b * hi for a in range(k + 1) for b in range(k + 1 - a)}
        shards_of_y = 0
        for c in clients:
            count = int((labels[c] == y).sum())
            assert count in possible, (y, count, possible)
            shards_of_y += round(count / lo) if lo == hi else count // lo
        assert shards_of_y == spc


def test_non_iid_label_shard_sizes_directly():
    # one class with 23 samples cut into 5 shards: sizes 5,5,5,4,4 (leftovers one each on the first shards)
    labels = np.zeros(23, dtype=int)
    pool = np.arange(23)
    clients = P.non_iid_label(pool, labels, 5, 1, 1, np.random.default_rng(0))
    assert sorted(len(c) for c in clients) == [4, 4, 5, 5, 5]
    assert_disjoint(clients)
    # shards are contiguous runs of the class's indices (plus at most one leftover index)
    for c in clients:
        body = c[c < 20]
        assert len(body) == 4 and body[-1] - body[0] == 3


def test_non_iid_label_client_can_get_the_same_class_twice():
    labels = make_labels()
    _, pool = P.split_server(labels, 100, 10, np.random.default_rng(0))
    single = 0
    for seed in range(10):
        clients = P.non_iid_label(pool, labels, 100, 2, 10, np.random.default_rng(seed))
        single += sum(len(np.unique(labels[c])) == 1 for c in clients)
    assert single > 0                    # drawn with a shuffled label list, not forced to be two classes


# --------------------------------------------------------------------------- dirichlet
def test_dirichlet_sizes_disjoint_union():
    labels = make_labels()
    _, pool = P.split_server(labels, 100, 10, np.random.default_rng(0))
    for alpha in (0.1, 0.5, 100.0):
        clients = P.dirichlet(pool, labels, 20, alpha, 10, np.random.default_rng(1))
        assert len(clients) == 20
        assert min(len(c) for c in clients) >= 10
        assert_disjoint(clients)
        assert np.array_equal(np.sort(np.concatenate(clients)), np.sort(pool))   # union == pool


def test_dirichlet_draws_again_when_only_full_clients_get_a_share():
    # 5 clients, alpha 1e-3: most draws give a class to one client that is already full (a 0/0 share, measured in
    # 78% of draws); those draws are made again, never split at NaN cuts
    labels = np.repeat(np.arange(10), 200)
    pool = np.arange(len(labels))
    for s in range(5):
        clients = P.dirichlet(pool, labels, 5, 1e-3, 10, np.random.default_rng(s))
        assert min(len(c) for c in clients) >= 10
        assert_disjoint(clients)
        assert np.array_equal(np.sort(np.concatenate(clients)), pool)
        for c in clients:   # classes are dealt in order: a client full (>= N/M) before class k gets none of it
            counts = np.bincount(labels[c], minlength=10)
            before = np.concatenate([[0], np.cumsum(counts)[:-1]])
            assert not ((before >= len(pool) / 5) & (counts > 0)).any()


def dominance(clients, labels):
    """Mean over clients of the share of the client's most frequent class."""
    return np.mean([np.bincount(labels[c], minlength=10).max() / len(c) for c in clients])


def test_dirichlet_small_alpha_is_much_more_skewed():
    labels = make_labels()
    _, pool = P.split_server(labels, 100, 10, np.random.default_rng(0))
    skew_small = np.mean([dominance(P.dirichlet(pool, labels, 20, 0.1, 10, np.random.default_rng(s)), labels)
                          for s in range(3)])
    skew_large = np.mean([dominance(P.dirichlet(pool, labels, 20, 100.0, 10, np.random.default_rng(s)), labels)
                          for s in range(3)])
    assert skew_small > 0.5          # alpha 0.1: most of a client's data is one class
    assert skew_large < 0.25         # alpha 100: close to the uniform 0.1 share
    assert skew_small > 2 * skew_large


def test_dirichlet_caps_full_clients():
    """A client that already holds >= N/M samples gets nothing of later classes, so no client is far above N/M
    plus one class's share."""
    labels = make_labels()
    pool = np.arange(len(labels))
    for s in range(3):
        clients = P.dirichlet(pool, labels, 10, 0.1, 10, np.random.default_rng(s))
        biggest_class = np.bincount(labels).max()
        assert max(len(c) for c in clients) < len(pool) / 10 + biggest_class


def test_dirichlet_impossible_minimum_fails_instead_of_looping():
    labels = make_labels()
    with pytest.raises(ValueError, match="cannot give"):
        P.dirichlet(np.arange(50), labels, 10, 0.5, 10, np.random.default_rng(0))


# --------------------------------------------------------------------------- make_split
@pytest.mark.parametrize("partition", ["iid", "non-iid-l-2", "dir-0.3"])
def test_make_split_is_a_function_of_the_seed(partition):
    labels = make_labels()
    cfg = profile("smoke", partition=partition)
    s1, c1, _ = P.make_split(cfg, labels)
    s2, c2, _ = P.make_split(cfg, labels)
    assert np.array_equal(s1, s2) and all(np.array_equal(a, b) for a, b in zip(c1, c2)) and len(c1) == 10
    s3, c3, _ = P.make_split(cfg.replace(seed=1), labels)
    assert not np.array_equal(s1, s3)
    assert not all(np.array_equal(a, b) for a, b in zip(c1, c3))
    # the server's N_S are balanced and no client holds a server sample
    assert np.bincount(labels[s1], minlength=10).tolist() == [cfg.num_supervised // 10] * 10
    assert len(np.intersect1d(s1, np.concatenate(c1))) == 0
    assert_disjoint(c1)


def test_make_split_fedavg_supervised_all_data_at_the_clients():
    labels = np.random.default_rng(0).permutation(np.arange(2000) % 10)
    cfg = profile("smoke", algorithm="fedavg-supervised")
    server, clients, _ = P.make_split(cfg, labels)
    assert len(server) == 0
    assert np.array_equal(np.sort(np.concatenate(clients)), np.arange(2000))   # 2000 / 10 clients, nothing left


def test_make_split_centralised_algorithms_have_no_clients():
    labels = make_labels()
    server, clients, _ = P.make_split(profile("smoke", algorithm="partially-supervised"), labels)
    assert clients == [] and len(server) == 100
