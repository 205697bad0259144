"""The runs each paper item needs, as {label: Config} per profile and (dataset, N_S), built here once so that notebooks
share runs (same config -> same run directory -> reused). A run's label starts with its method's label. Runs that one
notebook reads and no grid or campaign trains (the scale notebook's Fully Supervised sizing runs) live in it."""
from __future__ import annotations

import functools

import pandas as pd

from ..config import PROFILE_GRID, ConfigError, profile
from ..methods import (CBAFED_METHODS, FEDAVG_FIXMATCH, FEDAVG_FIXMATCH_CLIENTS, FEDAVG_LABELED, FEDAVG_SL,
                       FEDAVG_SUPERVISED, FEDDURE, FIXMATCH, FL2, FULLY_SUPERVISED, METHODS, PARTIALLY_SUPERVISED,
                       SEMIFL)
from . import paper
from .paper import ABLATION_PARTITIONS, FEDDURE_SETTING_NAMES, FEDDURE_SETTINGS, PARTITIONS  # noqa: F401
from .runs import make, run_all, run_pairs


def label_of(method: str) -> str:
    return METHODS[method].label


BASELINE_METHODS = (FULLY_SUPERVISED, PARTIALLY_SUPERVISED)   # centralized: one run serves every partition
BASELINES = tuple(label_of(m) for m in BASELINE_METHODS)
TABLE2_VARIANTS = {(False, False): label_of(FEDAVG_FIXMATCH), (False, True): "SemiFL: global pseudo-labels only",
                   (True, False): "SemiFL: fine-tune only", (True, True): "SemiFL (fine-tune + global)"}


def baseline_configs(p, ds, n, rounds=None) -> dict:
    return {label_of(m): make(p, ds, n, rounds, algorithm=m) for m in BASELINE_METHODS}


# Table 1's federated rows per profile; `long` (10x the rounds) drops supervised FedAvg: no long-horizon claim reads it.
TABLE1_FEDERATED = {"long": (FEDAVG_FIXMATCH,)}


def check_methods(methods) -> tuple:
    """A notebook's `methods` parameter (your methods added to its grid) as a tuple; else one line on what is wrong."""
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise ConfigError(f"methods={methods!r}: must be a list of method names, e.g. ['semifl-prox'] "
                          "(papermill: -y 'methods: [semifl-prox]')")
    for m in methods:
        if m not in METHODS:
            raise ConfigError(f"methods: {m!r} is not a registered method; registered: {', '.join(METHODS)} (a method "
                              "of your own: its module in SEMIFL_METHODS, docs/adding_a_method.md)")
    return tuple(methods)


def table1_configs(p, ds, n, rounds=None, methods=(), fields=None) -> dict:
    """Table 1: centralized baselines, the ceiling (centralized FixMatch), then per partition SemiFL and federated
    baselines; `methods` (check_methods) add rows (per partition if federated), `fields` their own fields' values."""
    from ..methods import fields_of
    methods, fields = check_methods(methods), dict(fields or {})
    own = {m: {k: v for k, v in fields.items() if k in fields_of(m)} for m in methods}
    for name in fields:
        if not any(name in o for o in own.values()):
            raise ConfigError(f"fields: {name!r} is a field of none of the methods added "
                              f"({', '.join(methods) or 'none'}); allowed: the fields those methods declare")
    cfgs = baseline_configs(p, ds, n, rounds)
    cfgs[label_of(FIXMATCH)] = make(p, ds, n, rounds, algorithm=FIXMATCH)
    extra = [m for m in methods if not METHODS[m].federated]
    cfgs.update({label_of(m): make(p, ds, n, rounds, algorithm=m, **own[m]) for m in extra})
    for part in PARTITIONS:
        cfgs[f"{label_of(SEMIFL)} | {part}"] = make(p, ds, n, rounds, partition=part)
        for m in TABLE1_FEDERATED.get(p, (FEDAVG_FIXMATCH, FEDAVG_SUPERVISED)):
            cfgs[f"{label_of(m)} | {part}"] = make(p, ds, n, rounds, partition=part, algorithm=m)
        for m in (m for m in methods if METHODS[m].federated):
            cfgs[f"{label_of(m)} | {part}"] = make(p, ds, n, rounds, partition=part, algorithm=m, **own[m])
    return cfgs


