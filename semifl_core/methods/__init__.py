"""The method table: every method the package runs, by name, with its display label and where its round lives.

Nothing else names a method. Adding one is a module (a `round(exp, state, rnd) -> RoundRecord` function, see
methods/semifl.py; or, for a variant of SemiFL, its client loss and any state per client: methods/client_state.py) and
one line: in METHODS, or `register(Method(...))` in a module named in SEMIFL_METHODS (docs/adding_a_method.md). No torch
here: `semifl --help` and config validation read it.
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
FEDDURE = "feddure"
FEDAVG_LABELED = "fedavg-labeled"               # FedDure's FedAvg*: the clients' labeled parts only
FEDAVG_FIXMATCH_CLIENTS = "fedavg-fixmatch-clients"
FEDAVG_SL = "fedavg-sl"                         # FedDure's FedAvg-SL: every client sample labeled
FIXMATCH = "fixmatch"                           # centralized FixMatch: the SSL ceiling (one model, data pooled)
FL2 = "fl2"                                     # (FL)^2 (NeurIPS 2024): SemiFL's setting, few-label client training
CBAFED = "cbafed"                               # CBAFed (CVPR 2023): labels at one client
CBAFED_LOWER = "cbafed-labeled-only"            # its Table 1's lower bound: the labeled client alone
CBAFED_UPPER = "cbafed-all-labeled"             # its upper bound: FedAvg with every client labeled
CBAFED_FIXMATCH = "cbafed-fixmatch"             # FedAvg + FixMatch on CBAFed's placement and schedule
CBAFED_METHODS = (CBAFED, CBAFED_LOWER, CBAFED_UPPER, CBAFED_FIXMATCH)

# Config.labels_at: the server (SemiFL's setting), a few per class at every client (FedDure's), or one client (CBAFed's)
SERVER, CLIENTS, ONE_CLIENT = "server", "clients", "one-client"
PLACEMENTS = (SERVER, CLIENTS, ONE_CLIENT)

# Config fields a centralized method never reads: left out of its run key, so one run serves every partition.
FEDERATION_FIELDS = ("partition", "num_clients", "active_rate", "local_epochs", "client_batch", "threshold",
                     "mixup_alpha", "mix_loss", "global_pseudo_labels", "client_momentum", "finetune",
                     "global_momentum", "sbn_source", "round_order", "strong_aug", "mix_draws", "shear_resample",
                     "cutout_size")
# SemiFL's fields that FedDure's family of methods never reads.
SEMIFL_ONLY_FIELDS = ("num_supervised", "mixup_alpha", "mix_loss", "global_pseudo_labels", "client_momentum",
                      "finetune", "server_momentum", "server_batch", "server_epochs", "momentum", "nesterov",
                      "clip_norm", "global_momentum", "sbn_source", "round_order", "mix_draws", "shear_resample",
                      "cutout_size")
# FedDure's setting (its Section "Experiments"): K=100 clients, 5 a round, 200 rounds, Adam lr 5e-4, batch 10,
# one local epoch, ResNet-9 with BN. `small`: the CPU variant sized in notebooks/feddure_table1.ipynb.
FEDDURE_PROFILES = {
    "paper": dict(num_clients=100, active_rate=0.05, rounds=200, lr=5e-4, weight_decay=0.0, client_batch=10,
                  local_epochs=1.0, model="resnet9", norm="bn", labels_at=CLIENTS, eval_every=1),
    "small": dict(num_clients=100, active_rate=0.05, rounds=50, lr=5e-4, weight_decay=0.0, client_batch=10,
                  local_epochs=1.0, model="cnn", norm="bn", labels_at=CLIENTS, eval_every=10),
    "smoke": dict(num_clients=10, active_rate=0.3, rounds=2, lr=5e-4, weight_decay=0.0, client_batch=10,
                  local_epochs=1.0, model="cnn", norm="bn", labels_at=CLIENTS, client_labels=2, threshold=0.5),
}
# The fields CBAFed's family never reads (methods/cbafed.py: its own constant learning rates, epochs and batch plan).
CBAFED_UNUSED = ("num_supervised", "mixup_alpha", "mix_loss", "global_pseudo_labels", "client_momentum", "finetune",
                 "server_momentum", "server_batch", "server_epochs", "global_momentum", "sbn_source", "round_order",
                 "mix_draws", "shear_resample", "cutout_size", "local_epochs", "strong_aug", "labeled_partition",
                 "pseudo_label_rule", "active_rate")
# CBAFed's setting (its Section 4 and code): K=10 clients, all active every round, client 0 labeled (one tenth of the
# data: Config.cbafed_labeled), the rest Dir(0.8); 501 warm-up epochs and 501 rounds; SGD lr 0.03 (0.02 on unlabeled
# clients), momentum 0.9, weight decay 5e-4, clipping 5, batch 64; tau_h 0.95. Its ResNet-18 is not here: `paper` runs
# ResNet-9. `small` (notebooks/cbafed_table1.ipynb): our CNN, 20 warm-up and 20 federated rounds.
_CBAFED = dict(num_clients=10, active_rate=1.0, partition="dir-0.8", labels_at=ONE_CLIENT, client_labels=600, lr=0.03,
               momentum=0.9, weight_decay=5e-4, nesterov=False, clip_norm=5.0, client_batch=64, threshold=0.95,
               norm="bn")
CBAFED_PROFILES = {
    "paper": dict(_CBAFED, model="resnet9", rounds=1002, cbafed_warmup=501, eval_every=1),
    "small": dict(_CBAFED, model="cnn", rounds=40, cbafed_warmup=20, eval_every=5),
    "smoke": dict(_CBAFED, model="cnn", num_clients=4, partition="dir-0.8", client_labels=10, client_batch=16,
                  rounds=3, cbafed_warmup=1, threshold=0.5, eval_every=1),
}


@dataclass(frozen=True)
class Field:
    """A config field of a method's own (Method.fields), refused for the methods that do not declare it. At its default
    it is left out of the run key, so declaring one never changes a committed run's key."""
    default: bool | int | float | str
    check: Callable | None = None   # value -> "" or what is allowed (one line); None: any value of the type
    help: str = ""                  # one line: what it is

    def problem(self, value) -> str:
        """Why value is not allowed ("" if it is): the default's type, then `check`."""
        kind = type(self.default)
        ok = isinstance(value, bool) if kind is bool else (
            isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
            isinstance(value, kind) and not isinstance(value, bool))
        if not ok:
            return ("must be "
                    f"{'a number' if kind is float else 'true or false' if kind is bool else 'an ' + kind.__name__}")
        return self.check(value) if self.check else ""


