# %% [markdown]
# # Table 4: hyperparameters
#
# The `paper` profile rendered for each (dataset, N_S) of the paper, beside the paper's Table 4 (and the text of Section 4 / Appendix C.1 for M, C, tau, a). Then the fields where the chosen profile differs from the paper's. Nothing is trained here.
#
# **How its tables read** (the paper's numbers, the two baselines, mean (std) n, the verdicts): [README](../README.md#the-notebooks).

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
profile = 'small'          # 'paper' | 'small' | 'smoke'
seed = None                # one seed (e.g. -p seed 3) instead of `seeds`
seeds = [0, 1, 2]          # the committed results hold seeds 0, 1, 2
dataset = None             # None -> the profile's PROFILE_GRID datasets
device = 'auto'
results_dir = None         # None -> the repository's results/ (committed runs are reused)
figures_dir = None         # None -> the repository's figures/
rounds = None              # None -> the profile's number of rounds


# %%
from semifl_core import report

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %% [markdown]
# ## How the table is built
#
# Each Table 4 field is read from the profile's `Config` (`profile_table4`) and from the paper's Table 4 or text (`paper_table4`, quoted in `semifl_core/report/paper.py`), and the two compared as numbers where both are (`same_value`).

# %% tags=["definitions"]
import numpy as np
import pandas as pd

from semifl_core import config
from semifl_core.report import paper

# our model names as Table 4 writes them, and the fields of Table 4 (its row name, the Config field)
ARCH = {"wrn28x2": "WResNet28x2", "wrn28x8": "WResNet28x8", "cnn": "CNN"}
TABLE4_FIELDS = [("Architecture", "model"), ("Server batch size", "server_batch"),
                 ("Server epoch", "server_epochs"), ("Client batch size", "client_batch"),
                 ("Client epoch", "local_epochs"), ("Learning rate", "lr"), ("Weight decay", "weight_decay"),
                 ("Momentum", "momentum"), ("Nesterov", "nesterov"), ("Communication rounds", "rounds"),
                 ("Global momentum", "global_momentum"), ("Clients M", "num_clients"),
                 ("Active rate C", "active_rate"), ("Threshold tau", "threshold"), ("Mixup a", "mixup_alpha")]


def paper_table4(ds, n, fld):
    """The paper's Table 4 value of config field fld at (dataset, N_S)."""
    if fld == "model":
        return paper.TABLE4_ARCH.get(ds, "-")
    if fld == "server_batch":
        return paper.TABLE4_SERVER_BATCH.get((ds, n), "-")
    return paper.TABLE4_COMMON[fld]


def profile_table4(cfg, fld):
    """cfg's value of field fld as Table 4 writes it."""
    v = getattr(cfg, fld)
    return ARCH.get(v, v) if fld == "model" else v


def same_value(a, b) -> bool:
    """a == b as numbers when both are, else as text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def table4_number(v) -> str:
    """A Table 4 value written as the paper writes it: 5 (not 5.0000), 0.03, 0.0005, yes for a true flag."""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return f"{int(v)}" if float(v).is_integer() else f"{float(v):g}"
    return str(v)


def table4(pairs, profile_name="paper") -> pd.DataFrame:
    """Table 4's hyperparameters, one column per dataset (its N_S of the paper in the header):
    profile(profile_name)'s value where it equals the paper's, written as the paper writes it, and 'X (paper: Y)'
    where it does not (table4_claims judges them); a value that depends on N_S names the N_S of each."""
    by_ds = {}
    for ds, n in pairs:
        by_ds.setdefault(ds, []).append(n)
    rows = []
    for name, fld in TABLE4_FIELDS:
        row = {"hyperparameter": name}
        for ds, ns in by_ds.items():
            cells = []
            for n in ns:
                ours = profile_table4(config.profile(profile_name, ds, num_supervised=n), fld)
                theirs = paper_table4(ds, n, fld)
                cells.append(table4_number(ours) if same_value(ours, theirs) else
                             f"{table4_number(ours)} (paper: {table4_number(theirs)})")
            row[f"{paper.DATASET_NAMES.get(ds, ds)} (N_S={', '.join(map(str, ns))})"] = (
                cells[0] if len(set(cells)) == 1 else ", ".join(f"{c} (N_S={n})" for c, n in zip(cells, ns)))
        rows.append(row)
    fixed = (("Optimizer (fixed in code)", "SGD"), ("Scheduler (fixed in code)", "Cosine Annealing"))
    rows += [{"hyperparameter": name, **{c: value for c in rows[0] if c != "hyperparameter"}}
             for name, value in fixed]
    return pd.DataFrame(rows)


def profile_differences(profile_name, ds, n) -> pd.DataFrame:
    """Fields where profile(profile_name) differs from profile('paper') (for CIFAR-10 at the paper's N_S)."""
    a = config.profile("paper", "cifar10", num_supervised=250).to_dict()
    b = config.profile(profile_name, ds, num_supervised=n).to_dict()
    return pd.DataFrame([{"field": k, "paper profile (CIFAR-10, N_S=250)": a[k],
                          f"profile('{profile_name}')": b[k]} for k in a if a[k] != b[k]])

# %% [markdown]
# ## Table 4: the `paper` profile's values, checked against the paper's
#
# One column per dataset of the paper, at both its N_S (a value that depends on N_S names the N_S of each: the server batch size). A cell is the `paper` profile's value, written as the paper writes it, where it equals the paper's Table 4 (or the text, for M, C, tau and a); where it does not, the cell reads *ours (paper: theirs)*.

# %% tags=["nbval-check-output"]
table4(report.grid('paper'))

# %% [markdown]
# ## Where this notebook's profile differs from `paper`

# %% tags=["nbval-check-output"]
for ds, n in pairs:
    display(profile_differences(profile, ds, n))


# %% [markdown]
# ## How the claims are judged
#
# One exact claim per (dataset, N_S) of the paper: held when every field of the `paper` profile equals Table 4's.

# %% tags=["definitions"]
from semifl_core.report.claims import claims as claims_table


def table4_claims(pairs) -> pd.DataFrame:
    """Per (dataset, N_S) of the paper: profile('paper') has every value of Table 4 (an exact claim, held or not
    held), the evidence naming each value that differs."""
    items = []
    for ds, n in pairs:
        cfg = config.profile("paper", ds, num_supervised=n)
        diffs = []
        for name, fld in TABLE4_FIELDS:
            v = profile_table4(cfg, fld)
            if not same_value(v, paper_table4(ds, n, fld)):
                diffs.append(f"{name}: {v} vs paper {paper_table4(ds, n, fld)}")
        claim = f"profile('paper') for {paper.DATASET_NAMES.get(ds, ds)}, N_S={n} has Table 4's hyperparameters"
        items.append((claim, not diffs, "; ".join(diffs) or f"all {len(TABLE4_FIELDS)} values match"))
    return claims_table(items)


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %%
claims = table4_claims(report.grid('paper'))
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
