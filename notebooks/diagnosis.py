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
# Last, the spread that the labeled-set draw alone causes (split seeds 0-4, everything else fixed by seed 0). Verdicts by the package's rule (under *Findings* below). Accuracies are final-round test accuracies. One suspect was not fixed in advance: *no global momentum (beta_g=0)* was added after the first instrumented N_S=40 runs showed the aggregate losing most accuracy at the momentum step, so it tests a hypothesis the data suggested.

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
from semifl_core import report

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

# %% tags=["definitions"]
import pandas as pd

from semifl_core.report.configs import INSTRUMENTED
from semifl_core.report.runs import curves


ROUND_STAGES = [("acc_start", "global model at the start"),
                ("acc_client_mean", "client models (their mean accuracy)"),
                ("acc_average", "average of the client weights"), ("acc_aggregate", "after global momentum"),
                ("acc_finetuned", "after the server fine-tune")]


def instrumented_curves(df) -> pd.DataFrame:
    """Per-round metrics of the instrumented runs; a stage that never happened (no client above the threshold in
    any round: no client models) is a column of NaN."""
    c = curves(df[df.label == INSTRUMENTED])
    need = [k for k, _ in ROUND_STAGES] + ["server_loss_first", "server_loss_last", "label_ratio",
                                           "threshold_acc", "mix_acc", "round", "seed", "num_supervised"]
    return c.reindex(columns=list(c.columns) + [k for k in need if k not in c])


def stage_curves(df) -> pd.DataFrame:
    """Long table of the instrumented runs' accuracy at each stage of a round (round, stage, value, seed,
    N_S)."""
    c = instrumented_curves(df)
    cols = [k for k, _ in ROUND_STAGES]
    long = c.melt(id_vars=["round", "seed", "num_supervised"], value_vars=cols, var_name="stage",
                  value_name="acc")
    return long.assign(stage=long.stage.map(dict(ROUND_STAGES))).dropna(subset=["acc"])


# %%
long = stage_curves(df).assign(N_S=lambda d: 'N_S=' + d.num_supervised.astype(str))
fig = report.lineplot_grid(long, 'acc', hue='stage', col='N_S', ylabel='test accuracy (%)',
                           title=f'Accuracy at each stage of a round (profile {profile})')
report.save_figure(fig, figures_dir, f'diagnosis_stages_{pairs[0][0]}')

# %% [markdown]
# The change of test accuracy across each stage, averaged over the rounds of each half of training and over seeds (points); then, over the same rounds, the fine-tune's loss at its first and last step, the label ratio (fraction), and the accuracy of the fix set's (threshold accuracy) and the mix set's pseudo-labels (%).

# %% tags=["definitions"]
import numpy as np

from semifl_core.report.tables import rows_frame, mean_std


# The stages of a round as (name, accuracy after it, accuracy before it).
STAGE_STEPS = [("client training", "acc_client_mean", "acc_start"),
               ("averaging", "acc_average", "acc_client_mean"),
               ("global momentum", "acc_aggregate", "acc_average"),
               ("server fine-tune", "acc_finetuned", "acc_aggregate")]


def stage_halves(df):
    """The instrumented runs' rounds grouped by (N_S, half of training)."""
    c = instrumented_curves(df)
    half = np.where(c["round"] <= c["round"].max() / 2, "rounds 1-T/2", "rounds T/2-T")
    return c.assign(half=half).groupby(["num_supervised", "half"])


def stage_change(g, after, before) -> pd.Series:
    """Per seed, the mean change of test accuracy across one stage of a round."""
    return (g[after] - g[before]).groupby(g.seed).mean()


STAGE_PARTS = {"accuracy": ["N_S", "rounds", "start", *(name for name, _, _ in STAGE_STEPS)],
               "pseudo-labels": ["N_S", "rounds", "fine-tune loss, first -> last step", "label ratio",
                                 "threshold accuracy", "mix-label accuracy"]}


def stage_table(df, part=None) -> pd.DataFrame:
    """Where a round loses accuracy: the change at each stage, averaged over rounds (first half and second half
    of training) and seeds, per N_S; then the fine-tune's loss and the pseudo-labels' measures. part: 'accuracy'
    or 'pseudo-labels' (STAGE_PARTS' columns: two tables that each fit a page) or None (all columns)."""
    rows = []
    for (n, h), g in stage_halves(df):
        row = {"N_S": n, "rounds": h, "start": mean_std(g.groupby("seed").acc_start.mean())}
        for name, after, before in STAGE_STEPS:
            row[name] = mean_std(stage_change(g, after, before))
        row["fine-tune loss, first -> last step"] = (f"{g.server_loss_first.mean():.2f} -> "
                                                     f"{g.server_loss_last.mean():.2f}")
        row["label ratio"] = f"{g.label_ratio.mean():.2f}"
        row["threshold accuracy"] = f"{g.threshold_acc.mean():.1f}"
        row["mix-label accuracy"] = f"{g.mix_acc.mean():.1f}"
        rows.append(row)
    out = rows_frame(rows, STAGE_PARTS["accuracy"])
    return out if part is None else out.reindex(columns=STAGE_PARTS[part])


