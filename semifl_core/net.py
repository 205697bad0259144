"""What a loss function is given and what it uses, whichever engine runs it (engine.py).

A loss is `loss_fn(f, b) -> (loss, counts)`: f the network being trained (a `Net`), b one step's batch. A loss reduces
over the last, sample dimension (`batch_mean`, `batch_ce`, `sample_ce`), so that a tensor may carry leading model
dimensions; `graph_safe` marks one that a CUDA graph can take, `frozen` one that leaves some parameters untrained.
docs/adding_a_method.md walks through writing one.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .errors import ConfigError
from .models import batch_parts


def graph_safe(loss_fn):
    """Marks a loss free of host syncs and data-dependent Python control flow, so that a step on it can be captured as a
    CUDA graph (Speed.cuda_graphs), and as honouring b["valid"] (a batch padded to full size, Speed.masked_steps: means
    and counts over its real samples only, `batch_mean`). Unmarked losses run eagerly on un-padded batches."""
    loss_fn.graph_safe = True
    return loss_fn


def frozen(loss_fn, *prefixes: str):
    """loss_fn, training only the parameters whose names start with none of `prefixes` (e.g. "fc.": the classifier
    head): the others keep their start weights through local training, no gradient step, no weight decay, no
    momentum (their momentum buffers are handed back as they came). A new function; graph_safe carries over."""
    def loss(f, b):
        return loss_fn(f, b)
    loss.frozen = tuple(getattr(loss_fn, "frozen", ())) + prefixes
    loss.graph_safe = getattr(loss_fn, "graph_safe", False)
    return loss


def frozen_names(loss_fn, names) -> set:
    """The parameter names that loss_fn leaves untrained (`frozen`)."""
    prefixes = getattr(loss_fn, "frozen", ())
    return {n for n in names if n.startswith(prefixes)} if prefixes else set()


def loss_key(loss_fn):
    """What identifies a loss for reusing a captured step between train calls: its code, its closure's values and its
    marks (graph_safe, frozen), so that a loss built anew every round from the same code and values reuses the step; the
    function itself where these are not hashable."""
    code = getattr(loss_fn, "__code__", None)
    if code is None:
        return loss_fn
    cells = tuple(c.cell_contents for c in loss_fn.__closure__ or ())
    key = (code, tuple(loss_key(v) if callable(v) and hasattr(v, "__code__") else v for v in cells),
           loss_fn.__defaults__, getattr(loss_fn, "graph_safe", False), getattr(loss_fn, "frozen", ()))
    try:
        hash(key)
    except TypeError:
        return loss_fn
    return key


class Weights(dict):
    """Weights by parameter name (Net.params, Net.start): a name the network does not have is one line naming it."""

    def __missing__(self, name):
        raise ConfigError(f"a loss asked for the weights {name!r}, which this network does not have; it has "
                          f"{', '.join(self)}")


class ClientValues(dict):
    """A client's state by name (Net.state, methods/client_state.py): a name not kept is one line naming it."""

    def __missing__(self, name):
        raise ConfigError(f"a loss asked for the client state {name!r}, which this method does not keep; it keeps "
                          f"{', '.join(self) or 'none (Method.client_state)'}")


def sq_distance(a: dict, b: dict) -> torch.Tensor:
    """||a - b||^2 over every tensor of b, per model: a scalar, or one per leading model index where a's tensors have
    one that b's lack (stacked weights against one start); e.g. FedProx's (mu / 2) sq_distance(f.params, f.start)."""
    return sum((a[k] - v).pow(2).flatten(a[k].dim() - v.dim()).sum(-1) for k, v in b.items())


def inner(a: dict, b: dict) -> torch.Tensor:
    """<a, b> = the sum of a * b over every tensor of b, per model as sq_distance: e.g. FedDyn's linear term
    -<h_i, w>, -inner(f.params, f.state)."""
    return sum((a[k] * v).flatten(a[k].dim() - v.dim()).sum(-1) for k, v in b.items())


class Net:
    """What a loss function gets as f: the network being trained, in one engine's way of running it.

    f(x)           its logits on a normalised image batch (training mode: static BN takes the batch's statistics)
    f.parts(*xs)   the logits of several batches of one size, each normalised by its own batch statistics, as a
                   tuple: one forward of them all (Speed.one_forward, static BN and GroupNorm) or one each;
                   f.parts(*xs, weights=w) the same at weights w
    f.params       the weights being trained, name -> tensor (differentiable: a loss may read them, e.g. a proximal
                   term (mu/2) ||w - w_start||^2)
    f.start        the weights the train call started from (the global model the clients received), constant
    f.at(w, x)     the logits of the same network at weights w (name -> tensor, all of them), training mode: e.g.
                   f.at(f.start, x), the received model with the same batch statistics as the student
    f.state        the state a SemiFL variant keeps for this client (name -> tensor, constant during the client's
                   training; empty for a method that keeps none: methods/client_state.py)
    f.client       the id of the client being trained, a 0-d integer tensor (the server's engine: the model's index)
    In the vectorized engine all of these are one client's (inside vmap); every one is graph-safe."""

    def __init__(self, forward, params: dict, start: dict, at, one_forward: bool, state: dict | None = None,
                 client: torch.Tensor | None = None):
        self._forward, self._at, self._one = forward, at, one_forward
        self.params, self.start = Weights(params), Weights(start)
        self.state = state if isinstance(state, ClientValues) else ClientValues(state or {})
        self.client = client

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self._forward(x)

    def parts(self, *xs: torch.Tensor, weights: dict | None = None) -> tuple:
        net = self if weights is None else (lambda x: self.at(weights, x))
        if len(xs) == 1 or not self._one:
            return tuple(net(x) for x in xs)
        with batch_parts(len(xs)):
            return net(torch.cat(xs)).chunk(len(xs))

    def at(self, weights: dict, x: torch.Tensor) -> torch.Tensor:
        return self._at(weights, x)


def batch_mean(v: torch.Tensor, b: dict) -> torch.Tensor:
    """The mean of v (..., B) over the step's real samples (all, or those b["valid"] marks), one per leading index."""
    if "valid" not in b:
        return v.mean(-1)
    m = b["valid"].to(v.dtype)
    return (v * m).sum(-1) / m.sum(-1)


def sample_ce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """F.cross_entropy per sample, logits (..., B, classes) and labels (..., B) -> (..., B)."""
    return F.cross_entropy(logits.flatten(0, -2), y.flatten(), reduction="none").view(y.shape)


def batch_ce(logits: torch.Tensor, y: torch.Tensor, b: dict) -> torch.Tensor:
    """F.cross_entropy (a batch mean) over the step's real samples (batch_mean), one per leading index."""
    if "valid" not in b and logits.dim() == 2:
        return F.cross_entropy(logits, y)
    return batch_mean(sample_ce(logits, y), b)
