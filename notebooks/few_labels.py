# %% [markdown]
# # Few labels: which pseudo-labels SemiFL's clients train on, and (FL)²
#
# **The question.** With few labels SemiFL's confident pseudo-labels (max probability >= tau = 0.95, Eq. 3) collapse onto a few classes and the run loses to Partially Supervised (the diagnosis notebook). Does another selection of the same global pseudo-labels avoid the collapse, and does it make SemiFL beat the labels alone? This notebook swaps Eq. (3)'s selection for three rules from later work and measures each inside SemiFL's alternate training, everything else at the profile (`semifl_core/methods/pseudo_labels.py`, field `pseudo_label_rule`):
#
# - **fixed**: the paper's rule (Eq. 3).
# - **class-balanced**: CBAFed's (CVPR 2023) per-class thresholds tau_c = min(p_c + 0.84 - std(p), tau) from the class shares p of the last round's confident pseudo-labels plus the labeled set (rare classes get a lower threshold).
# - **aligned**: ReMixMatch's distribution alignment: the probabilities times (labeled prior / the round's mean prediction), renormalized, then the fixed tau.
# - **client-adaptive**: (FL)²'s (NeurIPS 2024) client-specific adaptive threshold: per client, the mean max probability scaled per class by the class's mean probability over its maximum.
#
# Beside them, **(FL)²** itself as a method (`semifl_core/methods/fl2.py`): its client-adaptive pseudo-labels, sharpness-aware consistency on the high-confidence images (SAM, rho 0.1), learning-status-aware averaging, no mixup, client batch 32 (its Table 4); everything else SemiFL's.
#
# Setting: the `small` profile (Fashion-MNIST, the 16-32-64 CNN, 100 clients, 10 a round, E=5, 30 rounds), IID, at N_S=40 (4 labels a class, where the fixed rule collapses) and N_S=100 (the profile's), seeds 0-2; each rule judged against Partially Supervised and against the paper's fixed tau. **Fixed before any rule was run**: the rules, this measurement, and the rule for a verdict then, the separation of the two means by the two seed spreads together ([docs/verdicts.md](../docs/verdicts.md#what-changed)); the claims below judge by the interval rule that replaced it (under *Claims*). Accuracies are the final round's test accuracy, mean (population std) n=seeds; gap closed = (SemiFL - Partially) / (Fully - Partially), seed by seed. No paper reports these rules inside SemiFL: every number here is ours, and beyond the paper.

# %% [markdown]
# ## Parameters and runs

# %% tags=["parameters"]
profile = 'small'          # 'small' | 'long' | 'smoke' | 'paper'
seed = None                # one seed (e.g. -p seed 3) instead of `seeds`
seeds = [0, 1, 2]          # the committed results hold seeds 0, 1, 2
dataset = None             # None -> the profile's first dataset
device = 'auto'
results_dir = None         # None -> the repository's results/ (committed runs are reused)
figures_dir = None         # None -> the repository's figures/
rounds = None              # None -> the profile's number of rounds

# %%
from semifl_core import report
from semifl_core.report import configs

seed_list, pairs = report.notebook_setup(profile, seed, seeds, dataset, rounds, device,
                                         results_dir, figures_dir)
ds = pairs[0][0]
few_ns = [(ds, n) for n in (40, 100)] if profile in ('small', 'long') else pairs[:1]

# %%
df = report.run_pairs(report.few_label_configs, profile, few_ns, seed_list, results_dir, device,
                      rounds)
print(report.runs_summary(df))

# %% [markdown]
# ## The outcome: test accuracy per round, per rule
#
# SemiFL with each pseudo-label rule, (FL)², and Partially Supervised (the labels alone, SemiFL's server budget), at N_S=40 and N_S=100; mean over seeds and a band of one standard deviation. Fully Supervised (every label, its own 10 epochs) is the dashed reference line at its final accuracy.

# %% tags=["definitions"]
import numpy as np
import pandas as pd

from semifl_core.methods.pseudo_labels import FIXED, RULES
from semifl_core.report.configs import FIXED_INSTRUMENTED, few_label_rows, label_of
from semifl_core.report.runs import curves


FEW_LABEL_METRICS = {"test_acc": "test accuracy (%)", "largest_share": "largest class's share of the fix set",
                     "label_ratio": "Label Ratio (fraction)", "threshold_acc": "Threshold Accuracy (%)"}
FEW_LABEL_BOUNDS = {"test accuracy (%)": (0, 100), "largest class's share of the fix set": (0, 1),
                    "Label Ratio (fraction)": (0, 1), "Threshold Accuracy (%)": (0, 100)}


