# %% [markdown]
# # Table 1: SemiFL against the baselines and the SSFL methods
#
# **The question.** With a few labels at the server and many unlabeled clients, does SemiFL beat training on those labels alone (*Partially Supervised*), and how much of the gap to training on every label (*Fully Supervised*) does it close, under each partition of the clients' data? The paper's answer, on CIFAR-10 with 250 labels, a WResNet-28-2 and 800 rounds: SemiFL closes 87 % of the gap under IID and 33-56 % under Non-IID (the paper's Table 1 means).
#
# The paper's main table: test accuracy of SemiFL, of FedAvg + FixMatch (the vanilla combination) and of supervised FedAvg with every client labeled (the paper's HeteroFL row) under four partitions of the clients' data (Non-IID K=2, Dir(0.1), Dir(0.3), IID), beside the centralized baselines: *Partially Supervised* (the N_S labels alone, with SemiFL's server budget) and *Fully Supervised* (every label, for the profile's length), and centralized FixMatch. Ours are the best round's test accuracy, as the paper reports, and the final round's, which the claims judge (as the README does); mean (population std) n=seeds on Fashion-MNIST with the `small` profile's CNN and 30 rounds.
#
# **Fixed before the runs.** The committed runs' profile: `small`, sized by a rule written down before SemiFL was run on it (docs/profiles.md, "The small profile: how it was sized"): N_S=100, the 16-32-64 CNN, 100 clients, 10 active a round, client and server E=5, 30 rounds, every other value from the paper's Table 4; seeds 0-2, trained on a 2-core CPU (torch 2.14.1), two runs at a time with one thread each. The study's goal: at least half the gap under IID, more than zero under every partition, outside the seeds' spread. The rule fixed then judged by the separation of the two means by the two seed spreads together; the package has since replaced it by the interval rule, which the claims below use ([docs/verdicts.md](../docs/verdicts.md#what-changed)). The gap goal is judged in [the horizon notebook](horizon.ipynb) (its claim 'SemiFL closes at least half of the Partially -> Fully gap', per training length).
#
# The column *paper (CIFAR-10, N_S=250)* quotes the paper's numbers (`semifl_core/report/paper.py`; its parentheses hold standard errors over 4 seeds): CIFAR-10 with WResNet-28-2 and 800 rounds, not this run. The paper's rows that the package does not run (the other centralized SSL methods, FedMatch, FedRGD) are listed apart, below ours. A method of your own joins the table, its claims and the takeaway with the parameter `methods` (`papermill ... -y "methods: [semifl-prox]"`; docs/adding_a_method.md), its paper cells empty.

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
fields = {}                # their own fields' values, e.g. {'prox_mu': 0.1}


# %%
from semifl_core import report

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %%
methods = report.check_methods(methods)
df = report.table1_runs(profile, pairs, seed_list, results_dir, device, rounds, methods, fields)
print(report.runs_summary(df))

# %% [markdown]
# ## How the paper-only rows and the claims are built
#
# Table 1 itself (`report.table1`) and the gap table (`report.gap_table`) are shared with the horizon notebook and stay in `semifl_core/report/tables.py`. This notebook's own: the paper's rows it does not run, and its claims, each judged at the final round by `above` (`semifl_core/report/rule.py`), a claim made for every partition by `every`.

# %% tags=["definitions"]
import pandas as pd

from semifl_core.methods import (FEDAVG_FIXMATCH, FEDAVG_SUPERVISED, FULLY_SUPERVISED, METHODS,
                                 PARTIALLY_SUPERVISED, SEMIFL)
from semifl_core.report import paper
from semifl_core.report.claims import pair_prefix, claims as claims_table
from semifl_core.report.configs import label_of
from semifl_core.report.paper import IID, NON_IID_K2, PARTITIONS
from semifl_core.report.rule import above, every
from semifl_core.report.tables import accuracy, paper_cell


def table1_paper_only(ds, n) -> pd.DataFrame:
    """The rows of the paper's Table 1 that the package does not run (the centralized SSL methods but FixMatch,
    FedMatch and FedRGD per partition): the paper's number only, at the paper's (dataset, N_S) for (ds, n)."""
    pds, pn = paper.paper_column_for(ds, n)
    rows = [{"group": "SSL (centralized)", "method": m, "paper": paper.table1(m, None, pds, pn)}
            for m in paper.TABLE1_SSL if m != "FixMatch"]
    rows += [{"group": paper.PARTITION_NAMES[part], "method": m, "paper": paper.table1(m, part, pds, pn)}
             for part in PARTITIONS for m in ("FedMatch", "FedRGD")]
    return pd.DataFrame(rows).assign(paper=lambda d: d.paper.map(paper_cell)).rename(
        columns={"paper": paper.label(pds, pn) + ", not run here"})


