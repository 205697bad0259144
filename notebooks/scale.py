# %% [markdown]
# # Scale study: where does SemiFL's effect hold?
#
# **The question.** At the `small` profile SemiFL does not beat Partially Supervised (the table1 notebook). Is that the profile's choice of one factor, or does the effect fail to appear anywhere near it? First the rule that sized the `small` profile and the measurements it used (supervised baselines and the CPU budget only; fixed before SemiFL ran on the profile). Then SemiFL - Partially Supervised and the fraction of the Partially -> Fully Supervised gap that SemiFL closes, varying one factor at a time around the profile: N_S (40, 100, 250, 1000), client epochs E (1 against 5), rounds (5x the profile's, the cosine over all of them) and model width (the cnn-w2 CNN, with its own Partially and Fully Supervised runs), IID, seeds 0-2. The paper's points (CIFAR-10, SVHN, CIFAR-100; WResNets, 800 rounds) are drawn beside, labeled as the paper's.
#
# **How its tables read** (the paper's numbers, the two baselines, mean (std) n, the verdicts): [README](../README.md#the-notebooks).

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
from semifl_core import report

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)


# %% [markdown]
# ## The sizing rule: training length, rounds and N_S
#
# The rule was written down and applied before SemiFL was run on the profile, from the supervised baselines and the CPU budget only ([docs/profiles.md](../docs/profiles.md) gives it with the measurements it was first applied to). Recomputed here from the committed runs: Fully Supervised's accuracy per training length and the length E_F the rule picks (rule 1), then the rounds that give the active clients as many sample-epochs (rule 2).

# %% tags=["definitions"]
import pandas as pd

from semifl_core import config
from semifl_core.methods import FULLY_SUPERVISED
from semifl_core.report.runs import make
from semifl_core.report.tables import mean_std


# Fully Supervised trained for 5, 10 and 20 epochs with the profile's recipe (batch 10): the rule takes the
# shortest within 0.5 points of the next. The old recipe (batch 250, which is not faster per epoch on a CPU) is
# shown beside.
FSL_SIZING_EPOCHS = {"small": (5, 10, 20), "paper": (5, 10, 20), "smoke": (1, 2)}
FSL_OLD_RECIPE = {"small": (250, (10, 20, 40))}


def fsl_sizing_configs(p, ds) -> dict:
    base = make(p, ds, config.profile(p, ds).num_supervised, algorithm=FULLY_SUPERVISED)
    out = {f"batch {base.server_batch}, {e} epochs": base.replace(rounds=e) for e in FSL_SIZING_EPOCHS[p]}
    if p in FSL_OLD_RECIPE:
        batch, lengths = FSL_OLD_RECIPE[p]
        out.update({f"batch {batch}, {e} epochs": base.replace(rounds=e, server_batch=batch) for e in lengths})
    return out


def fsl_plateau(df, batch: int) -> tuple[pd.DataFrame, int]:
    """Fully Supervised accuracy per recipe and training length (fsl_sizing_configs' runs), and the rule's E_F
    for the profile's batch: the shortest length whose mean final accuracy is within 0.5 points of the next
    (twice as long)."""
    if df.empty:
        return pd.DataFrame(columns=["batch", "epochs", "accuracy", "n", "gain of doubling"]), None
    d = df.assign(batch=df.label.str.extract(r"batch (\d+)")[0].astype(int),
                  epochs=df.label.str.extract(r"(\d+) epochs")[0].astype(int))
    rows = []
    for (b, e), g in d.groupby(["batch", "epochs"]):
        rows.append({"batch": b, "epochs": e, "accuracy": mean_std(g.final_acc), "n": len(g),
                     "_mean": g.final_acc.mean()})
    t = pd.DataFrame(rows)
    # accuracies are 0.01 steps
    t["gain of doubling"] = (t.groupby("batch")._mean.shift(-1) - t._mean).round(2)
    mine = t[t.batch == batch]
    ok = mine[mine["gain of doubling"] <= 0.5]
    chosen = int(ok.epochs.iloc[0]) if len(ok) else int(mine.epochs.iloc[-1])
    return t.drop(columns="_mean"), chosen


