# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-papermill,-execution
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 6: quality of pseudo-labeling for the Table 2 variants
#
# How good are the pseudo-labels the clients train on? The paper's Figure 6 draws, per round, Pseudo Accuracy (the accuracy of all pseudo-labels, %), Threshold Accuracy (the accuracy of those above the confidence threshold, %) and Label Ratio (the fraction of client images above the threshold, 0-1) for the four Table 2 variants. This notebook draws the same three measures for Table 2's runs (reused), under Non-IID K=2 (left) and IID (right), one measure a row; mean over seeds and a band of one standard deviation.
#
# **How it runs:** the committed runs are reused ([README](../README.md#the-notebooks)); the run cell's first line says what was reused and what is missing.

# %% [markdown]
# ## Parameters and runs

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
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns
from semifl_core import report
from semifl_core.report import paper

# checks the parameters (a bad one: one line saying which and why), sets the styles,
# says what runs and where
seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %%
df = report.run_pairs(report.table2_configs, profile, pairs, seed_list, results_dir, device, rounds)
print(report.runs_summary(df))

# %% [markdown]
# ## Pseudo-label quality per round

# %%
long = report.pseudo_label_curves(df)
for ds, n in pairs:
    d = long[(long.dataset == ds) & (long.num_supervised == n)]
    fig = report.lineplot_grid(
        d, 'value', hue='method', col='partition', row='metric', ylabel=report.PSEUDO_UNITS,
        bounds=report.PSEUDO_BOUNDS, height=3.2,
        title=f'Figure 6 ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')
    report.save_figure(fig, figures_dir, f'figure6_{ds}_{n}')


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %%
claims = report.figure6_claims(long, pairs)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged by the package's rule ([docs/verdicts.md](../docs/verdicts.md#the-rule)), at the final round: the difference A - B with a 95 % interval, paired by seed where the two arms share each seed's labeled set (Welch's interval where they do not), Holm-corrected over a table's family; *held* when the interval lies above zero, *not held* below, *within noise* when it holds zero; fewer than three seeds give no verdict, and a claim whose runs are not in `results/` is *not run*. The claims rest on the seeds this notebook trains (0-2 by default); a claim given more seeds later is decided by its confirmation on fresh seeds, which this notebook shows where it has one.

# %% tags=["nbval-check-output"]
claims
