"""What a SemiFL variant builds its clients' loss on (docs/adding_a_method.md): SemiFL's client loss, Eq. (5) and (6) of
the NeurIPS paper, in parts a variant changes one at a time (`Parts`, `parts_loss`), a config's loss before its variant
(`base_loss`), and the loss SemiFL's clients train with: the variant's inside SemiFL's switches (`semifl_client_loss`).
Eq. (5), (6) are written out in methods/semifl.py's `client_loss`, which SemiFL runs; a variant or a label-skew remedy
runs the same equations through here, in the same order of sums."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable

from .. import augment
from ..net import batch_mean, frozen, graph_safe, loss_key
from . import skew_losses


@dataclass(frozen=True, eq=False)
class Parts:
    """SemiFL's client loss, Eq. (5) and (6), in parts a variant may change one at a time (dataclasses.replace):

    - `fix_ce`: the fix batch's per-sample cross-entropy, (logits, y, b) -> (..., B) (net.sample_ce's shape), on the
      logits after the remedy's change; None: the remedy's own CE (SemiFL's). L_fix is its mean over the step's real
      samples (as the remedy weighs them);
    - `mix`: L_mix, (parts, out_mix, b) -> a batch value; None: Eq. (6), lam CE(y_fix) + (1 - lam) CE(y_mix), each CE
      the remedy's;
    - `fix_weight`, `mix_weight`: L = fix_weight L_fix + mix_weight L_mix (Eq. 5 with lambda = 1: 1 and 1).

    The remedy's extra terms are added whatever the parts. Parts with the same remedy, weights and functions
    (net.loss_key) are equal, so a captured step is reused when a variant builds them anew."""
    remedy: skew_losses.Remedy = skew_losses.Remedy()
    fix_ce: Callable | None = None
    mix: Callable | None = None
    fix_weight: float = 1.0
    mix_weight: float = 1.0

    def change(self, **parts) -> "Parts":
        """These parts with some replaced (dataclasses.replace); a part SemiFL's loss does not have is one line."""
        allowed = [f.name for f in fields(self) if f.name != "remedy"]
        for name in parts:
            if name not in allowed:
                from ..errors import ConfigError
                raise ConfigError(f"SemiFL's client loss has no part {name!r}; its parts: {', '.join(allowed)}")
        return replace(self, **parts)

    def _key(self):
        return (self.remedy, loss_key(self.fix_ce), loss_key(self.mix), self.fix_weight, self.mix_weight)

    def __eq__(self, other):
        return isinstance(other, Parts) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def ce(self, logits, y, b):
        """A cross-entropy of the loss, a batch value, as the remedy computes it."""
        return self.remedy.ce(logits, y, b)

    def fix_loss(self, out_fix, b):
        """L_fix: the fix batch's CE against its pseudo-labels."""
        if self.fix_ce is None:
            return self.ce(out_fix, b["y"], b)
        per_sample, w = self.fix_ce(self.remedy.logits(out_fix, b), b["y"], b), self.remedy.weights(b["y"], b)
        if w is None:
            return batch_mean(per_sample, b)
        w = w.to(per_sample.dtype)
        return (per_sample * w).sum(-1) / w.sum(-1).clamp_min(1)

    def mix_terms(self, out_mix, b) -> tuple:
        """L_mix as the terms it sums: Eq. (6)'s lam CE(y_fix) and (1 - lam) CE(y_mix), or the variant's `mix` alone."""
        if self.mix is not None:
            return (self.mix(self, out_mix, b),)
        return b["lam"] * self.ce(out_mix, b["y"], b), (1 - b["lam"]) * self.ce(out_mix, b["y_mix"], b)

    def plus_mix(self, loss, out_mix, b):
        """loss + mix_weight L_mix, the terms added one by one at weight 1 (the order the committed runs summed in)."""
        terms = self.mix_terms(out_mix, b)
        if self.mix_weight != 1.0:
            return loss + self.mix_weight * sum(terms[1:], terms[0])
        for term in terms:
            loss = loss + term
        return loss


def parts_loss(f, b, parts: Parts):
    """Eq. (5), (6) from its parts: fix_weight L_fix + mix_weight L_mix, L_fix = CE(f(A(x_fix)), y_fix) on the strong
    view, L_mix on x_mix = lam alpha(x_fix) + (1 - lam) alpha(x_b^mix) (with a mix batch), plus the remedy's terms. The
    fix and mix batches run as the authors' two calls of the network, each with its own batch statistics (f.parts: one
    forward of both where it can)."""
    mixed = augment.mixup(b["x_weak"], b["x_mix"], b["lam"]) if "x_mix" in b else None
    out_fix, out_mix = f.parts(b["x"], mixed) if mixed is not None else (f(b["x"]), None)
    loss = parts.fix_loss(out_fix, b)
    if parts.fix_weight != 1.0:
        loss = parts.fix_weight * loss
    if mixed is not None:
        loss = parts.plus_mix(loss, out_mix, b)
    return loss + parts.remedy.extra(f, b, out_fix, out_mix, mixed), b["x"].new_zeros(0)


def loss_of(parts: Parts):
    """A client loss (f, b) -> (loss, counts) from SemiFL's parts; `.parts` holds them, for a variant to change."""
    loss = graph_safe(lambda f, b: parts_loss(f, b, parts))
    loss.parts = parts
    return loss


def base_loss(cfg):
    """Eq. (5), (6) with cfg's label-skew remedy: the loss a SemiFL variant builds on, changing its `.parts`
    (loss_of(dataclasses.replace(base.parts, ...))) or calling it and adding to it."""
    return loss_of(Parts(skew_losses.remedy(cfg)))


def semifl_client_loss(cfg):
    """The loss SemiFL's clients train with: base_loss, changed by a SemiFL variant's Method.client_loss, inside
    SemiFL's switches (frozen_head keeps the head's received weights even under a variant's terms)."""
    loss, variant = base_loss(cfg), cfg.method.client_loss_function()
    if variant:
        from ..errors import ConfigError
        try:
            loss = variant(cfg, loss)
        except ConfigError as err:   # e.g. a part SemiFL's loss does not have: said with the method's name
            raise ConfigError(f"method {cfg.algorithm!r}: {err}") from None
    frozen_prefixes = skew_losses.remedy(cfg).frozen
    return frozen(loss, *frozen_prefixes) if frozen_prefixes else loss