# %%
# The rule (docs/profiles.md, 'The small profile: how it was sized'):
# (1) E_F = the shortest Fully Supervised training (10/20/40 epochs) within 0.5 points of twice
#     as long;
# (2) rounds R = the smallest multiple of 10 with R*C*N_U*E >= E_F*N;
# (3) N_S = the largest of 40/100/250/1000 with Fully - Partially Supervised >= 15 points (3 seeds);
# (4) check: one SemiFL run <= about 10 minutes on 2 cores.
ds = pairs[0][0]
fsl = report.run_all(fsl_sizing_configs(profile, ds), seed_list[:2], results_dir, device)
fsl_batch = report.profile(profile, ds, algorithm='fully-supervised').server_batch
plateau, fsl_epochs = fsl_plateau(fsl, fsl_batch)
display(plateau)
print('rule (1): E_F =', fsl_epochs, 'epochs')

# %% tags=["definitions"]
import math


def rounds_rule(cfg, fsl_epochs: int, train_size: int) -> int:
    """(b): the smallest multiple of 10 rounds with R * C * N_U * E >= E_F * N (client sample-epochs at least
    Fully Supervised's), N_U = the client pool of the IID split."""
    if fsl_epochs is None:   # no Fully Supervised sizing runs
        return None
    n_u = (train_size - cfg.num_supervised) // cfg.num_clients * cfg.num_clients
    need = fsl_epochs * train_size / (cfg.active_rate * n_u * cfg.local_epochs)
    return int(math.ceil(need / 10) * 10)


# %% tags=["nbval-check-output"]
cfg = report.make(profile, ds, report.profile(profile, ds).num_supervised, rounds)
r = rounds_rule(cfg, fsl_epochs, report.TRAIN_SIZE[ds])
print(f'rule (2): R = {r} rounds; the profile has {cfg.rounds}')

# %% [markdown]
# ## The scale study's runs

# %%
df = report.run_all(report.scale_configs(profile, ds, cfg.num_supervised, rounds), seed_list,
                    results_dir, device)
print(report.runs_summary(df))

# %% tags=["definitions"]
from semifl_core.methods import PARTIALLY_SUPERVISED
from semifl_core.report.configs import label_of


def ns_rule(df, fsl_label=label_of(FULLY_SUPERVISED), min_gap: float = 15.0) -> tuple[pd.DataFrame, int]:
    """(a): Partially Supervised per N_S (label 'N_S=<n> | Partially Supervised') against Fully Supervised; the
    rule's N_S is the largest whose mean gap is at least min_gap points."""
    partially, fully = label_of(PARTIALLY_SUPERVISED), label_of(FULLY_SUPERVISED)
    fsl = df[df.label.str.endswith(fsl_label)].final_acc.mean()
    psl = df[df.label.str.endswith(partially)]
    t = psl.groupby("num_supervised").final_acc.agg(["mean", "count"]).reset_index()
    t[partially] = [mean_std(psl[psl.num_supervised == n].final_acc) for n in t.num_supervised]
    t[fully] = f"{fsl:.1f}"
    t["gap"] = (fsl - t["mean"]).round(1)
    ok = t[t.gap >= min_gap]
    chosen = int(ok.num_supervised.max()) if len(ok) else int(t.num_supervised.min()) if len(t) else None
    return t[["num_supervised", partially, "count", fully, "gap"]], chosen


# %% tags=["nbval-check-output"]
ns_table, ns = ns_rule(df[df.label.str.startswith('N_S=')])
display(ns_table)
print(f'rule (3): N_S = {ns}; the profile has {cfg.num_supervised}')

# %% [markdown]
# ## What each point costs (training minutes per run)

# %% tags=["definitions"]
from semifl_core.results import train_minutes


def cost_table(df) -> pd.DataFrame:
    """Training minutes per run (train_minutes, mean over seeds) by point and method: the CPU budget, rule (4).
    Runs trained in a sweep share the 2 cores with one other run (one thread each)."""
    d = df.assign(point=df.label.str.split(" | ", regex=False).str[0],
                  method=df.label.str.split(" | ", regex=False).str[1],
                  minutes=[train_minutes(p) for p in df.path])
    return d.pivot_table(index="point", columns="method", values="minutes", aggfunc="mean", sort=False).round(1)


# %% tags=["nbval-check-output"]
cost_table(df)

