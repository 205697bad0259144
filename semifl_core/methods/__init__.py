"""The method table: every method the package runs, by name, with its display label and where its round lives.

The CLI, config validation, the results store and the reports read this table; nothing else names a method.
Adding a method is one module (a `round(exp, state, rnd) -> RoundRecord` function, see methods/semifl.py) and one
line in METHODS (or `register(Method(...))` at run time, as tests/test_methods.py does with a toy method).

This module imports nothing heavy (no torch): `semifl --help` and config validation read it.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

# The method names (the only place they are written as strings; elsewhere use these constants).
SEMIFL = "semifl"
FEDAVG_FIXMATCH = "fedavg-fixmatch"
PARTIALLY_SUPERVISED = "partially-supervised"
FULLY_SUPERVISED = "fully-supervised"
FEDAVG_SUPERVISED = "fedavg-supervised"

# Config fields a centralized method never reads: left out of its run key, so one run serves every partition.
FEDERATION_FIELDS = ("partition", "num_clients", "active_rate", "local_epochs", "client_batch", "threshold",
                     "mixup_alpha", "mix_loss", "global_pseudo_labels", "client_momentum", "finetune",
                     "global_momentum", "sbn_source", "round_order", "strong_aug")


@dataclass(frozen=True)
class Method:
    name: str
    label: str                      # row label in tables and figures
    round: str | Callable           # "module:function" of its round (imported when a run starts), or the function
    labels: str = "server"          # where the labels are: "server" (N_S at the server, balanced per class),
                                    # "all" (the server holds the whole training set), "clients" (every client
                                    # sample is labeled; no server split)
    federated: bool = True          # has clients (reads the federation fields)
    unused: tuple = ()              # config fields it never reads (left out of its run key)
    fixed: dict = field(default_factory=dict)      # values the method means (set by `profile`, checked by validate)
    profiles: dict = field(default_factory=dict)   # profile name -> default values for this method in that profile

    def round_function(self) -> Callable:
        if callable(self.round):
            return self.round
        module, _, name = self.round.partition(":")
        return getattr(importlib.import_module(module), name)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method(SEMIFL, "SemiFL", "semifl_core.methods.semifl:semifl_round"),
    Method(FEDAVG_FIXMATCH, "FedAvg + FixMatch", "semifl_core.methods.baselines:fedavg_fixmatch_round",
           fixed=dict(finetune=False, global_pseudo_labels=False, mix_loss=False)),
    Method(PARTIALLY_SUPERVISED, "Partially Supervised", "semifl_core.methods.baselines:supervised_round",
           federated=False, unused=FEDERATION_FIELDS),
    # trains centrally on the whole training set, one epoch per round with Table 4's batch of 10 (in `small` the
    # same batch as the clients and the server, so that its sample-epochs compare with theirs; its length is sized
    # in README.md, "The small profile"); sBN statistics from all 60,000 images make its evaluation costly, so it
    # is evaluated every 5 epochs
    Method(FULLY_SUPERVISED, "Fully Supervised", "semifl_core.methods.baselines:supervised_round", labels="all",
           federated=False, unused=(*FEDERATION_FIELDS, "num_supervised"),
           profiles={"paper": dict(server_batch=250), "smoke": dict(server_epochs=1.0),
                     "small": dict(server_batch=10, server_epochs=1.0, rounds=10, eval_every=5)}),
    # the SemiFL paper's "HeteroFL" row of Table 1: FedAvg with every client sample labeled
    Method(FEDAVG_SUPERVISED, "FedAvg supervised (HeteroFL)",
           "semifl_core.methods.baselines:fedavg_supervised_round", labels="clients"),
)}


def register(method: Method) -> Method:
    """Add a method to the table (one that is already there is refused: pick another name)."""
    if method.name in METHODS:
        raise ValueError(f"method {method.name!r} is already registered")
    METHODS[method.name] = method
    return method
