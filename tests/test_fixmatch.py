"""Centralized FixMatch (methods/fixmatch.py), the semi-supervised ceiling: its loss, its budget, its limit at tau=1."""
import numpy as np
import torch
import torch.nn.functional as F

from semifl_core.config import profile
from semifl_core.data import synthetic
from semifl_core.methods import fixmatch, semifl
from semifl_core.rounds import Round, RoundRecord
from semifl_core.run import Experiment
from semifl_core.tasks import Task

DATA = synthetic()


def _round(exp, r=0):
    return Round(r, 0.03, np.random.default_rng([exp.cfg.seed, r]), torch.Generator().manual_seed(r), exp.device,
                 diagnose=False, last=False, record=RoundRecord(round=r + 1, lr=0.03))


def test_the_loss_is_labeled_ce_plus_the_masked_unlabeled_ce():
    torch.manual_seed(0)
    w = torch.randn(4, 3)
    f = lambda x: x @ w   # noqa: E731
    weak = torch.tensor([[3.0, 0, 0, 0], [0, 0.1, 0, 0], [0, 0, 5.0, 0], [0.2, 0.1, 0, 0]])
    b = {"x_weak": weak, "x": torch.randn(4, 4), "y": torch.tensor([0, 1, 2, 2]), "x_l": torch.randn(2, 4),
         "y_l": torch.tensor([1, 0])}
    p = torch.softmax(f(weak), 1)
    conf, hat = p.max(1)
    tau = float(conf.sort().values[1]) + 1e-6           # exactly the two most confident samples pass
    mask = (conf >= tau).float()
    assert mask.sum() == 2
    ce_u = F.cross_entropy(f(b["x"]), hat, reduction="none")
    want = F.cross_entropy(f(b["x_l"]), b["y_l"]) + (ce_u * mask).sum() / 4   # mean over the whole unlabeled batch
    got, counts = fixmatch.loss(tau)(f, b)
    assert torch.allclose(got, want)
    assert counts.tolist() == [4, float((hat == b["y"]).sum()), 2, float(((hat == b["y"]).float() * mask).sum())]


def test_a_round_takes_the_steps_of_semifl_clients_on_all_their_data():
    """FedAvg + FixMatch's clients train E epochs over all their images: the round's steps are theirs, summed."""
    cfg = profile("smoke", algorithm="fixmatch", local_epochs=2.0)
    exp = Experiment(cfg, DATA, torch.device("cpu"))
    task = fixmatch.round_task(exp, _round(exp))
    fed = Experiment(profile("smoke", algorithm="fedavg-fixmatch", local_epochs=2.0), DATA, torch.device("cpu"))
    client_tasks, trained = semifl.client_tasks(fed, fed.new_state(), _round(fed), list(range(cfg.num_active)))
    assert task.steps == sum(t.steps for t in client_tasks) == fixmatch.steps_per_round(cfg, 1900)
    assert task.steps == cfg.num_active * 2 * 19            # 3 clients x 2 epochs x 190 images / batch 10
    assert int(task.size.sum()) == cfg.num_active * 2 * 190
    small = profile("small", algorithm="fixmatch")
    assert fixmatch.steps_per_round(small, 60000 - 100) == 10 * 5 * 60   # the profile: 3,000 steps a round


def test_with_tau_one_it_is_supervised_training_on_the_labeled_set():
    """No unlabeled sample reaches max p >= 1: the round trains exactly as SGD on its labeled batches alone."""
    exp = Experiment(profile("smoke", algorithm="fixmatch", threshold=1.0, rounds=1), DATA, torch.device("cpu"))
    st, rnd = exp.new_state(), _round(exp)
    start = {k: v.clone() for k, v in st.model.state_dict().items()}
    fixmatch.fixmatch_round(exp, st, rnd)
    assert rnd.record.label_ratio == 0.0
    task = fixmatch.round_task(exp, _round(exp))          # the round's own draws, again
    labeled_only = Task({"x": task.views["x_l"], "y": task.views["y_l"]}, task.size)
    reference = exp.new_state().model                       # the same initial weights
    stacked, _, _ = exp.server_engine.train(reference, [labeled_only], semifl.supervised_loss, rnd.lr, [None])
    for k, v in st.model.state_dict().items():
        if k in stacked:
            assert torch.equal(stacked[k][0], v), k
    assert any(not torch.equal(v, start[k]) for k, v in st.model.state_dict().items())   # it did train