def table1_runs(p, pairs, seeds, results_dir, device="auto", rounds=None, methods=(), fields=None) -> pd.DataFrame:
    """The runs of table1_configs for every (dataset, N_S) pair, `methods` checked first (check_methods)."""
    builder = functools.partial(table1_configs, methods=check_methods(methods), fields=fields)
    return run_pairs(builder, p, pairs, seeds, results_dir, device, rounds)


def table2_configs(p, ds, n, rounds=None) -> dict:
    cfgs = baseline_configs(p, ds, n, rounds)
    for part in ABLATION_PARTITIONS:
        for (ft, gl), name in TABLE2_VARIANTS.items():
            if (ft, gl) == (False, False):
                cfgs[f"{name} | {part}"] = make(p, ds, n, rounds, partition=part, algorithm=FEDAVG_FIXMATCH)
            else:
                cfgs[f"{name} | {part}"] = make(p, ds, n, rounds, partition=part, finetune=ft,
                                                global_pseudo_labels=gl)
    return cfgs


def table3_configs(p, ds, n, rounds=None) -> dict:
    return {f"sBN {src} | {part}": make(p, ds, n, rounds, partition=part, sbn_source=src)
            for part in ABLATION_PARTITIONS for src in ("server", "all")}


def table5_rows(p, ds, n) -> list[tuple]:
    """(E, beta_g, mixup) rows of Table 5 at this profile: the paper's E=1 vs 5 becomes E/5 vs the profile's E."""
    base = make(p, ds, n)
    e, bg = base.local_epochs, base.global_momentum
    return [(e / 5, bg, True), (e, bg, False), (e, 0.0, True), (e, bg, True)]


def table5_label(e, bg, mx) -> str:
    """A Table 5 row's label, e.g. 'E=5, beta_g=0.5, mixup=yes'."""
    return f"E={e:g}, beta_g={bg:g}, mixup={'yes' if mx else 'no'}"


def table5_configs(p, ds, n, rounds=None) -> dict:
    return {f"{table5_label(e, bg, mx)} | {part}":
            make(p, ds, n, rounds, partition=part, local_epochs=e, global_momentum=bg, mix_loss=mx)
            for part in ABLATION_PARTITIONS for e, bg, mx in table5_rows(p, ds, n)}


def figure2_configs(p, ds, n, rounds=None) -> dict:
    cfgs = baseline_configs(p, ds, n, rounds)
    e = make(p, ds, n).local_epochs
    for part in ABLATION_PARTITIONS:
        cfgs[f"{label_of(FEDAVG_FIXMATCH)}, 1 local step | {part}"] = make(p, ds, n, rounds, partition=part,
                                                                           algorithm=FEDAVG_FIXMATCH, local_epochs=1e-9)
        cfgs[f"{label_of(FEDAVG_FIXMATCH)}, E={e:g} | {part}"] = make(p, ds, n, rounds, partition=part,
                                                                      algorithm=FEDAVG_FIXMATCH)
    return cfgs


SCALE_NS = (40, 100, 250, 1000)


def scale_configs(p, ds, n, rounds=None) -> dict:
    """SemiFL and its supervised references, one factor at a time around the profile (N_S, client E, rounds, model),
    as 'factor=value | method'. Partially Supervised follows N_S, rounds and model; Fully Supervised only the model."""
    cfg = make(p, ds, n, rounds)
    points = [("N_S", m, dict(num_supervised=m)) for m in SCALE_NS]
    points += [("E", 1.0, dict(local_epochs=1.0)), ("rounds", 5 * cfg.rounds, dict(rounds=5 * cfg.rounds)),
               ("model", "cnn-w2", dict(model="cnn-w2"))]
    out = {}
    for factor, value, over in points:
        semifl = cfg.replace(**over)
        key = f"{factor}={value}"
        out[f"{key} | {label_of(SEMIFL)}"] = semifl
        out[f"{key} | {label_of(PARTIALLY_SUPERVISED)}"] = make(p, ds, semifl.num_supervised, semifl.rounds,
                                                                model=semifl.model, algorithm=PARTIALLY_SUPERVISED)
        out[f"{key} | {label_of(FULLY_SUPERVISED)}"] = make(p, ds, n, rounds, model=semifl.model,
                                                            algorithm=FULLY_SUPERVISED)
    return out