# %% [markdown]
# ## SemiFL against Partially Supervised at each point
#
# Final-round test accuracy (%), mean (population std) n=seeds; SemiFL - Partially Supervised (points) and the gap closed (%), seed by seed; the column *SemiFL above Partially* is the verdict on 'SemiFL ends above Partially Supervised' at that point. Within one N_S the two arms share each seed's labeled set and are paired by seed; across two N_S the labeled sets differ, so a claim that the gain grows with N_S is judged by Welch's interval.

# %% tags=["definitions"]
from semifl_core.methods import SEMIFL
from semifl_core.report.rule import above
from semifl_core.report.tables import rows_frame, gap_closed


def scale_points(df) -> pd.DataFrame:
    """One row per (point, seed): SemiFL, Partially and Fully Supervised final accuracy, the gain SemiFL -
    Partially Supervised and the gap closed (%)."""
    d = df.assign(point=df.label.str.split(" | ", regex=False).str[0],
                  method=df.label.str.split(" | ", regex=False).str[1])
    wide = d.pivot_table(index=["point", "seed"], columns="method", values="final_acc", sort=False)
    semi, psl, fsl = (label_of(m) for m in (SEMIFL, PARTIALLY_SUPERVISED, FULLY_SUPERVISED))
    wide = wide.reindex(columns=[semi, psl, fsl]).reset_index()   # a method not run: NaN
    wide["gain"] = wide[semi] - wide[psl]
    wide["closed"] = gap_closed(wide[semi], wide[psl], wide[fsl])
    return wide


def scale_table(df) -> pd.DataFrame:
    """Per point: SemiFL, Partially and Fully Supervised (final round, mean(std) over seeds, n), the gain
    SemiFL - Partially Supervised and the gap closed (%, computed seed by seed), with the verdict on 'SemiFL
    above Partially Supervised'. n counts the SemiFL runs in the store."""
    semi, psl, fsl = (label_of(m) for m in (SEMIFL, PARTIALLY_SUPERVISED, FULLY_SUPERVISED))
    rows = []
    for point, g in scale_points(df).groupby("point", sort=False):
        # NaN: a run not in the store
        v = {k: g[k].dropna().to_numpy() for k in (semi, psl, fsl, "gain", "closed")}
        by_seed = {k: dict(zip(g.seed, g[k])) for k in (semi, psl, "gain")}   # one N_S: paired by seed
        by_seed = {k: {int(s): x for s, x in d.items() if x == x} for k, d in by_seed.items()}
        rows.append({"point": point, "n": len(v[semi]), fsl: mean_std(v[fsl]), psl: mean_std(v[psl]),
                     semi: mean_std(v[semi]), "SemiFL - Partially": mean_std(v["gain"]),
                     "gap closed (%)": mean_std(v["closed"]),
                     "SemiFL above Partially": above(by_seed[semi], by_seed[psl]),
                     "_gain": v["gain"], "_closed": v["closed"], "_semi": v[semi], "_psl": v[psl],
                     "_by_seed": by_seed})
    return rows_frame(rows, ["point", "n", "SemiFL - Partially", "gap closed (%)", "_gain", "_closed", "_semi",
                         "_psl", "_by_seed"])


# %% tags=["nbval-check-output"]
table = scale_table(df)
table.drop(columns=[c for c in table if c.startswith('_')])

# %% [markdown]
# ## The gain and the gap closed, per point, beside the paper's
#
# Ours per point, and the paper's (CIFAR-10, SVHN, CIFAR-100 with WResNet-28s, 800 rounds, strong augmentation on 32x32 colour images), labeled as the paper's: a setting this CPU cannot reach, drawn for the direction of each factor, not its size.

# %% tags=["definitions"]
import numpy as np

from semifl_core.report import paper
from semifl_core.report.figures import colors, new_figure
from semifl_core.report.paper import IID, NON_IID_K2
from semifl_core.report.tables import paper_gap_points


