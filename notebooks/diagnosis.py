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
# # Diagnosis: where does a SemiFL round lose accuracy?
#
# **The question.** With four labels per class (N_S=40) SemiFL was first seen to fall below Partially Supervised, and at the profile's N_S=100 it does not beat it at 30 rounds (the table1 notebook). Where in a round does the accuracy go, and is it an implementation choice of ours?
#
# **Design.** Instrumented SemiFL runs of the profile (`diagnostics=True`, which measures each stage and trains as the plain run does on the same machine and kernels; committed instrumented and plain runs trained on different machines part from round 1: the label_skew notebook, "Which runs each table uses"), at N_S=40 and the profile's N_S, seeds 0-2: test accuracy of the global model at the start of a round, of each client model after local training, of their mean, after global momentum and after the server fine-tune; the fine-tune's loss at its first and last step; which classes the fix set holds. Then each suspect changed alone (one run per suspect and seed):
#
# - **client E=1** instead of 5, and **no global momentum** (beta_g=0): the two stages that move the model away from the server's labels;
# - **no mix loss**; **Algorithm 1's round order** (the fine-tune first: the clients then move last in every round, and the one fine-tune after the last round runs at the cosine schedule's last, tiny learning rate);
# - the implementation choices we could name: the wider CNN (cnn-w2), resetting the clients' or the server's SGD momentum between rounds, FixMatch's RandAugment instead of the authors' pool, sBN statistics from all data instead of the server's;
# - **5x the rounds** (150, the cosine over all of them).
#
# Last, the spread that the labeled-set draw alone causes (split seeds 0-4, everything else fixed by seed 0). Rule for a verdict: a claim 'A ends above B' is *held* when the 95 % interval of the difference A - B (paired by seed where the arms share the seed's labeled set; docs/verdicts.md) lies above zero, *not held* when it lies below, and *within noise* when it holds zero. Accuracies are final-round test accuracies. One suspect was not fixed in advance: *no global momentum (beta_g=0)* was added after the first instrumented N_S=40 runs showed the aggregate losing most accuracy at the momentum step, so it tests a hypothesis the data suggested.
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
num_supervised_list = None  # None -> [40, the N_S of the profile]


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
from semifl_core.run import get_data, pick_device
data = get_data(pairs[0][0], None, pick_device(device))
ns_list = num_supervised_list or report.diagnosis_ns(profile, dataset)
df = pd.concat([report.run_all(report.diagnosis_configs(profile, ds, n, rounds), seed_list,
                               results_dir, device) for ds, _ in pairs for n in ns_list],
               ignore_index=True)
print(report.runs_summary(df))

# %% [markdown]
# ## Accuracy at each stage of a round
#
# Test accuracy of the global model at the start of each round, of the client models after local training (their mean), of their average, after global momentum and after the server fine-tune; mean over seeds and a band of one standard deviation.

# %%
long = report.stage_curves(df).assign(N_S=lambda d: 'N_S=' + d.num_supervised.astype(str))
fig = report.lineplot_grid(long, 'acc', hue='stage', col='N_S', ylabel='test accuracy (%)',
                           title=f'Accuracy at each stage of a round (profile {profile})')
report.save_figure(fig, figures_dir, f'diagnosis_stages_{pairs[0][0]}')

# %% [markdown]
# The change of test accuracy across each stage, averaged over the rounds of each half of training and over seeds (points); then, over the same rounds, the fine-tune's loss at its first and last step, the label ratio (fraction), and the accuracy of the fix set's (threshold accuracy) and the mix set's pseudo-labels (%).

# %% tags=["nbval-check-output"]
display(report.stage_table(df, 'accuracy'))
report.stage_table(df, 'pseudo-labels')

# %% [markdown]
# ## Which classes the fix set holds
#
# Per class, over the second half of training: its share of the fix set (10 % would be balanced) and its test accuracy (%) at the start of a round, after aggregation and after the fine-tune. If the confident pseudo-labels are a few classes, the classes missing from the fix set are the ones whose accuracy the clients' training and the aggregation take away, and the fine-tune on the server's few labels has to bring them back every round.

# %% tags=["nbval-check-output"]
report.class_table(df, data.class_names)

# %% [markdown]
# ## The suspects, each changed alone
#
# Final-round accuracy of each run against the profile's (same seeds); the column *above the profile* is the verdict on the claim that the row's run ends above the profile. At N_S=40 the collapse spreads the profile's seeds widely, so a suspect needs a large effect to be told from noise.

# %% tags=["nbval-check-output"]
pd.concat([report.suspects_table(df, n) for n in ns_list], ignore_index=True)

# %% [markdown]
# ## How much the labeled-set draw alone moves a result
#
# Split seeds 0-4 (which images are labeled), everything else fixed; final-round accuracy (%). This is the spread that the server's choice of which few images to label causes on its own, to set beside the spread over seeds.

# %%
splits = pd.concat([report.run_all(report.split_configs(profile, ds, n, rounds), seed_list[:1],
                                   results_dir, device) for ds, _ in pairs for n in ns_list],
                   ignore_index=True)
print(report.runs_summary(splits))

# %% tags=["nbval-check-output"]
report.split_table(splits)

# %% [markdown]
# ## The strong augmentation, looked at
#
# Training images and their weak and strong views (each draw with its own random operations), and the share of strong views that come out blank: the authors' pool applies every operation at full strength, and a translation of 100 pixels blanks a 32x32 image, while FixMatch's RandAugment draws random magnitudes ([docs/authors_implementation.md](../docs/authors_implementation.md), "Augmentation").

# %%
fig, blank = report.augmentation_grid(data)
report.save_figure(fig, figures_dir, f'augmentation_{pairs[0][0]}')
print({k: f'{v:.1f}% blank' for k, v in blank.items()})


# %% [markdown]
# ## Takeaway
#
# Written from the findings table below (so the two cannot disagree).

# %%
claims = report.diagnosis_findings(df, splits, ns_list)
report.takeaway(claims)

# %% [markdown]
# ## Findings
#
# Each claim is judged by the package's rule ([docs/verdicts.md](../docs/verdicts.md#the-rule)), at the final round: the difference A - B with a 95 % interval, paired by seed where the two arms share each seed's labeled set (Welch's interval where they do not), Holm-corrected over a table's family; *held* when the interval lies above zero, *not held* below, *within noise* when it holds zero; fewer than three seeds give no verdict, and a claim whose runs are not in `results/` is *not run*. The claims rest on the seeds this notebook trains (0-2 by default); a claim given more seeds later is decided by its confirmation on fresh seeds, which this notebook shows where it has one.

# %% tags=["nbval-check-output"]
claims
