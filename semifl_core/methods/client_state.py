"""State a SemiFL variant keeps across rounds, per client (FedDyn's h_i, SCAFFOLD's c_i) and at the server
(FedAdam's moments, SCAFFOLD's c): docs/adding_a_method.md, sections 4b and 4c.

Per client, `client_state=ClientState(init, update)`: a client's state is `init(cfg, weights)` (the global model it
received, name -> tensor) before its first training; its loss reads it as f.state (its id as f.client, the server's
state as "server.<name>") in every step, in both engines; after training, `update(cfg, state, start, end, ctx)` returns
its new state (start, end: the weights received and trained to; ctx.steps, ctx.lr the round's, ctx.server).

At the server, `server_state=ServerState(init, step)` replaces SemiFL's global momentum (Model Averaging's `averaged`
in, the next global weights out): `init(cfg, weights)` before the first round; `step(cfg, state, weights, averaged,
ctx)` returns (next global weights, new state); ctx.clients holds (before, after) of each trained client's state this
round, ctx.default(averaged) SemiFL's own step.

The states live in the run's state (`state.method`) and are checkpointed with it. A state changes its values, never its
names or shapes: a hook that returns others is one line.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import torch

from ..errors import ConfigError

KEY = "client_state"          # where the run's state (State.method) holds the clients' states
SERVER_KEY = "server_state"   # ... and the server's


@dataclass(frozen=True)
class ClientState:
    init: Callable     # (cfg, weights) -> {name: tensor}: a client's state before its first training
    update: Callable   # (cfg, state, start, end, ctx) -> {name: tensor}, same names and shapes


@dataclass(frozen=True)
class ServerState:
    init: Callable     # (cfg, weights) -> {name: tensor}: the server's state before the first round
    step: Callable     # (cfg, state, weights, averaged, ctx) -> (next global weights, new state)


def server(exp, st) -> dict:
    """The server's state ({} for a method that keeps none), made by `init` from the global model at first use."""
    hooks = exp.cfg.method.server_state_hooks()
    if hooks is None:
        return {}
    if SERVER_KEY not in st.method:
        weights = {k: v.detach() for k, v in st.model.named_parameters()}
        st.method[SERVER_KEY] = _checked(exp.cfg, "server", hooks.init(exp.cfg, weights), None, "init", "server_state")
    return st.method[SERVER_KEY]


def server_step(exp, st, averaged: dict, clients: list, default: Callable) -> None:
    """The variant's aggregation step: the global model becomes the weights `step` returns (its plain BN running
    statistics are copied from `averaged`, as global momentum does), the server's state the state it returns."""
    hooks, state = exp.cfg.method.server_state_hooks(), server(exp, st)
    weights = {k: v.detach() for k, v in st.model.named_parameters()}

    def semifl_step(avg: dict) -> dict:   # SemiFL's own step, from the current global model (which it leaves as it is)
        saved = {k: v.clone() for k, v in weights.items()}
        default(avg)
        out = {k: v.detach().clone() for k, v in st.model.named_parameters()}
        with torch.no_grad():
            for k, v in st.model.named_parameters():
                v.copy_(saved[k])
        return out
    with torch.no_grad():
        new, st.method[SERVER_KEY] = hooks.step(exp.cfg, state, weights, averaged,
                                                SimpleNamespace(clients=clients, default=semifl_step))
        st.method[SERVER_KEY] = _checked(exp.cfg, "server", st.method[SERVER_KEY], state, "step", "server_state")
        for k, v in st.model.named_parameters():
            v.copy_(new[k])
        for k, b in st.model.named_buffers():
            if k in averaged:
                b.copy_(averaged[k])


def given(exp, st, clients: list[int]) -> list[dict] | None:
    """The trained clients' states (f.state), in order (`init` of the global model for a client's first); None if the
    method keeps none."""
    hooks = exp.cfg.method.client_state_hooks()
    if hooks is None:
        return None
    kept = st.method.setdefault(KEY, {})
    weights = {k: v.detach() for k, v in st.model.named_parameters()}
    for c in clients:
        if c not in kept:
            kept[c] = _checked(exp.cfg, c, hooks.init(exp.cfg, weights), None, "init")
    shared = {f"server.{k}": v for k, v in server(exp, st).items()}
    return [{**kept[c], **shared} for c in clients]


def after_training(exp, st, clients: list[int], stacked: dict, steps: list[int], lr: float) -> list:
    """`update` for each trained client (stacked: the weights trained to, one row per client in `clients`' order);
    returns each one's (state before, state after) for the server's step ([] if the method keeps none)."""
    hooks = exp.cfg.method.client_state_hooks()
    if hooks is None:
        return []
    kept, changes = st.method[KEY], []
    start = {k: v.detach() for k, v in st.model.named_parameters()}
    shared = server(exp, st)
    with torch.no_grad():
        for i, c in enumerate(clients):
            end = {k: stacked[k][i] for k in start}
            ctx = SimpleNamespace(steps=int(steps[i]), lr=float(lr), server=shared)
            before = kept[c]
            kept[c] = _checked(exp.cfg, c, hooks.update(exp.cfg, before, start, end, ctx), before, "update")
            changes.append((before, kept[c]))
    return changes


def _checked(cfg, client, state, before: dict | None, hook: str, which: str = "client_state") -> dict:
    """state, if it is name -> tensor (with before's names and shapes, after an update); else one line."""
    allowed = ("name -> tensor" if before is None else
               ", ".join(f"{k} {tuple(v.shape)}" for k, v in before.items()) + " (the names and shapes init gave)")
    got = state.items() if isinstance(state, dict) else ()
    bad = not isinstance(state, dict) or any(not isinstance(v, torch.Tensor) for _, v in got) or (
        before is not None and (state.keys() != before.keys() or any(v.shape != before[k].shape for k, v in got)))
    if bad:
        shown = (", ".join(f"{k} {tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__}"
                           for k, v in got) or "nothing") if isinstance(state, dict) else type(state).__name__
        whose = "" if client == "server" else f" for client {client}"
        raise ConfigError(f"method {cfg.algorithm!r}: its {which} {hook} returned {shown}{whose}; allowed: {allowed}")
    return {k: v.detach() for k, v in state.items()}