def few_label_curves(df) -> pd.DataFrame:
    """Long per-round measures of the few-label study: the outcome, test accuracy, of every rule's SemiFL runs
    (the fixed rule from its instrumented runs) and of the baselines, then the rules' pseudo-label measures: the
    largest class's share of the fix set, the label ratio (fix-set size / client images) and the fix set's
    pseudo-label accuracy; columns round, rule, seed, N_S ('N_S=<n>'), metric (FEW_LABEL_METRICS' names, in its
    order), value."""
    c = curves(df[df.method != FIXED])
    if c.empty:   # nothing trained yet (an empty store)
        return pd.DataFrame(columns=["round", "rule", "seed", "N_S", "metric", "value"])
    shares = [k for k in c.columns if k.startswith("fix_share_c")]
    c["largest_share"] = (c[shares].max(axis=1).where(c[shares].sum(axis=1) > 0) if shares
                          else np.nan)   # an empty fix set: NaN
    c = c.reindex(columns=list(c.columns) + [k for k in FEW_LABEL_METRICS if k not in c])
    c["rule"] = c.method.replace({FIXED_INSTRUMENTED: FIXED})
    long = c.melt(id_vars=["round", "rule", "seed", "num_supervised"], value_vars=list(FEW_LABEL_METRICS),
                  var_name="metric", value_name="value")
    long["metric"] = long.metric.map(FEW_LABEL_METRICS)
    long["N_S"] = "N_S=" + long.num_supervised.astype(int).astype(str)
    return long.drop(columns="num_supervised").dropna(subset=["value"])


# %%
cur = few_label_curves(df)
order = [*few_label_rows(), 'Partially Supervised', 'Fully Supervised']
data_name = report.paper.DATASET_NAMES.get(ds, ds)
fig = report.lineplot_grid(
    cur[cur.metric == 'test accuracy (%)'], 'value', hue='rule', col='N_S', hue_order=order,
    refs=('Fully Supervised',), ylabel='test accuracy (%)', height=3.6,
    title=f'Few labels: test accuracy per round ({data_name}, profile {profile})')
report.save_figure(fig, figures_dir, f'few_labels_{ds}')

# %% [markdown]
# ## The rules side by side
#
# Final and best round's test accuracy (%), SemiFL - Partially Supervised (points) and the gap closed (%), seed by seed, with the verdicts against Partially Supervised and against the paper's fixed rule.

# %% tags=["definitions"]
from semifl_core.methods import FULLY_SUPERVISED, PARTIALLY_SUPERVISED
from semifl_core.report.rule import above
from semifl_core.report.tables import gap_closed, mean_std


def few_label_table(df) -> pd.DataFrame:
    """Per N_S and pseudo-label rule, and (FL)^2 (df: run_pairs over few_label_configs, 'method' = the rule): the
    final and best accuracy, SemiFL - Partially Supervised and the gap closed (final round, seed by seed), and
    the verdicts (rule.above) against Partially Supervised and against the paper's fixed rule."""
    rows = []
    for n, at in df.groupby("num_supervised"):
        by = lambda m, metric="final_acc": at[at.method == m].set_index("seed")[metric]   # noqa: E731
        psl, fsl = by(label_of(PARTIALLY_SUPERVISED)), by(label_of(FULLY_SUPERVISED))
        for rule in few_label_rows():
            v = by(rule)
            both = pd.concat([v, psl, fsl], axis=1, join="inner").to_numpy(float).T
            rows.append({"N_S": n, "pseudo-label rule": rule, "SemiFL, final": mean_std(v),
                         "SemiFL, best": mean_std(by(rule, "best_acc")),
                         "SemiFL - Partially": mean_std(both[0] - both[1]),
                         "gap closed (%)": mean_std(gap_closed(*both)),
                         "beats Partially Supervised": above(v.to_dict(), psl.to_dict()),   # paired by seed
                         "beats the fixed rule": "-" if rule == FIXED else above(v.to_dict(),
                                                                                 by(FIXED).to_dict())})
        rows.append({"N_S": n, "pseudo-label rule": f"({label_of(PARTIALLY_SUPERVISED)})",
                     "SemiFL, final": mean_std(psl), "SemiFL, best": mean_std(by(label_of(PARTIALLY_SUPERVISED),
                                                                                    "best_acc"))})
    columns = ["N_S", "pseudo-label rule", "SemiFL, final", "SemiFL, best", "SemiFL - Partially",
               "gap closed (%)", "beats Partially Supervised", "beats the fixed rule"]
    return pd.DataFrame(rows, columns=columns).fillna("").set_index(["N_S", "pseudo-label rule"])


# %% tags=["nbval-check-output"]
few_label_table(df)

