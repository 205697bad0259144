"""What a seed fixes for every arm of the package's claims (docs/verdicts.md): at one seed, SemiFL (every variant,
pseudo-label rule and remedy), FedAvg + FixMatch, (FL)² and Partially Supervised hold the same server labeled set;
the federated ones under one partition hold the same client split; arms of one architecture start from the same
weights. This is what lets a claim between them be paired by seed (report.rule.paired)."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from semifl_core import partition as P
from semifl_core.config import profile
from semifl_core.methods import FEDAVG_FIXMATCH, FL2, PARTIALLY_SUPERVISED, SEMIFL
from semifl_core.report import configs as C
from semifl_core.run import Experiment

SEED = 4
PARTITIONS = ("iid", "non-iid-l-2", "dir-0.1")


def fashion_sized_labels():
    """60,000 labels, 6,000 a class, shuffled: the shape of Fashion-MNIST's training set
    (the split reads only these)."""
    return np.random.default_rng(11).permutation(np.repeat(np.arange(10), 6000))


def arms():
    """Every arm the README's and label_skew's claims compare, at `small` and `long`, as {label: config}."""
    out = {}
    for p in ("small", "long"):
        out.update({f"{p}: {k}": v for k, v in C.table1_configs(p, "fashionmnist", 100).items()})
        out.update({f"{p}: {k}": v for k, v in C.few_label_configs(p, "fashionmnist", 100).items()})
        for remedy in C.PART3_REMEDIES:
            out.update({f"{p}: {k}": v for k, v in C.label_skew_long_configs(p, "fashionmnist", 100, remedy).items()})
    return {k: v.replace(seed=SEED) for k, v in out.items()
            if v.algorithm in (SEMIFL, FEDAVG_FIXMATCH, FL2, PARTIALLY_SUPERVISED) and v.num_supervised == 100}


def test_one_seed_one_labeled_set_for_every_arm_and_one_client_split_per_partition():
    labels, by_arm = fashion_sized_labels(), arms()
    assert {c.algorithm for c in by_arm.values()} == {SEMIFL, FEDAVG_FIXMATCH, FL2, PARTIALLY_SUPERVISED}
    assert sum(c.local_epochs == 1.0 for c in by_arm.values()) and sum(c.global_momentum == 0 for c in by_arm.values())
    splits = {k: P.make_split(c, labels) for k, c in by_arm.items()}
    server = {tuple(s.server) for s in splits.values()}
    assert len(server) == 1, "arms at one seed hold different labeled sets"
    assert len(next(iter(server))) == 100
    for part in PARTITIONS:
        fed = {tuple(map(tuple, s.clients)) for k, s in splits.items() if by_arm[k].federated
               and by_arm[k].partition == part}
        assert len(fed) == 1, f"{part}: arms at one seed split the clients differently"
    # and another seed draws another labeled set (the pairing is by seed, not one fixed set)
    other = P.make_split(next(iter(by_arm.values())).replace(seed=SEED + 1), labels)
    assert tuple(other.server) not in server
    assert len({P.labeled_draw(c) for c in by_arm.values()}) == 1   # what the claims tables pair them by


def test_arms_of_one_architecture_start_from_the_same_weights():
    by_model = {}
    for k, cfg in arms().items():
        state = Experiment.new_state(SimpleNamespace(cfg=cfg, data=SimpleNamespace(shape=(1, 28, 28)),
                                                     device=torch.device("cpu")))
        by_model.setdefault((cfg.model, cfg.norm), []).append(state.model.state_dict())
    for key, states in by_model.items():
        for s in states[1:]:
            assert all(torch.equal(s[n], states[0][n]) for n in s), f"{key}: arms start from different weights"


def test_arms_with_different_labeled_sets_have_different_draws_so_they_are_not_paired():
    """The rule pairs a claim's arms by seed only where their runs share partition.labeled_draw (else Welch)."""
    semifl = profile("small", algorithm=SEMIFL)
    for other in (semifl.replace(num_supervised=40), semifl.replace(split_seed=3),
                  profile("small", algorithm="cbafed")):
        assert P.labeled_draw(other) != P.labeled_draw(semifl)