def _one_of(*allowed):
    return lambda v: "" if v in allowed else f"allowed are {', '.join(allowed)}"


@dataclass(frozen=True)
class Method:
    name: str
    label: str                      # row label in tables and figures
    round: str | Callable = ""      # "module:function" of its round (imported at run start) or the function
    labels: str = "server"          # "server" (N_S at the server, balanced per class), "all" (the server holds the
                                    # whole training set), "clients" (every client sample labeled; no server split)
    federated: bool = True          # has clients (reads the federation fields)
    unused: tuple = ()              # config fields it never reads (left out of its run key)
    fixed: dict = field(default_factory=dict)      # values the method means (set by `profile`, checked by validate)
    profiles: dict = field(default_factory=dict)   # profile name -> default values for this method in that profile
    placements: tuple = (SERVER,)   # the label placements (Config.labels_at) it is defined for
    why_not: str = ""               # why it refuses the other placements (the validation error says it)
    inputs: str = ""                # "module:function" (cfg, Dataset) -> Dataset: its own input pipeline (CBAFed's
                                    # released code's resizing); "" = the images as loaded
    split: str | Callable = ""      # "module:function" (cfg, labels, rng) -> partition.Split or None: its own split
                                    # of the training set (CBAFed's released code's)
    check: str | Callable = ""      # "module:function" (cfg) -> "" or one line: its checks across fields
    fields: dict = field(default_factory=dict)     # name -> Field: config fields of its own (docs/adding_a_method.md)
    variant_of: str = ""            # SEMIFL: a variant of SemiFL: its round is SemiFL's, every SemiFL switch applies
    client_loss: str | Callable = ""   # a SemiFL variant's "module:function" (cfg, base) -> its loss (semifl_loss.py)
    client_state: str | object = ""  # a SemiFL variant's per-client client_state.ClientState or its "module:name"
    server_state: str | object = ""  # a variant's client_state.ServerState (replaces global momentum), or "module:name"

    @property
    def family(self) -> str:
        """The method whose round and switches this one has: its variant_of, or itself."""
        return self.variant_of or self.name

    def round_function(self) -> Callable:
        return _load(self.round if not self.variant_of else METHODS[self.variant_of].round)

    def client_loss_function(self) -> Callable | None:
        return _load(self.client_loss) if self.client_loss else None

    def client_state_hooks(self):
        """Its client_state.ClientState, or None (it keeps no state per client)."""
        return _load(self.client_state) if self.client_state else None

    def server_state_hooks(self):
        """Its client_state.ServerState, or None (SemiFL's aggregation step)."""
        return _load(self.server_state) if self.server_state else None

    def prepare(self, cfg, data):
        """The images this method trains and tests on."""
        return _load(self.inputs)(cfg, data) if self.inputs else data

    def own_split(self, cfg, labels, rng):
        """Its own split of the training set (partition.Split), or None: partition.make_split's."""
        return _load(self.split)(cfg, labels, rng) if self.split else None

    def problem(self, cfg) -> str:
        """Why cfg is not a run of this method ("" if it is): a "module:name" hook of a registered method that does
        not load, the check of the method it is a variant of (SemiFL's label-skew fields), then its own."""
        return (self.name not in BUILTIN and self.unloadable()) or (
            METHODS[self.variant_of].problem(cfg) if self.variant_of else "") or (
            _load(self.check)(cfg) if self.check else "")

    def unloadable(self) -> str:
        """One line on its first "module:name" hook that does not load, or "" (checked before a run starts)."""
        for hook in HOOKS:
            where = getattr(self, hook)
            if isinstance(where, str) and where:
                try:
                    _load(where)
                except Exception as err:
                    return (f"method {self.name!r}: {hook}={where!r} does not load ({type(err).__name__}: "
                            f"{' '.join(str(err).split())}); allowed: 'module:name' of an importable module")
        return ""


