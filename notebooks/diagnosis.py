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
# # Diagnosis: where does a SemiFL round lose accuracy?
#
# Instrumented SemiFL runs of the profile (N_S=40, four labels per class, where SemiFL fell below Partially Supervised, and the profile's N_S): test accuracy of the global model at the start of a round, of each client model after local training, of their mean, after global momentum and after the server fine-tune; the fine-tune's loss at its first and last step; which classes the fix set holds. Then each suspect changed alone (one run per suspect and seed), and the spread that the labeled-set draw alone causes (split seeds 0-4, everything else fixed). Rule for a verdict: two results differ only when their means differ by more than their two seed spreads (population std) together; otherwise *within noise*. Accuracies are final-round test accuracies. One suspect was not fixed in advance: *no global momentum (beta_g=0)* was added after the first instrumented N_S=40 runs showed the aggregate losing most accuracy at the momentum step, so it tests a hypothesis the data suggested.
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
num_supervised_list = None  # None -> [40, the N_S of the profile]


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
from semifl_core.run import get_data, pick_device
data = get_data(pairs[0][0], None, pick_device(device))
ns_list = num_supervised_list or report.diagnosis_ns(profile, dataset)
df = pd.concat([report.run_all(report.diagnosis_configs(profile, ds, n, rounds), seed_list, results_dir, device) for ds, _ in pairs for n in ns_list], ignore_index=True)
print(report.runs_summary(df))

# %%
# NBVAL_CHECK_OUTPUT
report.stage_table(df)

# %%
long = report.stage_curves(df)
g = report.lineplot_grid(long, 'acc', hue='stage', col='num_supervised', ylabel='test accuracy (%)', title=f'Accuracy at each stage of a round (profile {profile})')
print(report.save_figure(g, figures_dir, f'diagnosis_stages_{pairs[0][0]}'))
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
report.class_table(df, data.class_names)

# %%
# NBVAL_CHECK_OUTPUT
pd.concat([report.suspects_table(df, n) for n in ns_list], ignore_index=True)

# %%
splits = pd.concat([report.run_all(report.split_configs(profile, ds, n, rounds), seed_list[:1], results_dir, device) for ds, _ in pairs for n in ns_list], ignore_index=True)
print(report.runs_summary(splits))

# %%
# NBVAL_CHECK_OUTPUT
report.split_table(splits)

# %%
fig, blank = report.augmentation_grid(data)
print(report.save_figure(fig, figures_dir, f'augmentation_{pairs[0][0]}'))
plt.show()
print({k: f'{v:.1f}% blank' for k, v in blank.items()})

# %%
# NBVAL_CHECK_OUTPUT
report.diagnosis_findings(df, splits, ns_list)
