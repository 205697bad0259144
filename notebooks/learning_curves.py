# %% [markdown]
# # Figures 5, 7, 8: learning curves per partition
#
# How Table 1's accuracies are reached: test accuracy per round of Table 1's runs (reused), one panel per partition, mean over seeds and a band of one standard deviation. In every panel SemiFL, FedAvg + FixMatch and supervised FedAvg (HeteroFL) of that partition, and the two centralized baselines, which have one run for every partition: Partially Supervised as a curve (it trains for the rounds of the x axis), Fully Supervised as a reference line at its final accuracy (it trains for its own 10 epochs). Centralized FixMatch (one model on the labels and every client image pooled) is drawn in the IID panel only, the partition its run is stored under. The paper's Figures 5, 7 and 8 show the same for CIFAR-10, SVHN and CIFAR-100.

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
methods = []               # methods of your own to add, e.g. ['semifl-prox'] (docs/adding_a_method.md)


# %%
from semifl_core import report
from semifl_core.report import paper

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %%
methods = report.check_methods(methods)
df = report.table1_runs(profile, pairs, seed_list, results_dir, device, rounds, methods)
print(report.runs_summary(df))

# %% [markdown]
# ## Test accuracy per round, per partition

# %%
c = report.curves(df)
cb = report.with_baselines(c, paper.PARTITIONS)
for ds, n in pairs:
    d = cb[(cb.dataset == ds) & (cb.num_supervised == n)]
    fig = report.lineplot_grid(
        d, 'test_acc', hue='method', col='partition', ylabel='test accuracy (%)',
        refs=('Fully Supervised',), height=3.4, wrap=2,
        title=f'Learning curves ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')
    report.save_figure(fig, figures_dir, f'learning_curves_{ds}_{n}')


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %% tags=["definitions"]
import pandas as pd

from semifl_core.methods import PARTIALLY_SUPERVISED, SEMIFL
from semifl_core.report import paper
from semifl_core.report.claims import pair_prefix, claims as claims_table
from semifl_core.report.configs import label_of
from semifl_core.report.paper import PARTITIONS
from semifl_core.report.rule import above
from semifl_core.report.tables import accuracy, mean_std


def learning_curve_claims(df, c, pairs) -> pd.DataFrame:
    """Per (dataset, N_S) pair and partition: SemiFL's accuracy rises over training (its runs' last evaluated
    round against their first, paired by seed) and SemiFL ends above Partially Supervised (final round)."""
    items = []
    for ds, n in pairs:
        pre = pair_prefix(pairs, ds, n)
        part = accuracy(df, ds, n, label_of(PARTIALLY_SUPERVISED), metric="final_acc")
        for p in PARTITIONS:
            d = c[(c.dataset == ds) & (c.num_supervised == n) & (c.method == label_of(SEMIFL))
                  & (c.partition == p)]
            d = d.dropna(subset=["test_acc"]).sort_values("seed")
            first, last = ({int(s): v for s, v in zip(e.seed, e.test_acc)}   # the same run's two rounds: paired
                           for e in (d[d["round"] == d["round"].agg(f)] for f in ("min", "max")))
            final = accuracy(df, ds, n, label_of(SEMIFL), p, metric="final_acc")
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: SemiFL's accuracy rises over training (last round above first)",
                 above(last, first),
                 f"first round {mean_std(first.values())} -> last round {mean_std(last.values())}" if len(d)
                 else "no evaluations"),
                (pre + f"{pn}: SemiFL ends above Partially Supervised (final round)", above(final[2], part[2]),
                 f"{final[1]} vs {part[1]}"),
            ]
    return claims_table(items)


# %%
claims = learning_curve_claims(df, c, pairs)
report.left_out(methods, "The claims", "they are the paper's about SemiFL; the curves above draw every method")
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
