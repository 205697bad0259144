"""The SemiFL paper's baselines (Table 1, Table 2), built from SemiFL's own pieces so that they differ from it only
where the paper says they do.

- Partially Supervised: the server's N_S labeled images alone (SemiFL's ServerUpdate, every round).
- Fully Supervised: the same on the whole labeled training set (methods table: labels="all").
- FedAvg + FixMatch: Table 2's first row, SemiFL's round with fine-tune, global pseudo-labels and mix off: the
  server trains beside the clients and each client runs FixMatch's per-batch loss.
- FedAvg with every client sample labeled (Table 1's HeteroFL row): supervised client training, SemiFL's averaging
  and global momentum.
"""
from __future__ import annotations

from ..models import load_weights
from ..rounds import Round, RoundRecord
from ..tasks import make_tasks
from .semifl import (average, client_data, global_momentum_step, semifl_round, server_update, supervised_loss,
                     train_clients)


def supervised_round(exp, st, rnd: Round) -> RoundRecord:
    """Centralized training on the server's labeled data (exp.server_idx: N_S images, or all of them)."""
    with rnd.timed("server"):
        weights, rnd.record.server_loss = server_update(exp, st, rnd)
        load_weights(st.model, weights)
    return rnd.record


def fedavg_fixmatch_round(exp, st, rnd: Round) -> RoundRecord:
    """The config fixes finetune=False, global_pseudo_labels=False, mix_loss=False (methods table); SemiFL's round
    then is FedAvg + FixMatch with the server's model averaged in."""
    return semifl_round(exp, st, rnd)


def fedavg_supervised_round(exp, st, rnd: Round) -> RoundRecord:
    cfg, data = exp.cfg, exp.data
    active = [int(c) for c in rnd.rng.choice(cfg.num_clients, cfg.num_active, replace=False)]
    specs = [client_data(exp, c) for c in active]
    with rnd.timed("augment"):
        tasks = make_tasks(specs, cfg.client_batch, cfg.local_epochs, rnd.rng, rnd.g, flip=data.flip)
    rnd.record.clients_trained = len(active)
    stacked, _ = train_clients(exp, st, rnd, tasks, active, supervised_loss)
    with rnd.timed("aggregate"):
        global_momentum_step(st.model, st.global_opt, average(stacked))
    return rnd.record