# %% [markdown]
# ## What each rule puts in the fix set
#
# Per round, over the active clients: the share of the fix set's largest class (1.0 = one class only), the label ratio (fix-set size over the clients' images) and the fix set's pseudo-label accuracy. Mean and a band of one std over seeds. The fixed rule's curves come from its instrumented runs (the diagnosis notebook's: `diagnostics=True` records the fix set's classes and trains as the plain run does on the same machine and kernels; the committed instrumented and plain runs were trained on different machines and part from round 1, so only these curves come from the instrumented runs: the label_skew notebook, "Which runs each table uses").

# %%
pseudo = cur[(cur.metric != 'test accuracy (%)') & cur.rule.isin(few_label_rows())]
fig = report.lineplot_grid(pseudo, 'value', hue='rule', col='N_S', row='metric',
                           hue_order=few_label_rows(),
                           ylabel={m: m for m in FEW_LABEL_METRICS.values()},
                           bounds=FEW_LABEL_BOUNDS, height=2.8,
                           title='What each rule puts in the fix set, per round')
report.save_figure(fig, figures_dir, f'few_labels_fixset_{ds}')

# %% [markdown]
# ## The authors' three details (N_S=40)
#
# Where the authors' code runs otherwise than ours, each alone (fields `mix_draws`, `shear_resample`, `cutout_size`), against the profile's SemiFL at N_S=40: the mix set drawn afresh at every read instead of once a round (Eq. 4 defines a set), bilinear shear instead of nearest, and CutoutConst's 40 px fixed instead of scaled with the image (35 px at 28x28). The column *above the profile* is the verdict on the claim that the row's detail ends above the profile's SemiFL. Whatever they read, ours stay the defaults (Eq. 4 defines the mix set as a set drawn once a round; the paper names neither image detail), so every committed run keeps its key ([docs/authors_implementation.md](../docs/authors_implementation.md)).

# %% tags=["definitions"]
from semifl_core.methods import SEMIFL
from semifl_core.report.runs import make

AUTHORS_DETAILS = {"mix set drawn at every read": dict(mix_draws="per-read"),
                   "bilinear shear": dict(shear_resample="bilinear"),
                   "Cutout 40 px": dict(cutout_size="fixed")}


def authors_details_configs(p, ds, n, rounds=None) -> dict:
    """{'authors' detail | SemiFL': Config}: SemiFL with one of AUTHORS_DETAILS."""
    return {f"{name} | {label_of(SEMIFL)}": make(p, ds, n, rounds, **over)
            for name, over in AUTHORS_DETAILS.items()}


# %%
n40 = min(n for _, n in few_ns)
details = report.run_all(authors_details_configs(profile, ds, n40, rounds), seed_list,
                         results_dir, device)

# %% tags=["definitions"]
from semifl_core.report.tables import seeded


def authors_details_table(df, base) -> pd.DataFrame:
    """Each of the authors' details (df: run_all over authors_details_configs, label 'detail | SemiFL') against
    the profile's SemiFL at the same N_S (base: its run_all rows): final and best accuracy, the difference and
    rule.above's verdict on '<detail> ends above the profile'."""
    rows, ours = [], seeded(base, "final_acc")
    for label, g in df.groupby("label", sort=False):
        v = seeded(g, "final_acc")
        rows.append({"the authors' detail": label.split(" | ")[0], "SemiFL, final": mean_std(v),
                     "SemiFL, best": mean_std(g.best_acc), "ours (profile), final": mean_std(ours),
                     "difference of means": (f"{v.mean() - ours.mean():+.1f}" if len(v) and len(ours)
                                             else "not run"),
                     "above the profile": above(v, ours)})
    columns = ["the authors' detail", "SemiFL, final", "SemiFL, best", "ours (profile), final",
               "difference of means", "above the profile"]
    return pd.DataFrame(rows, columns=columns).set_index("the authors' detail")


# %% tags=["nbval-check-output"]
base = df[(df.method == 'fixed') & (df.num_supervised == n40)]
authors_details_table(details, base)

# %% [markdown]
# ## Non-IID K=2: the two best rows at the profile's N_S
#
# The rule, fixed before any of these runs: the two rows other than the fixed rule (a rule inside SemiFL, or (FL)²) with the highest mean final accuracy at N_S=100 under IID, seeds 0-2 (`configs.best_two_rules`), run under Non-IID K=2 beside the fixed rule and Partially Supervised (whose runs Table 1 shares). Why a gain under IID would vanish under label skew is not measured here: the label_skew notebook measures it.

# %%
n_top = max(n for _, n in few_ns)
best = configs.best_two_rules(profile, ds, n_top, results_dir)
print(f'the two best rows at N_S={n_top}, IID:',
      best or 'not known yet (not every IID run of seeds 0-2 is in)')
noniid = (report.run_all(configs.few_label_noniid_configs(profile, ds, n_top, best), seed_list,
                         results_dir, device) if best else df.iloc[:0])

# %% tags=["definitions"]
from semifl_core.report.tables import seed_values


