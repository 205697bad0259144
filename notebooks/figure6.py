# %% [markdown]
# # Figure 6: quality of pseudo-labeling for the Table 2 variants
#
# How good are the pseudo-labels the clients train on? The paper's Figure 6 draws, per round, Pseudo Accuracy (the accuracy of all pseudo-labels, %), Threshold Accuracy (the accuracy of those above the confidence threshold, %) and Label Ratio (the fraction of client images above the threshold, 0-1) for the four Table 2 variants. This notebook draws the same three measures for Table 2's runs (reused), under Non-IID K=2 (left) and IID (right), one measure a row; mean over seeds and a band of one standard deviation.

# %% [markdown]
# ## Parameters and runs

# %% tags=["parameters"]
profile = 'small'          # 'paper' | 'small' | 'long' | 'smoke'
seed = None                # one seed (e.g. -p seed 3) instead of `seeds`
seeds = [0, 1, 2]          # the committed results hold seeds 0, 1, 2
dataset = None             # None -> the profile's PROFILE_GRID datasets
device = 'auto'
results_dir = None         # None -> the repository's results/ (committed runs are reused)
figures_dir = None         # None -> the repository's figures/
rounds = None              # None -> the profile's number of rounds


# %%
from semifl_core import report
from semifl_core.report import paper

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %%
df = report.run_pairs(report.table2_configs, profile, pairs, seed_list, results_dir, device, rounds)
print(report.runs_summary(df))

# %% [markdown]
# ## Pseudo-label quality per round

# %% tags=["definitions"]
import pandas as pd

from semifl_core.report.configs import TABLE2_VARIANTS
from semifl_core.report.runs import curves


PSEUDO_METRICS = {"pseudo_acc": "Pseudo Accuracy", "threshold_acc": "Threshold Accuracy",
                  "label_ratio": "Label Ratio"}
PSEUDO_UNITS = {"Pseudo Accuracy": "Pseudo Accuracy (%)", "Threshold Accuracy": "Threshold Accuracy (%)",
                "Label Ratio": "Label Ratio (fraction, 0-1)"}
PSEUDO_BOUNDS = {"Pseudo Accuracy": (0, 100), "Threshold Accuracy": (0, 100), "Label Ratio": (0, 1)}


def pseudo_label_curves(df) -> pd.DataFrame:
    """Long per-round pseudo-label quality of the Table 2 variants (no baselines)."""
    runs = df[df.method.isin(list(TABLE2_VARIANTS.values()))]
    c = curves(runs)
    long = c.melt(id_vars=["round", "method", "seed", "partition", "dataset", "num_supervised"],
                  value_vars=[m for m in PSEUDO_METRICS if m in c.columns], var_name="metric",
                  value_name="value")
    long["metric"] = long.metric.map(PSEUDO_METRICS)
    return long.dropna(subset=["value"])


# %%
long = pseudo_label_curves(df)
for ds, n in pairs:
    d = long[(long.dataset == ds) & (long.num_supervised == n)]
    fig = report.lineplot_grid(
        d, 'value', hue='method', col='partition', row='metric', ylabel=PSEUDO_UNITS,
        bounds=PSEUDO_BOUNDS, height=3.2,
        title=f'Figure 6 ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')
    report.save_figure(fig, figures_dir, f'figure6_{ds}_{n}')


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %% tags=["definitions"]
from semifl_core.report import paper
from semifl_core.report.claims import pair_prefix, claims as claims_table
from semifl_core.report.paper import ABLATION_PARTITIONS
from semifl_core.report.rule import above, every
from semifl_core.report.tables import mean_std


def figure6_claims(long, pairs) -> pd.DataFrame:
    """Pseudo-label quality of full SemiFL against each other Table 2 variant, per seed averaged over the second
    half of the rounds."""
    items = []
    best = TABLE2_VARIANTS[(True, True)]
    for ds, n in pairs:
        pre = pair_prefix(pairs, ds, n)
        for part in ABLATION_PARTITIONS:
            for metric in ("Pseudo Accuracy", "Threshold Accuracy"):
                d = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)
                         & (long.metric == metric)]
                claim = pre + (f"{paper.PARTITION_NAMES[part]}: {metric} (second half of rounds) is highest "
                               "with fine-tune + global")
                ran = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)]
                if best not in set(ran.method):
                    items.append((claim, "not run", "full SemiFL's runs are not in the results store"))
                    continue
                if best not in set(d.method):
                    items.append((claim, False,
                                  "never defined: no pseudo-label passed the threshold in any round"))
                    continue
                late = d[d["round"] > d["round"].max() / 2].groupby(["method", "seed"]).value.mean()
                per = {m: {int(s): v for s, v in late[m].items()}   # one N_S: the seed's labeled set, paired
                       for m in late.index.get_level_values(0).unique()}
                items.append((claim, every(above(per[best], v) for m, v in per.items() if m != best),
                              "; ".join(f"{m}: {mean_std(v.values())}" for m, v in per.items())))
    return claims_table(items)


# %%
claims = figure6_claims(long, pairs)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged on its measure's per-seed mean over the second half of the rounds (Figure 6 is a curve; the claim names it) by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