# %% tags=["nbval-check-output"]
display(stage_table(df, 'accuracy'))
stage_table(df, 'pseudo-labels')

# %% [markdown]
# ## Which classes the fix set holds
#
# Per class, over the second half of training: its share of the fix set (10 % would be balanced) and its test accuracy (%) at the start of a round, after aggregation and after the fine-tune. If the confident pseudo-labels are a few classes, the classes missing from the fix set are the ones whose accuracy the clients' training and the aggregation take away, and the fine-tune on the server's few labels has to bring them back every round.

# %% tags=["definitions"]
def class_table(df, class_names) -> pd.DataFrame:
    """Per class, over the second half of training (instrumented runs): its share of the fix set (pseudo-labels
    above the threshold; 10% would be balanced), and its test accuracy at the start of a round, after aggregation
    and after the fine-tune."""
    c = instrumented_curves(df)
    c = c[c["round"] > c["round"].max() / 2]
    rows = []
    for n, g in c.groupby("num_supervised"):
        for k, name in enumerate(class_names):
            rows.append({"N_S": n, "class": name, "fix-set share (%)": 100 * g[f"fix_share_c{k}"].mean(),
                         "acc at start": g[f"start_acc_c{k}"].mean(),
                         "after aggregation": g[f"aggregate_acc_c{k}"].mean(),
                         "after fine-tune": g[f"acc_c{k}"].mean()})
    return pd.DataFrame(rows).round(1)


# %% tags=["nbval-check-output"]
class_table(df, data.class_names)

# %% [markdown]
# ## The suspects, each changed alone
#
# Final-round accuracy of each run against the profile's (same seeds); the column *above the profile* is the verdict on the claim that the row's run ends above the profile. At N_S=40 the collapse spreads the profile's seeds widely, so a suspect needs a large effect to be told from noise.

# %% tags=["definitions"]
from semifl_core.methods import PARTIALLY_SUPERVISED
from semifl_core.report.configs import SUSPECTS, label_of
from semifl_core.report.rule import above
from semifl_core.report.tables import seeded


def suspects_table(df, n) -> pd.DataFrame:
    """Each suspect's final accuracy against the instrumented profile run (same seeds), with the verdict on
    '<suspect> ends above the profile'; Partially Supervised beside."""
    d = df[df.num_supervised == n]
    base = seeded(d[d.label == INSTRUMENTED], "final_acc")
    rows = []
    for label in [INSTRUMENTED, label_of(PARTIALLY_SUPERVISED), *SUSPECTS]:
        v = seeded(d[d.label == label], "final_acc")
        rows.append({"N_S": n, "run": label, "n": len(v), "final accuracy": mean_std(v),
                     "difference to profile": (f"{v.mean() - base.mean():+.1f}" if len(v) and len(base)
                                               else "n/a"),
                     "above the profile": "-" if label == INSTRUMENTED else above(v, base)})
    return pd.DataFrame(rows)


# %% tags=["nbval-check-output"]
pd.concat([suspects_table(df, n) for n in ns_list], ignore_index=True)

# %% [markdown]
# ## How much the labeled-set draw alone moves a result
#
# Split seeds 0-4 (which images are labeled), everything else fixed; final-round accuracy (%). This is the spread that the server's choice of which few images to label causes on its own, to set beside the spread over seeds.

# %%
splits = pd.concat([report.run_all(report.split_configs(profile, ds, n, rounds), seed_list[:1],
                                   results_dir, device) for ds, _ in pairs for n in ns_list],
                   ignore_index=True)
print(report.runs_summary(splits))

# %% tags=["definitions"]
def split_table(splits) -> pd.DataFrame:
    """Per N_S and method: final accuracy for each split seed (the labeled-set draw alone), their mean(std) and
    range (max - min)."""
    d = splits.assign(method=splits.label.str.split(" | ", regex=False).str[0])
    rows = []
    for (n, method), g in d.groupby(["num_supervised", "method"], sort=False):
        g = g.assign(split=g.label.str.rsplit(" ", n=1).str[-1].astype(int)).sort_values("split")
        v = g.final_acc
        rows.append({"N_S": n, "method": method, **{f"split {k}": round(a, 1) for k, a in zip(g.split, v)},
                     "mean(std)": mean_std(v), "range": round(v.max() - v.min(), 1) if len(v) > 1 else "n/a"})
    return rows_frame(rows, ["N_S", "method", "mean(std)", "range"])


# %% tags=["nbval-check-output"]
split_table(splits)

# %% [markdown]
# ## The strong augmentation, looked at
#
# Training images and their weak and strong views (each draw with its own random operations), and the share of strong views that come out blank: the authors' pool applies every operation at full strength, and a translation of 100 pixels blanks a 32x32 image, while FixMatch's RandAugment draws random magnitudes ([docs/authors_implementation.md](../docs/authors_implementation.md), "Augmentation").

# %% tags=["definitions"]
import torch

from semifl_core import augment
from semifl_core.config import STRONG_AUGS
from semifl_core.report.figures import new_figure


