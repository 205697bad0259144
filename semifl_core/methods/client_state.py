"""State a SemiFL variant keeps per client across rounds (FedDyn's h_i, SCAFFOLD's control variates):
docs/adding_a_method.md, "Per-client state".

A variant declares `client_state=ClientState(init, update)` in its Method. Before a client's first training its state
is `init(cfg, weights)` (weights: the global model it received, name -> tensor); its loss reads the state as f.state
(and its id as f.client) in every step of its training, in both engines; after the training `update(cfg, state, start,
end)` (start: the weights it received, end: the weights it trained to) returns its new state. The states live in the
run's state (`state.method["client_state"]`, client id -> name -> tensor) and are checkpointed with it. A state
changes its values, never its names or shapes: a hook that returns others is one line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..errors import ConfigError

KEY = "client_state"   # where the run's state (State.method) holds them


@dataclass(frozen=True)
class ClientState:
    init: Callable     # (cfg, weights) -> {name: tensor}: a client's state before its first training
    update: Callable   # (cfg, state, start, end) -> {name: tensor}: its state after a training, same names and shapes


def given(exp, st, clients: list[int]) -> list[dict] | None:
    """The trained clients' states (f.state), in their order: those not yet trained get `init` of the global model;
    None for a method that keeps none."""
    hooks = exp.cfg.method.client_state_hooks()
    if hooks is None:
        return None
    kept = st.method.setdefault(KEY, {})
    weights = {k: v.detach() for k, v in st.model.named_parameters()}
    for c in clients:
        if c not in kept:
            kept[c] = _checked(exp.cfg, c, hooks.init(exp.cfg, weights), None, "init")
    return [kept[c] for c in clients]


def after_training(exp, st, clients: list[int], stacked: dict) -> None:
    """`update` for each trained client, from the weights it received (the global model) and those it trained to
    (stacked: one row per client, in `clients`' order)."""
    hooks = exp.cfg.method.client_state_hooks()
    if hooks is None:
        return
    kept = st.method[KEY]
    start = {k: v.detach() for k, v in st.model.named_parameters()}
    with torch.no_grad():
        for i, c in enumerate(clients):
            end = {k: stacked[k][i] for k in start}
            kept[c] = _checked(exp.cfg, c, hooks.update(exp.cfg, kept[c], start, end), kept[c], "update")


def _checked(cfg, client: int, state, before: dict | None, hook: str) -> dict:
    """state, if it is name -> tensor (with before's names and shapes, after an update); else one line."""
    allowed = ("name -> tensor" if before is None else
               ", ".join(f"{k} {tuple(v.shape)}" for k, v in before.items()) + " (the names and shapes init gave)")
    got = state.items() if isinstance(state, dict) else ()
    bad = not isinstance(state, dict) or any(not isinstance(v, torch.Tensor) for _, v in got) or (
        before is not None and (state.keys() != before.keys() or any(v.shape != before[k].shape for k, v in got)))
    if bad:
        shown = (", ".join(f"{k} {tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__}"
                           for k, v in got) or "nothing") if isinstance(state, dict) else type(state).__name__
        raise ConfigError(f"method {cfg.algorithm!r}: its client_state {hook} returned {shown} for client {client}; "
                          f"allowed: {allowed}")
    return {k: v.detach() for k, v in state.items()}