# The diagnosis' suspects (notebooks/diagnosis.ipynb), one change to the profile each; "5x rounds" spans the cosine too.
SUSPECTS = {
    "client E=1 (profile E=5)": lambda c: dict(local_epochs=1.0),
    "no global momentum (beta_g=0)": lambda c: dict(global_momentum=0.0),
    "5x rounds": lambda c: dict(rounds=5 * c.rounds),
    "wider CNN (cnn-w2)": lambda c: dict(model="cnn-w2"),
    "client momentum reset": lambda c: dict(client_momentum="reset"),
    "server momentum reset": lambda c: dict(server_momentum="reset"),
    "FixMatch's RandAugment": lambda c: dict(strong_aug="fixmatch"),
    "no mix loss": lambda c: dict(mix_loss=False),
    "sBN statistics from all data": lambda c: dict(sbn_source="all"),
    "Algorithm 1 round order": lambda c: dict(round_order="paper"),
}


INSTRUMENTED = "profile (instrumented)"   # the profile's SemiFL with diagnostics=True
SPLIT_SEEDS = range(5)


def diagnosis_ns(profile_name: str, dataset=None) -> list[int]:
    """The diagnosis' N_S: 40 (4 labels per class, where SemiFL fell below Partially Supervised) and the profile's."""
    n = profile(profile_name, dataset).num_supervised
    return sorted({40, n}) if profile_name == "small" else [n]


def diagnosis_configs(p, ds, n, rounds=None) -> dict:
    base = make(p, ds, n, rounds)
    out = {INSTRUMENTED: base.replace(diagnostics=True),
           **{label_of(m): make(p, ds, n, rounds, algorithm=m) for m in (PARTIALLY_SUPERVISED, FULLY_SUPERVISED)}}
    out.update({name: base.replace(**change(base)) for name, change in SUSPECTS.items()})
    return out


def split_configs(p, ds, n, rounds=None) -> dict:
    """SemiFL and Partially Supervised at split seeds 0-4; the run's seed fixes init, client sampling, augmentation."""
    base = make(p, ds, n, rounds)
    psl = make(p, ds, n, rounds, algorithm=PARTIALLY_SUPERVISED)
    return {**{f"{label_of(SEMIFL)} | split {k}": base.replace(split_seed=k) for k in SPLIT_SEEDS},
            **{f"{label_of(PARTIALLY_SUPERVISED)} | split {k}": psl.replace(split_seed=k) for k in SPLIT_SEEDS}}


# FedDure's Table 1: its rows (label -> (method, overrides)); FedDure runs as its paper says and as its code runs.
FEDDURE_PAPER, FEDDURE_CODE = "FedDure (paper)", "FedDure (code)"
FEDDURE_ROWS = {FEDDURE_PAPER: (FEDDURE, dict(feddure_variant="paper")),
                FEDDURE_CODE: (FEDDURE, dict(feddure_variant="code")),
                label_of(FEDAVG_LABELED): (FEDAVG_LABELED, {}),
                label_of(FEDAVG_FIXMATCH_CLIENTS): (FEDAVG_FIXMATCH_CLIENTS, {}),
                label_of(FEDAVG_SL): (FEDAVG_SL, {})}
# the cells that get extra seeds (three more for FedDure and FedAvg* under (DIR, DIR))
FEDDURE_EXTRA = ((FEDDURE_PAPER, label_of(FEDAVG_LABELED)), ("dir-0.5", "dir-0.5"))


def feddure_configs(p, dataset, rounds=None, rows=None, settings=FEDDURE_SETTINGS) -> dict:
    """{'row | (L, U)': Config} for FedDure's Table 1 at profile p (labels at the clients)."""
    rows = rows or tuple(FEDDURE_ROWS)
    extra = {} if rounds is None else {"rounds": int(rounds)}
    return {f"{r} | {FEDDURE_SETTING_NAMES[s]}": profile(p, dataset, algorithm=FEDDURE_ROWS[r][0],
                                                        labeled_partition=s[0], partition=s[1],
                                                        **FEDDURE_ROWS[r][1], **extra)
            for s in settings for r in rows}