def augmentation_grid(data, n_images: int = 8, draws: int = 3, seed: int = 0):
    """A figure of training images and their views (weak; the authors' strong RandAugment; FixMatch's), each draw
    with its own random ops, and the share of strong views that come out blank (one flat colour) over 10,000
    images per variant."""
    g = torch.Generator(data.x_train.device).manual_seed(seed)
    x = data.x_train[:n_images]
    rows = [("original", x), ("weak", augment.weak(x, data.flip, g))]
    for variant in STRONG_AUGS:   # the authors' RandAugment, then FixMatch's
        rows += [(f"strong ({variant}) #{d + 1}", augment.strong(x, data.flip, g, variant))
                 for d in range(draws)]
    side = 6.6 / n_images   # the images' width; their row names take the rest of MAX_WIDTH
    fig = new_figure(len(rows) * side * 1.05, layout=None)
    axes = fig.subplots(len(rows), n_images)
    fig.subplots_adjust(left=0.27, right=0.99, bottom=0.01, top=0.99, wspace=0.05, hspace=0.05)
    for r, (name, imgs) in enumerate(rows):
        for c in range(n_images):
            ax = axes[r, c]
            ax.imshow(imgs[c].permute(1, 2, 0).squeeze(-1).cpu().numpy(), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([]), ax.set_yticks([])
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center")
    many = data.x_train[:10000]
    blank = {}
    for variant in STRONG_AUGS:
        v = augment.strong(many, data.flip, g, variant).flatten(1)
        blank[variant] = 100 * (v.amax(1) == v.amin(1)).float().mean().item()
    return fig, blank


# %%
fig, blank = augmentation_grid(data)
report.save_figure(fig, figures_dir, f'augmentation_{pairs[0][0]}')
print({k: f'{v:.1f}% blank' for k, v in blank.items()})


# %% [markdown]
# ## Takeaway
#
# Written from the findings table below (so the two cannot disagree).

# %% tags=["definitions"]
from semifl_core.methods import SEMIFL
from semifl_core.report.rule import every


def diagnosis_findings(df, splits, ns_list) -> pd.DataFrame:
    """The diagnosis in claims form: per N_S, 'SemiFL ends above Partially Supervised', 'the stage of a round
    that loses most is <the one that does in the mean>' (held when each other stage loses less), and
    '<suspect> ends above the profile' for each suspect (rule.above), with the labeled-set spread
    beside."""
    items = []
    stages = stage_table(df)
    late_rounds = {n: g for (n, h), g in stage_halves(df) if h == "rounds T/2-T"}
    spread = split_table(splits)
    for n in ns_list:
        d = df[df.num_supervised == n]
        semi = seeded(d[d.label == INSTRUMENTED], "final_acc")
        part = seeded(d[d.label == label_of(PARTIALLY_SUPERVISED)], "final_acc")
        sp = spread[(spread.N_S == n) & (spread.method == label_of(SEMIFL))]
        n_splits = ((splits.num_supervised == n) & splits.label.str.startswith(f"{label_of(SEMIFL)} | ")).sum()
        items.append((f"N_S={n}: SemiFL ({mean_std(semi)}) ends above Partially Supervised ({mean_std(part)})",
                      above(semi, part), f"labeled-set draw alone moves SemiFL by {sp['range'].iloc[0]} points "
                      f"({n_splits} of split seeds 0-4 run)" if n_splits > 1
                      else "labeled-set spread: fewer than 2 splits run"))
        late = stages[(stages.N_S == n) & (stages.rounds == "rounds T/2-T")]
        if len(late):   # the stage that loses most in the mean, judged against each other stage (per seed)
            g = late_rounds[n]
            change = {name: stage_change(g, after, before) for name, after, before in STAGE_STEPS}
            # the same runs' stages: paired by seed (a stage that never happened: left out)
            change = {name: {int(s): x for s, x in v.dropna().items()}
                      for name, v in change.items() if v.notna().any()}
            worst = min(change, key=lambda k: np.mean(list(change[k].values()))) if change else None
            items.append((f"N_S={n}: the stage of a round that loses most test accuracy (second half of "
                          f"training) is {worst or 'not known'}",
                          every(above(v, change[worst]) for k, v in change.items() if k != worst) if worst
                          else "not run",
                          ", ".join(f"{name} {late[name].iloc[0]}" for name, _, _ in STAGE_STEPS)))
        table = suspects_table(df, n).set_index("run")
        for name in SUSPECTS:
            if name in table.index:
                row = table.loc[name]
                items.append((f"N_S={n}: {name} ends above the profile", row["above the profile"],
                              f"{row['final accuracy']} vs profile {table.loc[INSTRUMENTED, 'final accuracy']} "
                              f"(difference {row['difference to profile']})"))
    return pd.DataFrame(items, columns=["finding", "verdict", "evidence"])


# %%
claims = diagnosis_findings(df, splits, ns_list)
report.takeaway(claims)

# %% [markdown]
# ## Findings
#
# Each claim is judged at the final round, or over the second half of the rounds where it says so, by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing.

# %% tags=["nbval-check-output"]
claims