HOOKS = ("round", "inputs", "split", "check", "client_loss", "client_state", "server_state")


def _load(where):
    if not isinstance(where, str):
        return where
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


# SemiFL, Section 3.1: "(x_s, y_s) denote the set of labeled data available at the server"
_SEMIFL_WHY = ("SemiFL is defined with labels at the server (its Section 3.1: (x_s, y_s) at the server, clients "
               "unlabeled); its ServerUpdate (Eq. 1) has nothing to train on when the server holds no labels")

# SemiFL's label-skew remedies (methods/skew_losses.py), each off at its default, one at a time, in the client loss
# that global pseudo-labels train: SemiFL's own fields, which its variants have too
def _within(low, high, what, open_low=False):
    return lambda v: "" if (low < v if open_low else low <= v) and v <= high else f"must be a number {what}"


SKEW_FIELDS = {
    "fedrs_alpha": Field(1.0, _within(0, 1, "in (0, 1]: the scale of the logits of the classes a client does not "
                                            "hold (1: off)", open_low=True),
                         "FedRS (Li and Zhan, KDD 2021): a class not held is < 5 % of the fix set"),
    "ntd_beta": Field(0.0, _within(0, 100, "from 0 (off) to 100: the weight of the not-true distillation term "
                                           "(FedNTD's code: 1)"), "FedNTD (Lee et al., NeurIPS 2022): its weight"),
    "ntd_tau": Field(1.0, _within(0, 100, "in (0, 100]: the temperature of its softmaxes (FedNTD's code: 1)",
                                  open_low=True), "FedNTD's temperature"),
    "vls_lambda": Field(0.0, _within(0, 100, "from 0 (off) to 100: the weight of the vacant-class distillation "
                                             "term (FedVLS: 0.1)"),
                        "FedVLS (Guo et al., AAAI 2025): vacant is no pseudo-label in the fix set"),
    "vls_variant": Field("term", _one_of("term", "released"), "term: the vacant-class term alone | released: "
                         "FedVLS's released client loss (prior-corrected CE, LADE, the KL on every image)"),
    "frozen_head": Field(False, None, "FedBABU (Oh et al., ICLR 2022): the clients do not train the classifier"),
}