def table1_claims(df, pairs, methods=()) -> pd.DataFrame:
    """Table 1's claims, judged at the final round as the README's headline is (each claim says so; the table
    shows the best round too, as the paper reports it); `methods`: for each method added, that it beats
    Partially Supervised and SemiFL (under every partition, if federated)."""
    items = []
    for ds, n in pairs:
        pre = pair_prefix(pairs, ds, n)
        acc = lambda m, p=None: accuracy(df, ds, n, m, p, "final_acc")
        semi, fix, het = ({p: acc(label_of(m), p) for p in PARTITIONS} for m in (SEMIFL, FEDAVG_FIXMATCH,
                                                                                 FEDAVG_SUPERVISED))
        part, full = acc(label_of(PARTIALLY_SUPERVISED)), acc(label_of(FULLY_SUPERVISED))
        ev = lambda d: ", ".join(f"{paper.PARTITION_NAMES[k]}: {v[1]}" for k, v in d.items())
        items += [
            (pre + "SemiFL beats Partially Supervised under every partition (final round)",
             every(above(semi[p][2], part[2]) for p in PARTITIONS),
             f"SemiFL {ev(semi)}; Partially Supervised {part[1]}"),
            (pre + "SemiFL beats FedAvg + FixMatch (vanilla SSFL) under every partition (final round)",
             every(above(semi[p][2], fix[p][2]) for p in PARTITIONS),
             f"SemiFL {ev(semi)}; FedAvg+FixMatch {ev(fix)}"),
            (pre + "FedAvg + FixMatch stays below Partially Supervised under every partition (final round)",
             every(above(part[2], fix[p][2]) for p in PARTITIONS),
             f"FedAvg+FixMatch {ev(fix)}; Partially Supervised {part[1]}"),
            (pre + "Fully Supervised stays above SemiFL under every partition (final round)",
             every(above(full[2], semi[p][2]) for p in PARTITIONS),
             f"Fully Supervised {full[1]}; SemiFL {ev(semi)}"),
            (pre + "SemiFL beats supervised FL (HeteroFL row) under Non-IID, K=2 (final round)",
             above(semi[NON_IID_K2][2], het[NON_IID_K2][2]),
             f"SemiFL {semi[NON_IID_K2][1]} vs HeteroFL {het[NON_IID_K2][1]}"),
            (pre + "SemiFL degrades with label skew: IID above Non-IID K=2 (final round)",
             above(semi[IID][2], semi[NON_IID_K2][2]), f"SemiFL {ev(semi)}"),
        ]
        for m in methods:
            name = label_of(m)
            if not METHODS[m].federated:
                own = acc(name)
                items.append((pre + f"{name} beats Partially Supervised (final round)", above(own[2], part[2]),
                              f"{name} {own[1]}; Partially Supervised {part[1]}"))
                continue
            own = {p: acc(name, p) for p in PARTITIONS}
            items += [(pre + f"{name} beats Partially Supervised under every partition (final round)",
                       every(above(own[p][2], part[2]) for p in PARTITIONS),
                       f"{name} {ev(own)}; Partially Supervised {part[1]}"),
                      (pre + f"{name} beats SemiFL under every partition (final round)",
                       every(above(own[p][2], semi[p][2]) for p in PARTITIONS),
                       f"{name} {ev(own)}; SemiFL {ev(semi)}")]
    return claims_table(items)


# %% [markdown]
# ## Table 1: ours beside the paper's
#
# Every row under every partition: ours at the best round (as the paper reports) and at the final round, mean (population std) n=seeds, beside the paper's CIFAR-10 column (its numbers, not this run). A row whose runs are not committed reads *not run*.

# %% tags=["nbval-check-output"]
for ds, n in pairs:
    display(report.table1(df, ds, n, methods))

# %% [markdown]
# The paper's rows that are not run here (its numbers only):

# %%
for ds, n in pairs:
    display(table1_paper_only(ds, n))

# %% [markdown]
# ## How much of the gap SemiFL closes
#
# Per partition, computed seed by seed against the same seed's baselines: SemiFL - Partially Supervised (points) and the share of the Partially -> Fully Supervised gap that SemiFL closes (%, 100 = all of it), at the final and at the best round, beside the paper's share from its Table 1 means.

# %% tags=["nbval-check-output"]
for ds, n in pairs:
    display(report.gap_table(df, ds, n))
report.left_out(methods, "The gap table", "it is the paper's claim about SemiFL; Table 1 above has their rows")


# %% [markdown]
# ### Why the final round can be below the best
#
# The paper reports each run's best round; the claims read the final one, because a run that peaks and then falls ends where it falls. The learning_curves notebook draws each run per round; the gap table above shows how far final and best are apart here. Where SemiFL ends below its best, a reading of the runs' metrics (not a claim fixed before the runs): late in the run the server's fine-tune loss on its labels is higher under SemiFL than under Partially Supervised with the same labels and steps, so the aggregate the clients return is pulled away from the labeled data faster than five server epochs pull it back; and the clients' pseudo-labels are not wrong in the usual sense (most labels above the threshold are right), but only a small share of the client images pass it. The diagnosis notebook measures where in a round the accuracy is lost.

# %% [markdown]
# ## Final words: seeds 0-2 and the confirmation on fresh seeds
#
# At 30 rounds, 'SemiFL below Partially Supervised under Non-IID K=2' (at `long`: 'SemiFL above Partially Supervised under IID') was given more seeds by the seed plan because it looked close at seeds 0-2; those seeds chose it, so they cannot confirm it. A claim so chosen is judged again on fresh seeds alone (100 and up), in one family with Holm's correction, by a plan fixed before their runs, or, where the plan could not give it a fair test within eight seeds, reads *not confirmed* ([docs/verdicts.md](../docs/verdicts.md#the-confirmation)). This is its final word (Fashion-MNIST, 100 labels, committed runs). The table also shows the 30-round IID claim, which was given no more seeds and keeps its seeds 0-2 reading. The table is also written to `results/claims/table1.csv`: the README's headline table reads its rows from there.

# %% tags=["nbval-check-output"]
R = rounds or report.profile(profile).rounds
report.confirmation.frame([f"SemiFL above Partially Supervised, R={R}, {p}" for p in ("IID", "Non-IID, K=2")],
                          save_as="table1", results_dir=results_dir)


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %%
claims = table1_claims(df, pairs, methods)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing. A claim given more seeds after seeds 0-2 were seen is decided by its confirmation on fresh seeds, shown above.

# %% tags=["nbval-check-output"]
claims