# FedDure at its own length (feddure_length_configs): the small variant's 50 rounds become FedDure's 200.
FEDDURE_LONG_FACTOR = 4


def feddure_length_configs(p, dataset, rounds=None) -> dict:
    """{'row | (L, U)': Config}: the FEDDURE_EXTRA cells at FEDDURE_LONG_FACTOR x the rounds (the profile's if None)."""
    rows, settings = FEDDURE_EXTRA
    short = rounds or profile(p, dataset, algorithm=FEDDURE).rounds
    return feddure_configs(p, dataset, FEDDURE_LONG_FACTOR * int(short), rows=rows,
                           settings=[s for s in FEDDURE_SETTINGS if s == settings])


def _with_cells(df: pd.DataFrame) -> pd.DataFrame:
    df["row"] = df.label.str.split(" | ", regex=False).str[0]
    df["setting"] = df.label.str.split(" | ", regex=False).str[1]
    return df


def feddure_length_runs(p, dataset, seeds, results_dir=None, device="auto", rounds=None) -> pd.DataFrame:
    """The runs of feddure_length_configs for `seeds`, with 'row' and 'setting' columns as feddure_runs."""
    return _with_cells(run_all(feddure_length_configs(p, dataset, rounds), seeds, results_dir, device))


def feddure_runs(p, dataset, seeds, extra_seeds, results_dir=None, device="auto", rounds=None) -> pd.DataFrame:
    """FedDure's Table 1 ('row', 'setting' columns): every cell for `seeds`, FEDDURE_EXTRA's also for `extra_seeds`."""
    main = feddure_configs(p, dataset, rounds)
    rows, settings = FEDDURE_EXTRA
    more = feddure_configs(p, dataset, rounds, rows=rows, settings=[s for s in FEDDURE_SETTINGS if s == settings])
    extra = [s for s in extra_seeds if s not in seeds]
    return _with_cells(pd.concat([run_all(main, seeds, results_dir, device),
                                  *([run_all(more, extra, results_dir, device)] if extra else [])], ignore_index=True))


# The notebooks' grids for `semifl sweep GRID`: builder(p, ds, n, rounds) -> {label: Config}, per (dataset, N_S) pair
# (report.grid). figure6 and learning_curves read table2's and table1's runs.
GRIDS = {"table1": table1_configs, "table2": table2_configs, "table3": table3_configs, "table5": table5_configs,
         "figure2": figure2_configs, "scale": scale_configs, "diagnosis": diagnosis_configs,
         "split": split_configs, "feddure": None}


def grid_configs(name: str, p: str, dataset=None, rounds=None) -> dict:
    """{label: Config} of grid `name` (GRIDS) at profile p over its (dataset, N_S) pairs (only `dataset`'s if given),
    labels naming the pair when there are several; as the notebooks run them, without feddure's extra seeds."""
    from .runs import grid
    if name not in GRIDS:
        raise ConfigError(f"grid {name!r}: allowed are {', '.join(GRIDS)}")
    pairs = grid(p, dataset)
    if name == "feddure":
        return feddure_configs(p, pairs[0][0], rounds)
    if name == "scale":   # as its notebook: the first dataset, around the profile's N_S
        return scale_configs(p, pairs[0][0], profile(p, pairs[0][0]).num_supervised, rounds)
    if name in ("diagnosis", "split"):   # the diagnosis notebook draws both at every N_S it looks at
        pairs = list(dict.fromkeys((ds, n) for ds, _ in pairs for n in diagnosis_ns(p, ds)))
    out = {}
    for ds, n in pairs:
        for label, cfg in GRIDS[name](p, ds, n, rounds).items():
            out[label if len(pairs) == 1 else f"{label} | {ds} N_S={n}"] = cfg
    return out


# The training-length curve (notebooks/horizon.ipynb): SemiFL and Partially Supervised (same server budget, R x server
# epochs) at `small` with R rounds, the cosine spanning R. R=30 is `small`, R=300 `long`; R >= 100 evaluates every 10.
HORIZONS = (30, 100, 300, 800)