def few_label_noniid_table(df, best) -> pd.DataFrame:
    """The few-label follow-up under Non-IID K=2 (df: run_all over configs.few_label_noniid_configs): per row
    (the `best` rows, the fixed rule, Partially Supervised) the final accuracy and rule.above's verdicts against
    Partially Supervised and the fixed rule; a row not run says so."""
    columns = ["row", "final", "beats Partially Supervised", "beats the fixed rule"]
    if not best:
        return pd.DataFrame(columns=columns)
    df = df.assign(row=df.label.astype(str).str.split(" | ", regex=False).str[0])
    v = lambda r: seed_values(df, row=r)  # noqa: E731
    partial = label_of(PARTIALLY_SUPERVISED)
    psl, fixed = v(partial), v(FIXED)
    return pd.DataFrame([{"row": r, "final": mean_std(v(r)),
                          "beats Partially Supervised": above(v(r), psl) if r != partial else "-",
                          "beats the fixed rule": above(v(r), fixed) if r not in (FIXED, partial) else "-"}
                         for r in (*best, FIXED, partial)], columns=columns)


# %% tags=["nbval-check-output"]
noniid_table = few_label_noniid_table(noniid, best)
noniid_table


# %% [markdown]
# ## Final words: seeds 0-2 and the confirmation on fresh seeds
#
# 'SemiFL with the client-adaptive rule below Partially Supervised under Non-IID K=2' (N_S=100) was given more seeds by the seed plan because it looked close at seeds 0-2; those seeds chose it, so they cannot confirm it. A claim so chosen is judged again on fresh seeds alone (100 and up), in one family with Holm's correction, by a plan fixed before their runs, or, where the plan could not give it a fair test within eight seeds, reads *not confirmed* ([docs/verdicts.md](../docs/verdicts.md#the-confirmation)). This is its final word (Fashion-MNIST, 100 labels, committed runs). The table is also written to `results/claims/few_labels.csv`: the README's headline table reads its rows from there.

# %% tags=["nbval-check-output"]
report.confirmation.frame(["SemiFL, client-adaptive rule above Partially Supervised, R=30, Non-IID, K=2"],
                          save_as="few_labels", results_dir=results_dir)


# %% [markdown]
# ## Takeaway
#
# Written from the claims table below (so the two cannot disagree).

# %% tags=["definitions"]
from semifl_core.report.claims import claims as claims_table


def few_label_claims(df, ns, noniid=None) -> pd.DataFrame:
    """The few-label study's claims: per N_S in `ns`, the paper's rule and each other rule against Partially
    Supervised, and each other rule against the paper's (final round); a rule not run says so. `noniid`
    (the follow-up's few_label_noniid_table) adds its verdicts under Non-IID K=2."""
    items = []
    for n in ns:
        v = lambda m: seed_values(df, num_supervised=n, method=m)   # noqa: E731
        psl = v(label_of(PARTIALLY_SUPERVISED))
        for rule in few_label_rows():
            name = f"SemiFL with the {rule} rule" if rule in RULES else rule
            items.append((f"[N_S={n}] {name} beats Partially Supervised", above(v(rule), psl),
                          f"{mean_std(v(rule))} vs {mean_std(psl)}"))
            if rule != FIXED:
                items.append((f"[N_S={n}] {name if rule not in RULES else f'the {rule} rule'} beats SemiFL's "
                              "fixed tau", above(v(rule), v(FIXED)),
                              f"{mean_std(v(rule))} vs {mean_std(v(FIXED))}"))
    noniid = noniid if noniid is not None else pd.DataFrame(columns=["row", "final"])
    final = dict(zip(noniid["row"], noniid["final"]))
    for _, r in noniid.iterrows():
        for col, other in (("beats Partially Supervised", label_of(PARTIALLY_SUPERVISED)),
                           ("beats the fixed rule", FIXED)):
            if r[col] != "-":
                items.append((f"[Non-IID K=2, N_S={max(ns)}] {r['row']} beats "
                              f"{'the fixed rule' if other == FIXED else other}", r[col],
                              f"{r['final']} vs {final.get(other, 'not run')}"))
    return claims_table(items)


# %%
claims = few_label_claims(df, [n for _, n in few_ns], noniid_table)
report.takeaway(claims)

# %% [markdown]
# ## Claims
#
# Each claim is judged at the final round by [the package's rule](../docs/verdicts.md#the-rule), on the seeds this notebook trains (0-2 by default): *held* when the 95 % interval of A - B (paired by seed where the arms share each seed's labels) lies above zero, *not held* below, *within noise* when it holds zero; *not run* while its runs are missing. A claim given more seeds after seeds 0-2 were seen is decided by its confirmation on fresh seeds, shown above.

# %% tags=["nbval-check-output"]
claims