def scale_figure(table, cfg):
    """Top: our gain SemiFL - Partially Supervised per point (mean and seed std). Bottom: the fraction of the gap
    closed, ours per point and the paper's per (dataset, N_S) under IID and Non-IID K=2 (each its own colour and
    marker)."""
    fig = new_figure(9.0)
    a, b = fig.subplots(2, 1, gridspec_kw=dict(height_ratios=[1, 1.25]))
    ours, iid, non_iid = colors(3)
    x = np.arange(len(table))
    for ax, col in ((a, "_gain"), (b, "_closed")):
        ax.errorbar(x, [v.mean() if len(v) else np.nan for v in table[col]],
                    yerr=[v.std() if len(v) else np.nan for v in table[col]], fmt="o", color=ours,
                    capsize=3, label=f"ours ({paper.DATASET_NAMES.get(cfg.dataset, cfg.dataset)}, {cfg.model})")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, table.point, rotation=30, ha="right")
    paper_pts = paper_gap_points()
    for i, (part, color, marker) in enumerate(((IID, iid, "s"), (NON_IID_K2, non_iid, "^"))):
        pp = paper_pts[paper_pts.partition == part]
        xs = len(table) + 0.5 + np.arange(len(pp)) + i * 0.15
        b.scatter(xs, pp.closed, marker=marker, color=color, label=f"paper, {paper.PARTITION_NAMES[part]}")
    ticks = [f"paper {d} {n}" for d, n in zip(paper_pts[paper_pts.partition == IID].dataset,
                                               paper_pts[paper_pts.partition == IID].num_supervised)]
    b.set_xticks(np.r_[x, len(table) + 0.5 + np.arange(len(ticks))], [*table.point, *ticks], rotation=30,
                 ha="right")
    a.set_ylabel("SemiFL - Partially\nSupervised (points)")
    b.set_ylabel("gap closed (%)")
    b.legend(loc="upper left", frameon=True)
    a.set_title("our gain (final round; seeds: mean and std)")
    b.set_title("fraction of the Partially -> Fully Supervised gap that SemiFL closes")
    return fig


# %%
fig = scale_figure(table, cfg)
report.save_figure(fig, figures_dir, f'scale_{ds}')


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %% tags=["definitions"]
from semifl_core.report.claims import claims as claims_table
from semifl_core.report.configs import SCALE_NS
from semifl_core.report.rule import at_least


def scale_claims(table, cfg) -> pd.DataFrame:
    """What the study shows, each verdict by rule.above on the seeds (at_least for the study's goal of half the
    gap)."""
    t = table.set_index("point")
    prof = f"N_S={cfg.num_supervised}"
    col = lambda k, c: t.loc[k, c] if k in t.index else np.array([])
    shown_ = lambda k, c: t.loc[k, c] if k in t.index else "not run"
    semi, psl = label_of(SEMIFL), label_of(PARTIALLY_SUPERVISED)
    # {seed: value}: points at one N_S share each seed's labeled set (paired); points at two N_S do not (Welch)
    by_seed = lambda k, c: t.loc[k, "_by_seed"][c] if k in t.index else {}
    items = [(f"At the profile ({prof}, IID) SemiFL is above Partially Supervised",
              above(by_seed(prof, semi), by_seed(prof, psl)),
              f"SemiFL {shown_(prof, semi)} vs Partially Supervised {shown_(prof, psl)}"),
             ("At the profile SemiFL closes at least half of the gap (the study's goal)",
              at_least(col(prof, "_closed"), 50.0), f"gap closed {mean_std(col(prof, '_closed'), '%')}")]
    ran = [m for m in SCALE_NS if len(col(f"N_S={m}", "_gain"))] or [SCALE_NS[-1], SCALE_NS[0]]
    for name, a, b in ((f"more rounds ({5 * cfg.rounds} vs {cfg.rounds})", f"rounds={5 * cfg.rounds}", prof),
                       ("more local epochs (E=5 vs E=1)", prof, "E=1.0"),
                       ("a wider model (cnn-w2 vs cnn)", "model=cnn-w2", prof),
                       (f"more labels (N_S={max(ran)} vs {min(ran)}, the extremes with SemiFL runs)",
                        f"N_S={max(ran)}", f"N_S={min(ran)}")):
        same_labels = not (a.startswith("N_S=") and b.startswith("N_S="))
        gains = ((by_seed(a, "gain"), by_seed(b, "gain")) if same_labels
                 else (col(a, "_gain"), col(b, "_gain")))
        items.append((f"The gain SemiFL - Partially Supervised grows with {name}", above(*gains),
                      f"gain {shown_(a, 'SemiFL - Partially')} vs {shown_(b, 'SemiFL - Partially')}"))
    return claims_table(items)


# %%
claims = scale_claims(table, cfg)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