FIXMATCH_HORIZONS = (30, 300)   # centralized FixMatch, the ceiling, at the profile's R and at 10x


def horizon_configs(p, ds, n, r) -> dict:
    """{'R=r | method': Config} for one horizon r (centralized FixMatch too where r is in FIXMATCH_HORIZONS)."""
    over = dict(rounds=r) if r == profile(p, ds).rounds else dict(rounds=r, eval_every=10)
    methods = (SEMIFL, PARTIALLY_SUPERVISED) + ((FIXMATCH,) if r in FIXMATCH_HORIZONS else ())
    return {f"R={r} | {label_of(m)}": make(p, ds, n, algorithm=m, **over) for m in methods}


# The few-label study (notebooks/few_labels.ipynb): SemiFL with each pseudo-label rule (methods/pseudo_labels.py), IID.
FIXED_INSTRUMENTED = "fixed (instrumented)"   # the fixed rule's runs with diagnostics=True: its fix-set class shares


def few_label_configs(p, ds, n, rounds=None) -> dict:
    """{'rule | SemiFL': Config} at N_S=n: every rule, the fixed rule instrumented (the diagnosis' runs), (FL)^2,
    baselines."""
    from ..methods.pseudo_labels import FIXED, RULES
    out = {f"{rule} | {label_of(SEMIFL)}": make(p, ds, n, rounds, pseudo_label_rule=rule) for rule in RULES}
    out[f"{FIXED_INSTRUMENTED} | {label_of(SEMIFL)}"] = out[f"{FIXED} | {label_of(SEMIFL)}"].replace(diagnostics=True)
    out[label_of(FL2)] = make(p, ds, n, rounds, algorithm=FL2)
    return {**out, **baseline_configs(p, ds, n, rounds)}


def few_label_rows() -> list[str]:
    """The rows of the few-label study: SemiFL's selection rules, then (FL)^2."""
    from ..methods.pseudo_labels import RULES
    return [*RULES, label_of(FL2)]


def longer_profile(p) -> str:
    """Where the training-length study shows Table 1: the profile built on p (config.PROFILE_BASE), else p itself."""
    from ..config import PROFILE_BASE
    return next((longer for longer, base in PROFILE_BASE.items() if base == p), p)


def horizons_of(p, ds=None) -> tuple:
    """The training lengths R of the horizon study: HORIZONS at the small profile, else the profile's R and twice it."""
    base = profile(p, ds).rounds
    return HORIZONS if p == "small" else (base, 2 * base)


def horizon_runs(p, ds, n, seeds=None, results_dir=None, device="auto") -> pd.DataFrame:
    """The runs of every horizons_of R (seeds 0-2 by default), with 'R' and 'method' columns; Fully Supervised too."""
    seeds = (0, 1, 2) if seeds is None else seeds
    parts = [run_all(horizon_configs(p, ds, n, r), seeds, results_dir, device).assign(R=r) for r in horizons_of(p, ds)]
    fsl = run_all({label_of(FULLY_SUPERVISED): make(p, ds, n, algorithm=FULLY_SUPERVISED)}, seeds, results_dir, device)
    df = pd.concat([*parts, fsl.assign(R=0)], ignore_index=True)
    df["method"] = df.label.str.split(" | ", regex=False).str[-1]
    return df


def best_two_rules(p, ds, n, results_dir=None) -> list[str]:
    """The few-label study's rule, fixed before its runs, for the Non-IID follow-up: the two rows of few_label_rows()
    other than the fixed rule with the highest mean final accuracy at N_S=n, IID, seeds 0-2; [] until all are in."""
    from ..methods.pseudo_labels import FIXED
    from ..results import open_run
    from .runs import repo_path
    cfgs = few_label_configs(p, ds, n)
    means = {}
    for row in few_label_rows():
        if row == FIXED:
            continue
        cfg = cfgs.get(row) or cfgs[f"{row} | {label_of(SEMIFL)}"]   # (FL)^2's label, or a rule's
        found = [open_run(repo_path("results", results_dir), cfg.replace(seed=s)) for s in (0, 1, 2)]
        if any(f.state != "complete" for f in found):
            return []
        means[row] = sum(f.summary["final_acc"] for f in found) / 3
    return sorted(means, key=means.get, reverse=True)[:2]