def _skew_check(cfg) -> str:
    """The remedies across fields: on only where global pseudo-labels train the client loss, one at a time."""
    on = [n for n, v in (("fedrs_alpha", cfg.fedrs_alpha != 1), ("ntd_beta", cfg.ntd_beta > 0),
                         ("vls_lambda", cfg.vls_lambda > 0), ("frozen_head", cfg.frozen_head)) if v]
    if on and not cfg.global_pseudo_labels:
        return (f"{on[0]}={getattr(cfg, on[0])!r}: changes SemiFL's client loss on global pseudo-labels, which "
                "global_pseudo_labels=false does not train; leave it off")
    if len(on) > 1:
        return (f"{on[-1]}={getattr(cfg, on[-1])!r}: and {' and '.join(on[:-1])} are remedies for one effect, and "
                "together they are not defined: run them apart (fedrs_alpha=1, ntd_beta=0, vls_lambda=0 and "
                "frozen_head=false are off)")
    if cfg.ntd_tau != 1 and cfg.ntd_beta == 0:
        return f"ntd_tau={cfg.ntd_tau!r}: sets the temperature of FedNTD, which is off (ntd_beta=0): leave it at 1"
    if cfg.vls_variant != "term" and cfg.vls_lambda == 0:
        return (f"vls_variant={cfg.vls_variant!r}: chooses how FedVLS runs, which is off (vls_lambda=0): set "
                "vls_lambda > 0 (FedVLS: 0.1) or leave vls_variant at 'term'")
    return ""


_CBAFED_WHY = ("CBAFed's warm-up trains the labeled client and its server weighs it by |D_L|: it needs the labels on "
               "one client among unlabeled ones (its setting)")


# CBAFed's own fields, one Field each that all its rows share (the bounds and FedAvg + FixMatch on its schedule)
CBAFED_FIELDS = {
    "cbafed_warmup": Field(0, None, "W: the first W rounds train the labeled client alone (its paper: 501)"),
    "cbafed_variant": Field("paper", _one_of("paper", "code"), "paper: its paper's rules | code: what its released "
                            "code runs (residual timing, input pipeline)"),
    "cbafed_labeled": Field("balanced", _one_of("balanced", "dirichlet"), "client 0's labeled set: balanced "
                            "(client_labels of each class) | dirichlet (its share of one draw, as its code splits)"),
}
_CBAFED_ROW = dict(profiles=CBAFED_PROFILES, placements=(ONE_CLIENT,), why_not=_CBAFED_WHY,
                   split="semifl_core.methods.cbafed:code_split", check="semifl_core.methods.cbafed:check")

