"""One config object for every run, validated once, with the paper's values as named profiles.

Every switch that a table of the paper ablates is a field here:

=====================  ===============================================================================================
field                  paper item
=====================  ===============================================================================================
finetune               Table 2 "Fine-tune global model with labeled data" (False = "parallel": server trains beside
                       the clients and gets weight 1/2 in the average)
global_pseudo_labels   Table 2 "Generate pseudo-labels with global model" (False: every batch by the training model)
mix_loss               Table 5 Mixup
sbn_source             Table 3 sBN statistics ("server" or "all")
local_epochs           Table 5 E (fractional = that fraction of an epoch)
global_momentum        Table 5 beta_g
partition              Table 1 columns (iid, non-iid-l-K, dir-ALPHA)
round_order            Algorithm 1 ("paper": fine-tune first, once more after the last round) vs the authors' code
                       ("code": fine-tune at the end of each round)
labels_at              where the labels are: server (SemiFL), clients (FedDure: client_labels per class at every
                       client, spread by labeled_partition), one-client
labeled_partition      FedDure's Table 1 columns: (labeled_partition, partition) = (IID,IID), (IID,DIR), (DIR,DIR)
pseudo_label_rule      which global pseudo-labels enter the fix set: Eq. (3)'s fixed tau, class-balanced (CBAFed),
                       aligned (ReMixMatch), client-adaptive ((FL)^2), global-adaptive (FreeMatch, the round's clients)
precision              fp32, or bf16: training in bfloat16 autocast (fp32 master weights)
rng_streams            where a round's randomness comes from: one stream for the round ("round") or one per client
                       ("client"), which a client drawing in its own process (the Flower app) can reproduce
=====================  ===============================================================================================
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import re
from dataclasses import dataclass, fields

from .errors import ConfigError  # noqa: F401  (defined at the bottom, so that engine can raise it too)
from .methods import (CORE_FIELDS, FEDAVG_FIXMATCH, FL2, METHODS,
                      ONE_CLIENT, PLACEMENTS, SEMIFL, SERVER, check_plugins, fields_of, refuse_core_clashes)
from .methods.pseudo_labels import ALL_RULES as PSEUDO_LABEL_RULES

DATASETS = ("cifar10", "cifar100", "svhn", "fashionmnist", "mnist", "synthetic")
NUM_CLASSES = {"cifar10": 10, "cifar100": 100, "svhn": 10, "fashionmnist": 10, "mnist": 10, "synthetic": 10}
TRAIN_SIZE = {"cifar10": 50000, "cifar100": 50000, "svhn": 73257, "fashionmnist": 60000, "mnist": 60000,
              "synthetic": 2000}
# samples of the rarest class in each training set (SVHN: digit 9, MNIST: digit 5): bounds the partitions
SMALLEST_CLASS = {"cifar10": 5000, "cifar100": 500, "svhn": 4659, "fashionmnist": 6000, "mnist": 5421, "synthetic": 200}
MODELS = ("wrn28x2", "wrn28x8", "cnn", "cnn-w2", "resnet9")
NORMS = ("sbn", "gn", "bn")
ENGINES = ("auto", "vectorized", "sequential")
STRONG_AUGS = ("semifl", "fixmatch")
PROFILES = ("paper", "small", "long", "smoke")
CLIENT_STREAM_METHODS = (SEMIFL, FEDAVG_FIXMATCH)   # their round is semifl_round, which draws per-client streams


# float32's largest value: a float field above it overflows (torch refuses to convert it); below it, a value that
# overflows in training is reported as divergence (run.keep_round)
FLOAT32_MAX = 3.4028234663852886e38
# The most samples a round's batch plan (tasks.make_tasks: steps x batch indices, all gathered and augmented before
# training) may hold: 16 GiB of int64 indices, 1.5 TiB of images even at synthetic's 768 bytes; no machine holds that.
PLAN_LIMIT = 2 ** 31
IMAGE_SHAPE = {"cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "svhn": (3, 32, 32), "fashionmnist": (1, 28, 28),
               "mnist": (1, 28, 28), "synthetic": (3, 16, 16)}
IMAGE_BYTES = {name: math.prod(shape) for name, shape in IMAGE_SHAPE.items()}   # uint8 pixels


def _size(nbytes: float) -> str:
    """A byte count as people read it: 3.2 GiB, 14 TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024:
            break
        nbytes /= 1024
    return f"{nbytes:.3g} {unit}"