def few_label_noniid_configs(p, ds, n, rows, partition="non-iid-l-2") -> dict:
    """The follow-up under Non-IID K=2: the given rows (best_two_rules), the fixed rule and Partially Supervised."""
    from ..methods.pseudo_labels import FIXED
    cfgs = few_label_configs(p, ds, n)
    keep = {k: v for k, v in cfgs.items() if k.split(" | ")[0] in (*rows, FIXED) and "instrumented" not in k}
    return {**{f"{k} | {partition}": v.replace(partition=partition) for k, v in keep.items()},
            label_of(PARTIALLY_SUPERVISED): cfgs[label_of(PARTIALLY_SUPERVISED)]}


# The label-skew study (notebooks/label_skew.ipynb; parts 1 and 2's runs are defined there): what the confirmation
# reads too, part 3's remedies at `long`, fixed before any code or run of them: FedVLS as its released code trains
# (lambda 0.1, its paper's value for CIFAR-10 and MNIST), a head the clients do not train (FedBABU), fewer local steps
# (E=1; separately, no global momentum).
SKEW_PARTITION = "non-iid-l-2"
VLS_LAMBDA = 0.1
FEDVLS = f"FedVLS's released loss, lambda {VLS_LAMBDA:g}"   # its loss only, with SemiFL's optimiser
FROZEN_HEAD = "a head the clients do not train"
ONE_EPOCH = "one local epoch (E=1)"
NO_GLOBAL_MOMENTUM = "no global momentum"
PART3_REMEDIES = {ONE_EPOCH: dict(local_epochs=1.0), NO_GLOBAL_MOMENTUM: dict(global_momentum=0.0),
                  FEDVLS: dict(vls_lambda=VLS_LAMBDA, vls_variant="released"), FROZEN_HEAD: dict(frozen_head=True)}
PART3_LONG_PARTITIONS = (SKEW_PARTITION, "dir-0.1")
PART3_NAMES = {SKEW_PARTITION: "Non-IID, K=2", "dir-0.1": "Dir(0.1)"}   # part 3's partitions as its tables name them


def label_skew_judges(p, ds, n, partitions=(SKEW_PARTITION,), rounds=None) -> dict:
    """{'SemiFL | partition': Config, 'Partially Supervised': Config}: what a remedy is judged against (Table 1's runs
    at p: `small` for the gate's second way, `long` for the cells)."""
    return {**{f"{label_of(SEMIFL)} | {part}": make(p, ds, n, rounds, partition=part) for part in partitions},
            label_of(PARTIALLY_SUPERVISED): make(p, ds, n, rounds, algorithm=PARTIALLY_SUPERVISED)}


def label_skew_long_configs(p, ds, n, remedy, partitions=PART3_LONG_PARTITIONS) -> dict:
    """{'remedy | SemiFL | partition': Config} at profile p (`long`): a part-3 remedy at each partition."""
    return {f"{remedy} | {label_of(SEMIFL)} | {part}": make(p, ds, n, partition=part, **PART3_REMEDIES[remedy])
            for part in partitions}


# Do the few-label winners hold at `long` (R=300)? Table 1 at `long` shows them beside SemiFL and Partially Supervised.
LONG_WINNER_PARTITIONS = ("iid", "non-iid-l-2")


def long_winner_configs(p, ds, n) -> dict:
    """{'row | partition': Config} at profile p (the `long` profile): client-adaptive SemiFL and (FL)^2."""
    from ..methods.pseudo_labels import CLIENT_ADAPTIVE
    out = {}
    for part in LONG_WINNER_PARTITIONS:
        out[f"{label_of(SEMIFL)}, {CLIENT_ADAPTIVE} | {part}"] = make(p, ds, n, partition=part,
                                                                      pseudo_label_rule=CLIENT_ADAPTIVE)
        out[f"{label_of(FL2)} | {part}"] = make(p, ds, n, partition=part, algorithm=FL2)
    return out