METHODS: dict[str, Method] = {m.name: m for m in (
    Method(SEMIFL, "SemiFL", "semifl_core.methods.semifl:semifl_round", why_not=_SEMIFL_WHY, fields=SKEW_FIELDS,
           check=_skew_check),
    Method(FEDAVG_FIXMATCH, "FedAvg + FixMatch", "semifl_core.methods.baselines:fedavg_fixmatch_round",
           fixed=dict(finetune=False, global_pseudo_labels=False, mix_loss=False)),
    Method(PARTIALLY_SUPERVISED, "Partially Supervised", "semifl_core.methods.baselines:supervised_round",
           federated=False, unused=FEDERATION_FIELDS),
    # the whole training set centrally, one epoch a round with Table 4's batch of 10 (`small`: the clients' batch, so
    # sample-epochs compare: docs/profiles.md); evaluated every 5 epochs: sBN over 60,000 images is costly
    Method(FULLY_SUPERVISED, "Fully Supervised", "semifl_core.methods.baselines:supervised_round", labels="all",
           federated=False, unused=(*FEDERATION_FIELDS, "num_supervised"),
           profiles={"paper": dict(server_batch=250), "smoke": dict(server_epochs=1.0),
                     "small": dict(server_batch=10, server_epochs=1.0, rounds=10, eval_every=5)}),
    # the SemiFL paper's "HeteroFL" row of Table 1: FedAvg with every client sample labeled
    Method(FEDAVG_SUPERVISED, "FedAvg supervised (HeteroFL)",
           "semifl_core.methods.baselines:fedavg_supervised_round", labels="clients"),
    # SemiFL's round with (FL)^2's CAT, SACR and LSAA (no mixup), its Table 4's client batch of 32: methods/fl2.py
    Method(FL2, "(FL)²", "semifl_core.methods.fl2:fl2_round",
           fixed=dict(pseudo_label_rule="client-adaptive", mix_loss=False),
           fields={"sam_rho": Field(0.1, lambda r: "" if r > 0 else "must be > 0 (the radius of the perturbation)",
                                    "rho of its sharpness-aware consistency (Eq. 12; its Table 4: 0.1)"),
                   "fl2_variant": Field("paper", _one_of("paper", "code"),
                                        "paper: SAM's perturbation (Eq. 12) | code: ASAM, as its released code runs")},
           profiles={"paper": dict(client_batch=32), "small": dict(client_batch=32)}),
    # centralized, every client image pooled as unlabeled; the federation's fields only size its rounds (fixmatch.py)
    Method(FIXMATCH, "FixMatch (centralized)", "semifl_core.methods.fixmatch:fixmatch_round",
           unused=("partition", "mixup_alpha", "mix_loss", "global_pseudo_labels", "client_momentum", "finetune",
                   "global_momentum", "round_order", "server_epochs", "mix_draws")),
    # FedDure (AAAI 2024) and the baselines of its Table 1, all with FedDure's local recipe (Adam, one epoch over the
    # labeled part, FedAvg weighted by data size): methods/feddure.py, methods/feddure_baselines.py
    Method(FEDDURE, "FedDure", "semifl_core.methods.feddure:feddure_round", unused=SEMIFL_ONLY_FIELDS,
           fields={"feddure_variant": Field("paper", _one_of("paper", "code"), "paper: FedDure's Eq. (2)-(10) | "
                                            "code: what its released code runs (MPL)")},
           profiles=FEDDURE_PROFILES, placements=(CLIENTS,),
           why_not="C-reg's reward (Eq. 3) and F-reg's update (Eq. 5) need labeled data at every trained client"),
    Method(FEDAVG_LABELED, "FedAvg* (labeled only)", "semifl_core.methods.feddure_baselines:fedavg_labeled_round",
           unused=SEMIFL_ONLY_FIELDS + ("threshold",), profiles=FEDDURE_PROFILES,
           placements=(CLIENTS, ONE_CLIENT)),
    Method(FEDAVG_FIXMATCH_CLIENTS, "FedAvg + FixMatch (client labels)",
           "semifl_core.methods.feddure_baselines:fedavg_fixmatch_clients_round",
           unused=SEMIFL_ONLY_FIELDS, profiles=FEDDURE_PROFILES,
           placements=(CLIENTS, ONE_CLIENT)),
    Method(FEDAVG_SL, "FedAvg-SL (all labeled)", "semifl_core.methods.feddure_baselines:fedavg_sl_round",
           unused=SEMIFL_ONLY_FIELDS + ("threshold",), profiles=FEDDURE_PROFILES,
           placements=(CLIENTS, ONE_CLIENT)),
    # CBAFed (CVPR 2023) and the rows of its Table 1, on its schedule (warm-up, epochs, residuals): methods/cbafed.py
    Method(CBAFED, "CBAFed", "semifl_core.methods.cbafed:cbafed_round", unused=CBAFED_UNUSED, **_CBAFED_ROW,
           fields=CBAFED_FIELDS, inputs="semifl_core.methods.cbafed:code_inputs"),
    # the bounds read cbafed_variant too: its "code" changes their residual timing and input pipeline
    Method(CBAFED_LOWER, "Lower bound (labeled client alone)", "semifl_core.methods.cbafed:labeled_only_round",
           unused=CBAFED_UNUSED + ("threshold",), **_CBAFED_ROW, fields=CBAFED_FIELDS,
           inputs="semifl_core.methods.cbafed:code_inputs"),
    Method(CBAFED_UPPER, "Upper bound (FedAvg, all labeled)", "semifl_core.methods.cbafed:all_labeled_round",
           unused=CBAFED_UNUSED + ("threshold",), **_CBAFED_ROW, fields=CBAFED_FIELDS,
           inputs="semifl_core.methods.cbafed:code_inputs"),
    Method(CBAFED_FIXMATCH, "FedAvg + FixMatch (CBAFed's schedule)", "semifl_core.methods.cbafed:fixmatch_round",
           unused=CBAFED_UNUSED, **_CBAFED_ROW,
           fields={k: f for k, f in CBAFED_FIELDS.items() if k != "cbafed_variant"}),
)}


BUILTIN = frozenset(METHODS)   # the package's own methods (their hooks load: the tests run each)


