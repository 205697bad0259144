# %% [markdown]
# # Table 5 and Figure 9: local epochs E, global momentum beta_g, mix loss
#
# The paper compares E=1 with its E=5; here the reduced E is the profile's E divided by 5 (the `small` profile's E is the paper's 5, so the table's one column *E* is both; a profile with another E shows the paper's and its own). The row with the profile's E, beta_g=0.5 and the mix loss is SemiFL (Table 1's runs, reused). The learning curves are Figure 9: test accuracy per round of the four rows, mean over seeds and a band of one standard deviation.
#
# **How its tables read** (the paper's numbers, the two baselines, mean (std) n, the verdicts): [README](../README.md#the-notebooks).

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

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %%
df = report.run_pairs(report.table5_configs, profile, pairs, seed_list, results_dir, device, rounds)
print(report.runs_summary(df))

# %% [markdown]
# ## How the table is built
#
# Table 5's rows at this profile (`table5_rows`: the paper's E=1 against E=5 becomes E/5 against the profile's E), each at its best round per ablation partition, mean (population std) n=seeds, beside the paper's number (`paper.TABLE5`, quoted).

# %% tags=["definitions"]
import pandas as pd

from semifl_core.report import paper
from semifl_core.report.configs import table5_label, table5_rows
from semifl_core.report.tables import _ablation_columns


def table5(df, p, ds, n) -> pd.DataFrame:
    """Table 5's rows (E, beta_g, mixup) at profile p, at their best round, per ablation partition the paper's
    number beside ours; one E column where the profile's E is the paper's."""
    pl = paper.label(*paper.TABLE5_DATASET)
    rows = []
    for (e, bg, mx), key in zip(table5_rows(p, ds, n), paper.TABLE5):
        label = table5_label(e, bg, mx)
        row = {"E (paper)": key[0], "E (this run)": int(e) if float(e).is_integer() else e, "beta_g": bg,
               "mixup": "yes" if mx else "no"}
        rows.append(_ablation_columns(row, paper.TABLE5[key], pl, df, ds, n, label))
    out = pd.DataFrame(rows)
    if (out["E (paper)"] == out["E (this run)"]).all():   # the profile's E is the paper's: one column says both
        out = out.drop(columns="E (this run)").rename(columns={"E (paper)": "E"})
    return out


# %% [markdown]
# ## Table 5: ours beside the paper's (best round)

# %% tags=["nbval-check-output"]
for ds, n in pairs:
    display(table5(df, profile, ds, n))

# %%
c = report.curves(df)
for ds, n in pairs:
    d = c[(c.dataset == ds) & (c.num_supervised == n)]
    g = report.lineplot_grid(
        d, 'test_acc', hue='method', col='partition', ylabel='test accuracy (%)',
        title=f'Figure 9 ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')
    name = 'table5_curves' if len(pairs) == 1 else f'table5_curves_{ds}_{n}'
    report.save_figure(g, figures_dir, name)


# %% [markdown]
# ## How the claims are judged
#
# Per partition, three claims on the final round, each the full row (E, beta_g, mixup all as the profile's) against the row that changes one of them, by `above` (`semifl_core/report/rule.py`).

# %% tags=["definitions"]
from semifl_core.report.claims import FINAL, pair_prefix, claims as claims_table
from semifl_core.report.paper import ABLATION_PARTITIONS
from semifl_core.report.rule import above
from semifl_core.report.tables import accuracy


def table5_claims(df, p, pairs) -> pd.DataFrame:
    """Table 5's claims at profile p, per (dataset, N_S) pair and ablation partition, judged at the final round:
    fewer local epochs hurt, the mix loss helps, global momentum helps."""
    items = []
    for ds, n in pairs:
        pre = pair_prefix(pairs, ds, n)
        labels = [table5_label(*row) for row in table5_rows(p, ds, n)]
        low_e, no_mix, no_mom, full = labels
        for part in ABLATION_PARTITIONS:
            a = {l: accuracy(df, ds, n, l, part, FINAL) for l in labels}
            pn = paper.PARTITION_NAMES[part]
            items += [
                (pre + f"{pn}: fewer local epochs hurt ({low_e} below {full}) (final round)",
                 above(a[full][2], a[low_e][2]), f"{a[low_e][1]} vs {a[full][1]}"),
                (pre + f"{pn}: the mix loss helps ({full} above {no_mix}) (final round)",
                 above(a[full][2], a[no_mix][2]), f"{a[full][1]} vs {a[no_mix][1]}"),
                (pre + f"{pn}: global momentum helps ({full} above beta_g=0) (final round)",
                 above(a[full][2], a[no_mom][2]), f"{a[full][1]} vs {a[no_mom][1]}"),
            ]
    return claims_table(items)


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %%
claims = table5_claims(df, profile, pairs)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