# CBAFed's Table 1 (notebooks/cbafed_table1): its rows on its placement and schedule (methods/cbafed.py).
def cbafed_configs(p, dataset, rounds=None) -> dict:
    """{row label: Config} at profile p; `rounds` (if given) keeps the profile's split: half warm-up, half federated."""
    extra = {} if rounds is None else {"rounds": int(rounds), "cbafed_warmup": int(rounds) // 2}
    return {label_of(m): profile(p, dataset, algorithm=m, **extra) for m in CBAFED_METHODS}


# CBAFed's code draws the labeled client as its share of one Dirichlet draw over all ten clients (cbafed_labeled=
# "dirichlet", cbafed.code_split); our small variant's 600 images per class make our lower bound stronger.
def cbafed_own_setting_configs(p, dataset, rounds=None) -> dict:
    """cbafed_configs, the labeled client drawn as CBAFed's code draws it; same labels (cbafed_table, cbafed_claims)."""
    return {label: cfg.replace(cbafed_labeled="dirichlet") for label, cfg in cbafed_configs(p, dataset, rounds).items()}


# CBAFed as its released code runs (Config.cbafed_variant="code": the residual timing and input pipeline of
# methods/cbafed.py), evaluated every round as that code reports; beside the paper variant's rows of the same setting.
def cbafed_code_configs(p, dataset, rounds=None) -> dict:
    """{row label + ", released code": Config}: CBAFed and the lower bound, code variant, own setting, every round."""
    from ..methods import CBAFED, CBAFED_LOWER
    own = cbafed_own_setting_configs(p, dataset, rounds)
    return {f"{label_of(m)}, released code": own[label_of(m)].replace(cbafed_variant="code", eval_every=1)
            for m in (CBAFED, CBAFED_LOWER)}


def headline_configs(results_dir=None) -> list[dict]:
    """The README headline's rows: {study, R, partition, method, cfg_a, cfg_psl, cfg_fsl}, each 'method (cfg_a) above
    Partially Supervised (cfg_psl, same rounds)'. study: `small` or `long` (Table 1), "training length" (SemiFL's other
    horizons, IID) or "few labels" (best_two_rules on the committed runs, at 30 rounds and `long`, IID and K=2)."""
    from ..methods.pseudo_labels import CLIENT_ADAPTIVE
    ds, n = PROFILE_GRID["small"][0]
    semifl, psl, fsl = (label_of(m) for m in (SEMIFL, PARTIALLY_SUPERVISED, FULLY_SUPERVISED))
    small = table1_configs("small", ds, n)
    row = lambda study, part, method, a, b: dict(study=study, R=b.rounds, partition=part, method=method,  # noqa: E731
                                                 cfg_a=a, cfg_psl=b, cfg_fsl=small[fsl])
    rows, long_name = [], longer_profile("small")
    for prof in ("small", long_name):
        cfgs = table1_configs(prof, ds, n)
        rows += [row(f"`{prof}`", part, semifl, cfgs[f"{semifl} | {part}"], cfgs[psl]) for part in paper.PARTITIONS]
    for r in horizons_of("small", ds):
        if r not in {x["R"] for x in rows}:
            cfgs = horizon_configs("small", ds, n, r)
            rows.append(row("training length", paper.IID, semifl, cfgs[f"R={r} | {semifl}"], cfgs[f"R={r} | {psl}"]))
    few = few_label_configs("small", ds, n)
    winners = best_two_rules("small", ds, n, results_dir)   # the study's rule, fixed before its runs
    noniid = few_label_noniid_configs("small", ds, n, winners) if winners else {}
    for part, cfgs in ((paper.IID, few), (paper.NON_IID_K2, noniid)):
        for w in winners:
            key = w if w in few else f"{w} | {semifl}"
            rows.append(row("few labels", part, w if w in few else f"{semifl}, {w} rule",
                            cfgs[key if part == paper.IID else f"{key} | {part}"], few[psl]))
    long = table1_configs(long_name, ds, n)
    for key, cfg in long_winner_configs(long_name, ds, n).items():
        what, part = key.split(" | ")
        rows.append(row("few labels", part, what.replace(f", {CLIENT_ADAPTIVE}", f", {CLIENT_ADAPTIVE} rule"), cfg,
                        long[psl]))
    return rows