def register(method: Method) -> Method:
    """Add a method to the table; refused: a name already there, or a field name another method or Config has."""
    from ..errors import ConfigError
    if method.name in METHODS:
        raise ConfigError(f"method {method.name!r} is already registered; pick another name")
    if method.variant_of and method.variant_of not in METHODS:
        raise ConfigError(f"method {method.name!r}: variant_of={method.variant_of!r} is not a registered method; "
                          f"registered: {', '.join(METHODS)}")
    if not method.variant_of and not method.round:
        raise ConfigError(f"method {method.name!r}: no round; allowed: round='module:function' (or the function) of "
                          f"its round, or variant_of={SEMIFL!r} with a client_loss (docs/adding_a_method.md)")
    if method.variant_of == SEMIFL and not (method.client_loss or method.client_state or method.server_state
                                            or method.fields or method.fixed):
        raise ConfigError(f"method {method.name!r}: a variant of {SEMIFL!r} that changes nothing (no client_loss, "
                          "client_state, server_state, fields or fixed values) would run plain SemiFL under a new "
                          "name; allowed: give it at least one of them")
    for hook in ("client_state", "server_state"):
        if getattr(method, hook) and method.variant_of != SEMIFL:
            raise ConfigError(f"method {method.name!r}: {hook} is for a variant of SemiFL (variant_of={SEMIFL!r}); "
                              "a method with its own round keeps its state in state.method")
    for name in method.fields:   # a field another method declares is refused, unless it is that very Field (shared)
        owner = next((m.name for m in METHODS.values() if m.fields.get(name, method.fields[name])
                      is not method.fields[name]), None)
        if owner or name in CORE_FIELDS:
            raise ConfigError(f"method {method.name!r}: field {name!r} is already "
                              + (f"{owner}'s" if owner else "a field of Config") + "; name yours otherwise")
    for name, f in method.fields.items():
        if not isinstance(f, Field):
            raise ConfigError(f"method {method.name!r}: field {name!r}: {f!r} is not a Field; allowed: "
                              "Field(default, check, help)")
        if why := f.problem(f.default):
            raise ConfigError(f"method {method.name!r}: field {name!r}: its default {f.default!r} fails its own "
                              f"check ({why})")
    METHODS[method.name] = method
    return method


def fields_of(name: str) -> dict:
    """The config fields a method declares (Method.fields), with those of the method it is a variant of."""
    m = METHODS[name]
    return {**(fields_of(m.variant_of) if m.variant_of else {}), **m.fields}


CORE_FIELDS: set = set()   # Config's own field names (config.py fills it: register refuses them as a method's)


def load_plugins(names: str | None = None) -> None:
    """Import the SEMIFL_METHODS modules (comma-separated; each registers its methods on import), in every process;
    one that fails is one line naming it."""
    import os
    for name in filter(None, (n.strip() for n in (names if names is not None else
                                                   os.environ.get("SEMIFL_METHODS", "")).split(","))):
        from ..errors import ConfigError
        try:
            importlib.import_module(name)
        except ConfigError as err:   # a registration mistake: register names the method and the field
            raise ConfigError(f"SEMIFL_METHODS: module {name!r}: {err}") from None
        except Exception as err:     # not importable, or it fails while importing: its error's last line
            last = " ".join(f"{type(err).__name__}: {err}".split())
            raise ConfigError(f"SEMIFL_METHODS: cannot import {name!r} ({last}); allowed: importable module names, "
                              "comma-separated (on PYTHONPATH)") from None


PLUGIN_ERROR: str | None = None   # why SEMIFL_METHODS failed at import, said when a command or a config needs it


def check_plugins() -> None:
    """Raise the ConfigError of a SEMIFL_METHODS module that failed at import (kept so that `semifl --help` loads)."""
    if PLUGIN_ERROR is not None:
        from ..errors import ConfigError
        raise ConfigError(PLUGIN_ERROR)


def refuse_core_clashes() -> None:
    """Once config.py has filled CORE_FIELDS: refuse, as register does, an earlier method with a field of Config's."""
    global PLUGIN_ERROR
    for m in list(METHODS.values()):
        clash = [f for f in m.fields if f in CORE_FIELDS]
        if clash:
            del METHODS[m.name]
            PLUGIN_ERROR = PLUGIN_ERROR or (f"SEMIFL_METHODS: method {m.name!r}: field {clash[0]!r} is already a "
                                            "field of Config; name yours otherwise")


try:
    load_plugins()
except ValueError as _err:   # ConfigError
    PLUGIN_ERROR = str(_err)