@dataclass(frozen=True)
class Config:
    # what runs
    algorithm: str = SEMIFL              # a name in methods.METHODS
    dataset: str = "fashionmnist"
    num_supervised: int = 250            # N_S, labeled images at the server, balanced per class
    model: str = "cnn"
    norm: str = "sbn"                    # sbn (static BN, the paper's), gn (GroupNorm), bn (plain BN)
    seed: int = 0
    split_seed: int = -1                 # seed of the data split (labeled set, client shares); -1: the run's seed
    # federation
    num_clients: int = 100               # M
    active_rate: float = 0.1             # C
    partition: str = "iid"               # iid | non-iid-l-K | dir-ALPHA
    rounds: int = 800                    # T
    # client (unlabeled) training
    local_epochs: float = 5.0            # E; fractional = that fraction of one epoch
    client_batch: int = 10
    threshold: float = 0.95              # tau
    mixup_alpha: float = 0.75            # a, lambda ~ Beta(a, a)
    mix_loss: bool = True
    global_pseudo_labels: bool = True
    pseudo_label_rule: str = "fixed"     # fixed (Eq. 3) | the rules of methods/pseudo_labels.py
    client_momentum: str = "keep"        # keep: each client keeps its SGD momentum (authors' quirk) | reset
    # server (labeled) training
    finetune: bool = True
    server_momentum: str = "keep"        # keep: the server keeps its SGD momentum across rounds (authors') | reset
    server_batch: int = 10
    server_epochs: float = 5.0
    # optimisation, shared by server and clients
    lr: float = 0.03
    momentum: float = 0.9
    weight_decay: float = 5e-4
    nesterov: bool = True
    clip_norm: float = 1.0
    global_momentum: float = 0.5         # beta_g, server SGD (lr 1) on the pseudo-gradient
    # static batch norm
    sbn_source: str = "all"              # all: server + every client's data (authors') | server
    round_order: str = "code"            # code: fine-tune at the end of a round (authors') | paper: Algorithm 1
    # augmentation
    strong_aug: str = "semifl"           # semifl: the authors' RandAugment variant | fixmatch
    # three details where the authors' code runs otherwise than ours (docs/authors_implementation.md); ours are the
    # defaults: Eq. (4)'s mix set is a set drawn once a round, and the paper names neither image detail
    mix_draws: str = "set"               # set: |fix| draws a round, reused every epoch | per-read: a draw per read
    shear_resample: str = "nearest"      # ShearX/Y resampling: nearest (PIL's default) | bilinear (the authors')
    cutout_size: str = "scaled"          # CutoutConst's 40 px: scaled with the image (35 px at 28x28) | fixed
    # measurement
    eval_every: int = 1
    diagnostics: bool = False            # also evaluate each client model, the average, the aggregate (run.py)
    # label placement (SemiFL: the server's N_S; FedDure: a few per class at every client)
    labels_at: str = SERVER              # server | clients | one-client (methods.PLACEMENTS)
    client_labels: int = 5               # images per class per labeled client (one-client: client 0); FedDure's 5
    labeled_partition: str = "iid"       # iid: client_labels per class each | dir-ALPHA: a Dirichlet(ALPHA) split
    rng_streams: str = "round"           # round: (seed, r) | client: (seed, r, c): equal in distribution, not in value
    # arithmetic (changes results: in the run key)
    precision: str = "fp32"              # fp32 | bf16: bfloat16 autocast, fp32 weights, gradients and loss
                                         # (BENCHMARKS.md, "CPU switch rules")
    # execution (does not change results)
    engine: str = "auto"                 # auto: vectorized on a GPU, sequential on a CPU (faster there, BENCHMARKS.md)
    # the fields the method declares for itself (methods.Field), as sorted (name, value) pairs: read them as
    # attributes (cfg.prox_mu), set them as any field; to_dict lists them beside the others
    method_fields: tuple = ()

    def __getattr__(self, name: str):
        for key, value in self.__dict__.get("method_fields", ()):
            if key == name:
                return value
        declared = fields_of(self.__dict__["algorithm"]) if self.__dict__.get("algorithm") in METHODS else {}
        if name in declared:   # built without Config.build (Config(...)): the method's default
            return declared[name].default
        raise AttributeError(f"Config has no field {name!r}")

    # ------------------------------------------------------------------ derived
    @property
    def num_classes(self) -> int:
        return NUM_CLASSES[self.dataset]

    @property
    def num_active(self) -> int:
        return max(math.floor(self.active_rate * self.num_clients), 1)

    @property
    def method(self):
        """The algorithm's entry in the method table (methods.METHODS)."""
        return METHODS[self.algorithm]

    @property
    def federated(self) -> bool:
        return self.method.federated

    @property
    def partition_kind(self) -> tuple[str, float]:
        """('iid', 0) | ('non-iid-l', K) | ('dir', alpha): how the clients' unlabeled data is spread."""
        return partition_kind("partition", self.partition)

    @property
    def labeled_partition_kind(self) -> tuple[str, float]:
        """('iid', 0) | ('dir', alpha): how the clients' labeled data is spread (labels_at=clients)."""
        return partition_kind("labeled_partition", self.labeled_partition, label_shards=False)

    def resolved_engine(self, device_type: str) -> str:
        """The engine that runs on a device of this type: on a CPU the sequential engine is faster (BENCHMARKS.md)."""
        if self.engine != "auto":
            return self.engine
        return "vectorized" if device_type == "cuda" and self.norm != "bn" else "sequential"

    # ------------------------------------------------------------------ validation
    def validate(self) -> "Config":
        check_plugins()   # a SEMIFL_METHODS module that failed to load: say so, not "not a registered method"

        def bad(name, allowed):
            raise ConfigError(f"{name}={getattr(self, name)!r}: {allowed}")

        for name, choices in (("algorithm", tuple(METHODS)), ("dataset", DATASETS), ("model", MODELS),
                              ("norm", NORMS), ("engine", ENGINES), ("strong_aug", STRONG_AUGS),
                              ("sbn_source", ("all", "server")), ("client_momentum", ("keep", "reset")),
                              ("server_momentum", ("keep", "reset")),
                              ("round_order", ("code", "paper")), ("rng_streams", ("round", "client")),
                              ("mix_draws", ("set", "per-read")), ("shear_resample", ("nearest", "bilinear")),
                              ("cutout_size", ("scaled", "fixed")),
                              ("precision", ("fp32", "bf16"))):
            if getattr(self, name) not in choices:
                close = difflib.get_close_matches(str(getattr(self, name)), choices, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                if name == "algorithm":   # a method of one's own is registered by a module SEMIFL_METHODS names
                    hint += ("; a method of your own: name its module in SEMIFL_METHODS "
                             "(docs/adding_a_method.md)")
                bad(name, f"allowed are {', '.join(choices)}{hint}")
        for name in ("num_supervised", "num_clients", "rounds", "client_batch", "server_batch", "eval_every"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool) \
                    or getattr(self, name) < 1:
                bad(name, "must be an integer >= 1")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2 ** 32:
            bad("seed", "must be an integer from 0 to 2**32 - 1")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "float" and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
                bad(f.name, "must be a finite number")
            if f.type == "float" and abs(v) > FLOAT32_MAX:   # torch raises "cannot be converted ... without overflow"
                bad(f.name, f"must be at most {FLOAT32_MAX:.4g} in magnitude, float32's largest value (training "
                            "computes in float32: it would overflow to inf)")
            if f.type == "bool" and not isinstance(v, bool):
                bad(f.name, "must be true or false")
            if f.type == "float" and type(v) is int:   # lr=1 is lr=1.0: one key, one run
                object.__setattr__(self, f.name, float(v))
        if not isinstance(self.partition, str):
            bad("partition", "allowed are 'iid', 'non-iid-l-K' (K an integer), 'dir-ALPHA'")
        if not isinstance(self.labeled_partition, str):
            bad("labeled_partition", "allowed are 'iid', 'dir-ALPHA'")
        if self.labels_at not in PLACEMENTS:
            bad("labels_at", f"allowed are {', '.join(PLACEMENTS)}")
        declared = fields_of(self.algorithm)
        for name, value in self.method_fields:
            if name not in declared:
                bad("method_fields", f"{name} is not a field of {self.algorithm} (it declares "
                                     f"{', '.join(sorted(declared)) or 'none'})")
            if why := declared[name].problem(value):
                raise ConfigError(f"{name}={value!r}: {why} ({self.algorithm}'s own field: {declared[name].help})")
        as_float = lambda k, v: float(v) if type(v) is int and type(declared[k].default) is float else v  # noqa: E731
        object.__setattr__(self, "method_fields", tuple((k, as_float(k, v)) for k, v in self.method_fields))
        if why := self.method.problem(self):   # the method's own checks across fields (Method.check)
            raise ConfigError(why)
        if self.rng_streams == "client" and self.method.family not in CLIENT_STREAM_METHODS:
            bad("rng_streams", f"'client' streams are drawn by {' and '.join(CLIENT_STREAM_METHODS)} only (the "
                               f"methods the Flower app runs); {self.algorithm} draws one stream per round")
        if self.pseudo_label_rule not in PSEUDO_LABEL_RULES:
            close = difflib.get_close_matches(str(self.pseudo_label_rule), PSEUDO_LABEL_RULES, n=1)
            bad("pseudo_label_rule", f"allowed are {', '.join(PSEUDO_LABEL_RULES)}"
                                     + (f" (did you mean {close[0]!r}?)" if close else ""))
        if self.pseudo_label_rule != "fixed":
            if self.method.family not in (SEMIFL, FL2) or not self.global_pseudo_labels:
                bad("pseudo_label_rule", f"selects the global model's pseudo-labels, which only {SEMIFL} (and {FL2}) "
                                         f"with global_pseudo_labels=true makes ({self.algorithm}"
                                         f"{'' if self.global_pseudo_labels else ', global_pseudo_labels=false'} "
                                         "has none); use 'fixed'")
            if self.rng_streams != "round":
                bad("pseudo_label_rule", "the rules other than 'fixed' read every active client's labels at once "
                                         "(rng_streams='round'); the Flower app runs 'fixed'")
            if not 0 < self.threshold <= 1:
                bad("threshold", f"must be in (0, 1] with pseudo_label_rule={self.pseudo_label_rule!r} (tau is "
                                 "its fixed threshold or its upper bound)")
        if self.labels_at not in self.method.placements:
            bad("labels_at", f"{self.algorithm} runs with labels at {' or '.join(self.method.placements)} only"
                             + (f": {self.method.why_not}" if self.method.why_not else ""))
        if isinstance(self.client_labels, bool) or not isinstance(self.client_labels, int) or self.client_labels < 1:
            bad("client_labels", "must be an integer >= 1")
        lkind, lvalue = self.labeled_partition_kind
        if lkind == "dir" and not lvalue > 0:
            bad("labeled_partition", "Dirichlet alpha must be > 0")
        if not isinstance(self.split_seed, int) or isinstance(self.split_seed, bool) \
                or not -1 <= self.split_seed < 2 ** 32:
            bad("split_seed", "must be an integer from 0 to 2**32 - 1, or -1 for the run's seed")
        kind, value = self.partition_kind
        n_train = TRAIN_SIZE[self.dataset]
        if self.num_supervised % self.num_classes:
            bad("num_supervised", f"must be a multiple of the number of classes ({self.num_classes})")
        if self.num_supervised > n_train:
            bad("num_supervised", f"must be at most the training set size ({n_train})")
        # the server takes N_S / classes samples of every class (partition.split_server), even the rarest one
        per_class, rarest = self.num_supervised // self.num_classes, SMALLEST_CLASS[self.dataset]
        if self.labels_at != SERVER:   # the clients' labeled pool: client_labels per class per labeled client
            per_class = self.client_labels * (1 if self.labels_at == ONE_CLIENT else self.num_clients)
            if per_class >= rarest:
                bad("client_labels", f"client_labels x labeled clients = {per_class} images of each class, but the "
                                     f"rarest class of {self.dataset} has {rarest} (and the clients need unlabeled "
                                     "ones too)")
            if self.labeled_partition_kind[0] == "dir" and per_class * self.num_classes < 10 * self.num_clients:
                bad("labeled_partition", f"the Dirichlet split gives every client >= 10 labeled images, so it "
                                         f"needs client_labels x classes >= 10 (client_labels={self.client_labels})")
        if self.labels_at == SERVER and self.method.labels == "server" and per_class > rarest:
            bad("num_supervised", f"takes {per_class} samples per class, but the rarest class of {self.dataset} has "
                                  f"{rarest}: at most {rarest * self.num_classes}")
        if not 0 < self.active_rate <= 1:
            bad("active_rate", "must be in (0, 1]")
        if self.federated and self.num_clients > n_train - self.num_supervised:
            bad("num_clients", f"must be at most the number of client samples ({n_train - self.num_supervised})")
        if kind == "non-iid-l":
            if not 1 <= value <= self.num_classes:
                bad("partition", f"K must be between 1 and the number of classes ({self.num_classes})")
            # one-client: client 0 holds only the labels, the pool is shared by the other num_clients - 1
            m = self.num_clients - (self.labels_at == ONE_CLIENT)
            if (value * m) % self.num_classes:
                bad("partition", f"K * {'(num_clients - 1)' if m < self.num_clients else 'num_clients'} must be a "
                                 f"multiple of the number of classes ({self.num_classes})")
            # partition.non_iid_label cuts each class's client samples into K * M / classes shards: none may be empty
            shards = value * m // self.num_classes
            pool = rarest - (per_class if self.method.labels == "server" else 0)
            if self.federated and shards > pool:
                bad("partition", f"cuts each class into K * num_clients / {self.num_classes} = {shards} shards, but "
                                 f"the rarest class has {pool} client samples: shards would be empty and a client "
                                 f"could get no data; lower K or num_clients (K * num_clients <= "
                                 f"{pool * self.num_classes})")
        if kind == "dir" and not value > 0:
            bad("partition", "Dirichlet alpha must be > 0")
        if kind == "dir" and self.federated and 10 * self.num_clients > n_train - self.num_supervised:
            bad("partition", f"the Dirichlet split gives every client >= 10 samples, so it needs num_clients <= "
                             f"{(n_train - self.num_supervised) // 10} here (num_clients={self.num_clients})")
        if not 0 <= self.threshold <= 1:
            bad("threshold", "must be in [0, 1]")
        for name in ("local_epochs", "server_epochs", "mixup_alpha"):
            if not getattr(self, name) > 0:
                bad(name, "must be > 0")
        for name in ("lr", "weight_decay", "momentum", "global_momentum", "clip_norm"):
            if getattr(self, name) < 0:
                bad(name, "must be >= 0")
        for name in ("momentum", "global_momentum"):
            if getattr(self, name) >= 1:
                bad(name, "must be < 1")
        self._check_batches(bad, n_train)
        if self.engine == "vectorized" and self.norm == "bn":
            bad("engine", "the vectorized engine needs norm 'sbn' or 'gn' (plain BN keeps running buffers); "
                          "use engine=sequential")
        fixed = self.method.fixed
        if any(getattr(self, k) != v for k, v in fixed.items()):
            bad("algorithm", f"{self.algorithm} means {', '.join(f'{k}={v}' for k, v in fixed.items())}; "
                             f"build it with profile(..., algorithm={self.algorithm!r})")
        return self

    def _check_batches(self, bad, n_train: int) -> None:
        """Batches and batch plans of absurd size. A batch larger than its data is one batch of all of it, padded
        (tasks.epoch_batches; the padding is augmented too), as the authors' loaders give one batch of all of it. The
        server's batch is refused above its labeled set; the clients' above all their samples together (no client,
        nor FixMatch's pooled set, holds more), as a share depends on the partition and a profile's batch may exceed a
        small dataset's shares (FL2's 32 on synthetic). A round's batch plan is refused above PLAN_LIMIT samples."""
        has_server = self.labels_at == SERVER and self.method.labels != "clients"
        # the clients' data: every sample but the server's N_S (all of them when the server holds none)
        pool = n_train - (self.num_supervised if has_server and self.method.labels == "server" else 0)
        if self.reads("client_batch") and self.client_batch > pool:
            bad("client_batch", f"larger than the data it draws from: at most {pool}, all the clients' samples "
                                "together; a larger batch is one batch of all of them, padded")
        if has_server and self.reads("server_batch"):
            labeled = n_train if self.method.labels == "all" else self.num_supervised
            if self.server_batch > labeled:
                bad("server_batch", f"larger than the server's labeled set: at most {labeled} ("
                                    + ("the whole training set" if self.method.labels == "all" else "num_supervised")
                                    + "); a larger batch is one batch of all of it, padded")
        plans = []   # (epochs field, the data size of one plan, its batch, plans a round, who has them)
        if self.reads("local_epochs"):   # num_active plans over the mean client share (tasks.make_tasks)
            plans.append(("local_epochs", max(1, pool // self.num_clients), self.client_batch, self.num_active,
                          f"{self.num_active} active clients x "))
        if has_server and self.reads("server_epochs"):
            plans.append(("server_epochs", n_train if self.method.labels == "all" else self.num_supervised,
                          self.server_batch, 1, ""))
        for name, n, batch, count, who in plans:
            per_epoch = math.ceil(n / batch)   # tasks.epoch_batches' steps
            steps = max(1, math.ceil(round(getattr(self, name) * per_epoch, 9)))
            samples = count * steps * batch
            if samples > PLAN_LIMIT:
                most = PLAN_LIMIT // (count * batch) / per_epoch
                bad(name, f"a round's batch plan would hold {samples:.3g} samples ({who}{steps:.3g} steps x batch "
                          f"{batch}), {_size(8 * samples)} of indices and {_size(IMAGE_BYTES[self.dataset] * samples)} "
                          f"of images: at most 2**31 samples a round ({name} <= {most:.3g} here)")

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "method_fields"}
        return {**out, **dict(self.method_fields)}

    @classmethod
    def build(cls, values: dict) -> "Config":
        """A Config from field values (Config's and its method's own, flat, as to_dict gives them), not validated:
        a method's declared fields it does not set get their defaults; a name no method declares is refused."""
        core = {k: v for k, v in values.items() if k in CORE_FIELDS}
        algorithm = core.get("algorithm", SEMIFL)
        declared = fields_of(algorithm) if algorithm in METHODS else {}
        # a field that was Config's before its method declared it: a stored config holds it, at its default
        extra = {k: v for k, v in values.items() if k not in CORE_FIELDS
                 and not (k not in declared and k in LATER_FIELDS and v == LATER_FIELDS[k])}
        for name in extra:
            if name not in declared:
                owners = [m for m in METHODS if name in METHODS[m].fields]
                if owners:
                    raise ConfigError(f"{name}={extra[name]!r}: a field of {', '.join(owners)}; {algorithm} declares "
                                      + (f"{', '.join(sorted(declared))}" if declared else "no fields of its own"))
                close = difflib.get_close_matches(name, [*CORE_FIELDS, *declared], n=1)
                raise ConfigError(f"unknown config field {name!r}"
                                  + (f" (did you mean {close[0]!r}?)" if close else ""))
        options = {name: f.default for name, f in declared.items()}
        options.update(extra)
        return cls(**core, method_fields=tuple(sorted(options.items())))

    @classmethod
    def from_dict(cls, values: dict) -> "Config":
        """A stored config (to_dict) back, validated."""
        return cls.build(values).validate()

    def key(self) -> str:
        return run_key(self.to_dict())

    def reads(self, name: str) -> bool:
        """Whether this config's algorithm reads field `name` (the centralized baselines ignore the federation)."""
        return name not in self.method.unused

    def replace(self, **changes) -> "Config":
        if "algorithm" not in changes and all(k in CORE_FIELDS for k in changes):
            return dataclasses.replace(self, **changes).validate()
        values = {**self.to_dict(), **changes}
        if changes.get("algorithm", self.algorithm) != self.algorithm:   # the old method's own fields leave with it
            values = {k: v for k, v in values.items() if k in CORE_FIELDS or k in changes}
        return Config.build(values).validate()


# Fields that change how a run executes, not the algorithm (left out of the run key, like the device: the numbers
# differ only by float rounding, amplified by training to seed-noise level; see BENCHMARKS.md).
EXECUTION_FIELDS = ("engine",)
# Switches added after runs were committed, with the value that reproduces the behaviour before them: at that value
# they are left out of the run key (a stored config without them has it), so a new switch never orphans committed runs.
LATER_FIELDS = {"round_order": "code", "diagnostics": False, "server_momentum": "keep", "split_seed": -1,
                "labels_at": SERVER, "client_labels": 5, "labeled_partition": "iid", "feddure_variant": "paper",
                "rng_streams": "round", "pseudo_label_rule": "fixed", "mix_draws": "set", "shear_resample": "nearest",
                "cutout_size": "scaled", "sam_rho": 0.1, "fl2_variant": "paper", "cbafed_warmup": 0,
                "cbafed_variant": "paper", "cbafed_labeled": "balanced", "fedrs_alpha": 1.0, "ntd_beta": 0.0,
                "ntd_tau": 1.0, "vls_lambda": 0.0, "vls_variant": "term", "frozen_head": False,
                "precision": "fp32"}


def run_key(config: dict) -> str:
    """Hash of `result_fields`, not of the package version (a release must not orphan every run; config.json records
    the version that trained a run)."""
    return hashlib.sha256(json.dumps(result_fields(config), sort_keys=True).encode()).hexdigest()[:12]


def result_fields(config: dict) -> dict:
    """The fields of a config dict (possibly stored by an older version) that decide its results."""
    full = {**LATER_FIELDS, **config}
    if full["split_seed"] == full.get("seed"):
        full["split_seed"] = -1
    method = METHODS.get(full.get("algorithm"))
    unused = method.unused if method else ()
    # a method's own fields at their default are left out too: declaring one changes no committed run's key
    defaults = {**LATER_FIELDS, **{k: f.default for k, f in (fields_of(method.name) if method else {}).items()}}
    return {k: v for k, v in full.items() if k not in EXECUTION_FIELDS and k not in unused
            and not (k in defaults and v == defaults[k])}


def partition_kind(name: str, value, label_shards: bool = True) -> tuple[str, float]:
    """('iid', 0) | ('non-iid-l', K) | ('dir', alpha) for a partition string; ConfigError naming the field."""
    if value == "iid":
        return "iid", 0
    if label_shards and (m := re.fullmatch(r"non-iid-l-(\d+)", str(value))):
        return "non-iid-l", int(m.group(1))
    if m := re.fullmatch(r"dir-([0-9.eE+-]+)", str(value)):
        try:
            return "dir", float(m.group(1))
        except ValueError:  # e.g. 'dir-1.2.3', 'dir-e'
            pass
    allowed = "'iid', 'non-iid-l-K' (K an integer), 'dir-ALPHA'" if label_shards else "'iid', 'dir-ALPHA'"
    raise ConfigError(f"{name}={value!r}: allowed are {allowed}")


def parse_value(name: str, text: str):
    """Turn a `--set name=text` string into the field's type (Config's, or a method's own: methods.Field)."""
    types = {f.name: f.type for f in fields(Config) if f.name != "method_fields"}
    types.update({k: type(f.default).__name__ for m in METHODS for k, f in METHODS[m].fields.items()})
    if name not in types:
        close = difflib.get_close_matches(name, types, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown config field {name!r}{hint}")
    typ = types[name]
    try:
        if typ == "bool":
            if text.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError
            return text.lower() in ("true", "1", "yes", "on")
        return {"int": int, "float": float, "str": str}[typ](text)
    except ValueError:
        raise ConfigError(f"{name}={text!r}: must be {_ARTICLE[typ]}") from None


_ARTICLE = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}
DEVICES = "auto, cpu, cuda, cuda:N"


def check_device(device) -> str:
    """The device's name if it is one of DEVICES (whether this machine has it is run.pick_device's check)."""
    name = str(device)
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", name):
        raise ConfigError(f"device={name!r}: allowed are {DEVICES}")
    return name


def check_parameters(profile_name="small", seed=None, seeds=None, dataset=None, rounds=None, device="auto",
                     **overrides) -> None:
    """A notebook's parameters, checked up front with the same one-line ConfigErrors as `semifl run --set`:
    every (dataset, seed) the notebook would build must give a valid config."""
    if not isinstance(profile_name, str):
        raise ConfigError(f"profile={profile_name!r}: allowed are {', '.join(PROFILES)}")
    check_device(device)
    if seeds is not None and (isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__")):
        raise ConfigError(f"seeds={seeds!r}: must be None or a list of integers, e.g. [0, 1, 2] "
                          "(papermill: -y 'seeds: [0, 1]', or -p seed 3 for one)")
    if rounds is not None:
        if profile_name == "long" and rounds != LONG["rounds"]:
            raise ConfigError(f"rounds={rounds!r} contradicts profile='long' (its {LONG['rounds']} rounds are what "
                              f"makes it long): leave rounds unset, or use profile='small' with rounds={rounds!r}")
        overrides["rounds"] = rounds
    datasets = [dataset] if dataset is None or isinstance(dataset, str) else list(dataset)
    given = ([] if seed is None else [seed]) + ([] if seeds is None else list(seeds))
    for s in given or [None]:   # no seed given: still check the profile, dataset and overrides
        for ds in datasets:
            profile(profile_name, ds, **overrides, **({} if s is None else {"seed": s}))


# ---------------------------------------------------------------------- profiles
# The paper's Table 4, per dataset and N_S (the server batch is 10 for the small N_S, 250 for the large).
PAPER_TABLE4 = {
    ("cifar10", 250): dict(model="wrn28x2", server_batch=10),
    ("cifar10", 4000): dict(model="wrn28x2", server_batch=250),
    ("svhn", 250): dict(model="wrn28x2", server_batch=10),
    ("svhn", 1000): dict(model="wrn28x2", server_batch=250),
    ("cifar100", 2500): dict(model="wrn28x8", server_batch=10),
    ("cifar100", 10000): dict(model="wrn28x8", server_batch=250),
}
PAPER_NUM_SUPERVISED = {"cifar10": (250, 4000), "svhn": (250, 1000), "cifar100": (2500, 10000)}
PAPER = dict(num_clients=100, active_rate=0.1, rounds=800, local_epochs=5.0, client_batch=10, server_epochs=5.0,
             lr=0.03, momentum=0.9, weight_decay=5e-4, nesterov=True, global_momentum=0.5, threshold=0.95,
             mixup_alpha=0.75, sbn_source="all", norm="sbn", strong_aug="semifl")
# CPU-sized (Fashion-MNIST, small CNN): every algorithmic value of Table 4 (tau, E=5 client and server epochs, batches
# 10/10, lr 0.03 cosine, momentum, Nesterov, weight decay, beta_g, mixup a, M=100, C=0.1, fix+mix); only what the
# paper's scale fixes and a CPU cannot is changed: N_S, the model, the rounds, the evaluation cadence and sBN statistics
# from the server's data (Appendix B's practical choice; Table 3 finds it equal). N_S and the rounds follow
# docs/profiles.md's rule, from the supervised baselines and the CPU budget only.
SMALL = dict(model="cnn", num_supervised=100, num_clients=100, active_rate=0.1, rounds=30, local_epochs=5.0,
             client_batch=10, server_batch=10, server_epochs=5.0, sbn_source="server", dataset="fashionmnist")
# `small` trained 10x longer (37.5 % of the paper's T=800), fixed before any run of it: the training-length
# question of notebooks/horizon.ipynb. Test accuracy every 10 rounds (and always in the last round).
LONG = dict(rounds=300, eval_every=10)
# A profile built on another takes that one's per-method defaults where it has none of its own.
PROFILE_BASE = {"long": "small"}
# Seconds: for tests and CI. tau 0.13: the clients train in every round (seeds 0-9: 10-98 % of their images pass in
# round 1, 60-100 % in round 2; at 0.5 none passed in two rounds) while Eq. (3) still leaves some images out.
SMOKE = dict(dataset="synthetic", model="cnn", num_supervised=100, num_clients=10, active_rate=0.3, rounds=2,
             local_epochs=1.0, client_batch=10, server_batch=10, server_epochs=1.0, threshold=0.13,
             sbn_source="all")


# The (dataset, N_S) pairs each profile covers (the notebooks loop over them).
PROFILE_GRID = {"paper": [(d, n) for d, ns in PAPER_NUM_SUPERVISED.items() for n in ns],
                "small": [("fashionmnist", 100)], "long": [("fashionmnist", 100)], "smoke": [("synthetic", 100)]}

def profile(name: str, dataset: str | None = None, **overrides) -> Config:
    """The named profile for a dataset, with overrides applied, validated."""
    if name not in PROFILES:
        close = difflib.get_close_matches(name, PROFILES, n=1)
        raise ConfigError(f"profile={name!r}: allowed are {', '.join(PROFILES)}"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
    values = dict(PAPER)
    if name in ("small", "long"):
        values.update(SMALL)
    if name == "long":
        values.update(LONG)
    elif name == "smoke":
        values.update(SMOKE)
    if dataset is not None:
        values["dataset"] = dataset
    values.update(overrides)
    if name == "paper":
        ds = values.setdefault("dataset", "cifar10")
        n_s = values.setdefault("num_supervised", PAPER_NUM_SUPERVISED.get(ds, (250,))[0])
        table4 = PAPER_TABLE4.get((ds, n_s), dict(model="wrn28x2", server_batch=10 if n_s <= 1000 else 250))
        values.update({k: v for k, v in table4.items() if k not in overrides})
    method = METHODS.get(values.get("algorithm", SEMIFL))
    if method is not None:   # an unknown name is refused by validate, below
        for k, v in method.fixed.items():
            if k in overrides and overrides[k] != v:
                raise ConfigError(f"{k}={overrides[k]!r}: {method.name} fixes {k}={v!r} (it is what the method "
                                  f"means); allowed for {method.name}: {k}={v!r}")
        values.update(method.fixed)
        defaults = method.profiles.get(name, method.profiles.get(PROFILE_BASE.get(name), {}))
        values.update({k: v for k, v in defaults.items() if k not in overrides})
    return Config.build(values).validate()


CORE_FIELDS.update(f.name for f in fields(Config) if f.name != "method_fields")
refuse_core_clashes()   # a plugin method registered at import, before CORE_FIELDS was known
