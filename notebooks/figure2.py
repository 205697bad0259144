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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 2: a vanilla combination of FedAvg and FixMatch
#
# FedAvg + FixMatch (server and clients trained in parallel and averaged, per-batch pseudo-labels) with one local step per round (FedSGD-like) and with the profile's E local epochs, against Fully and Partially Supervised, under IID and Non-IID K=2.
#
# The paper's numbers are quoted from `semifl_core/report/paper.py` and labeled *paper (dataset, N_S)*: they come from CIFAR-10/SVHN/CIFAR-100 with WResNets and 800 rounds, not from this run. *Partially Supervised* here trains on the N_S labels with SemiFL's server budget (5 epochs a round, for the profile's rounds); *Fully Supervised* on all labels for the profile's length (README, 'The small profile'). Results are mean (population std) and n over seeds. A claim 'A above B' is held when A's mean exceeds B's by more than the two seed spreads (population std over seeds) together, not held when B's exceeds A's by that much, and within noise otherwise; with one seed there is no spread, so one seed gives no verdict; a claim whose runs are not in the results store yet is 'not run'. The last cell states what held at this profile.

# %% tags=["parameters"]
profile = 'small'          # 'paper' | 'small' | 'smoke'
seed = None                # one seed (e.g. -p seed 3) instead of `seeds`
seeds = [0, 1, 2]          # the committed results hold seeds 0, 1, 2
dataset = None             # None -> the profile's PROFILE_GRID datasets
device = 'auto'
results_dir = None         # None -> the repository's results/ (committed runs are reused from there)
figures_dir = None         # None -> the repository's figures/
rounds = None              # None -> the profile's number of rounds


# %%
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns
from semifl_core import report
from semifl_core.report import paper

# checks the parameters (a bad one: one line saying which and why), sets the styles, says what runs and where
seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device, results_dir, figures_dir)


# %%
df = report.run_pairs(report.figure2_configs, profile, pairs, seed_list, results_dir, device, rounds)
print(report.runs_summary(df))

# %%
# NBVAL_CHECK_OUTPUT
final = df.groupby(['pair', 'method', 'partition']).best_acc.agg(report.mean_std).unstack()
final.reindex(columns=['iid', 'non-iid-l-2'])

# %%
c = report.curves(df)
cb = report.with_baselines(c, report.ABLATION_PARTITIONS)
for ds, n in pairs:
    d = cb[(cb.dataset == ds) & (cb.num_supervised == n)]
    g = report.lineplot_grid(d, 'test_acc', hue='method', col='partition', ylabel='test accuracy (%)', title=f'Figure 2 ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')
    print(report.save_figure(g, figures_dir, 'figure2' if len(pairs) == 1 else f'figure2_{ds}_{n}'))
    plt.show()

# %%
# NBVAL_CHECK_OUTPUT
report.figure2_claims(df, pairs)
