# %% [markdown]
# # Table 3: sBN statistics from the server only vs from server and clients
#
# SemiFL with static batch-norm statistics computed from the server's labeled data only, or from the server and all clients, under Non-IID K=2 and IID.
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
df = report.run_pairs(report.table3_configs, profile, pairs, seed_list, results_dir, device, rounds)
print(report.runs_summary(df))

# %% [markdown]
# ## How the table and the claims are built
#
# The table: per sBN source and ablation partition, the runs' best round, mean (population std) n=seeds, beside the paper's number (`paper.TABLE3`, quoted). The claims: per partition, 'server only not worse than server and clients' at the final round by `not_worse` (`semifl_core/report/rule.py`), paired by seed.

# %% tags=["definitions"]
import pandas as pd

from semifl_core.report import paper
from semifl_core.report.claims import FINAL, pair_prefix, claims as claims_table
from semifl_core.report.paper import ABLATION_PARTITIONS
from semifl_core.report.rule import not_worse
from semifl_core.report.tables import mean_std, paper_cell, seeded, select


def table3(df, ds, n) -> pd.DataFrame:
    """Table 3's two rows (sBN statistics from the server only, from server and clients) at their best round, per
    ablation partition the paper's number beside ours."""
    pds, pn_ = paper.paper_column_for(ds, n)
    pl = paper.label(pds, pn_)
    rows = []
    for src, name in (("server", "server only"), ("all", "server and clients")):
        row = {"sBN statistics": name}
        for part in ABLATION_PARTITIONS:
            pn = paper.PARTITION_NAMES[part]
            row[f"{pn}: {pl}"] = paper_cell(paper.TABLE3[src].get((pn_, part)))
            row[f"{pn}: this run"] = mean_std(select(df, ds, n, sbn_source=src, partition=part).best_acc)
        rows.append(row)
    return pd.DataFrame(rows)


def table3_claims(df, pairs) -> pd.DataFrame:
    """The paper: sBN statistics from the server only are about as good as from server and clients; judged as
    the one-sided claim 'server only not worse than server and clients' (rule.not_worse, paired by seed:
    both arms share the seed's labeled set), at the final round."""
    items = []
    for ds, n in pairs:
        for part in ABLATION_PARTITIONS:
            s = seeded(select(df, ds, n, sbn_source="server", partition=part), FINAL)
            a = seeded(select(df, ds, n, sbn_source="all", partition=part), FINAL)
            evidence = f"server {mean_std(s)} vs all {mean_std(a)}"
            claim = (f"{paper.PARTITION_NAMES[part]}: sBN statistics from the server only are not worse than "
                     "from server and clients (final round)")
            items.append((pair_prefix(pairs, ds, n) + claim, not_worse(s, a), evidence))
    return claims_table(items)


# %% [markdown]
# ## Table 3: ours beside the paper's (best round)

# %% tags=["nbval-check-output"]
for ds, n in pairs:
    display(table3(df, ds, n))


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %%
claims = table3_claims(df, pairs)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# The paper's claim is one-sided: sBN statistics from the server only are *not worse than* from server and clients. It is judged on the 95 % interval of A - B (server only minus server and clients, paired by seed: both arms share the seed's labeled set): *not held* when the interval lies below zero, *held* when it lies above, and *within noise* when it holds zero. Within noise is not 'not worse': no loss was found, and the interval's lower end is the largest loss the seeds leave open (without a margin fixed before the runs, a loss not found is not a loss ruled out). The evidence gives both arms. Fewer than three seeds give no verdict, and a claim whose runs are not in `results/` is *not run*.

# %% tags=["nbval-check-output"]
claims
