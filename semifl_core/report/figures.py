"""Figures: saving them (png and pdf), line plots over rounds, the curves the figures draw (pseudo-label quality,
stages of a round, baselines copied into every panel), the scale study's figure and the augmentation grid."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import STRONG_AUGS
from . import paper
from .configs import BASELINES, TABLE2_VARIANTS
from .paper import IID, NON_IID_K2
from .runs import curves, repo_path, shown
from .tables import ROUND_STAGES, instrumented_curves, paper_gap_points


def save_figure(fig, figures_dir, name: str) -> list[str]:
    """Save a matplotlib/seaborn figure as figures_dir/name.png and .pdf (figures_dir None: the repository's
    figures/); returns the two paths."""
    if fig is None:
        return [f"{name}: no figure (no runs to draw)"]
    d = repo_path("figures", figures_dir)
    d.mkdir(parents=True, exist_ok=True)
    fig = getattr(fig, "figure", fig)   # accepts a seaborn FacetGrid
    paths = []
    for ext in ("png", "pdf"):
        p = d / f"{name}.{ext}"
        # no creation date in the pdf: a re-render of unchanged results leaves the file byte-identical
        fig.savefig(p, bbox_inches="tight", dpi=150 if ext == "png" else None,
                    metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(shown(p))
    return paths


def lineplot_grid(data: pd.DataFrame, y: str, hue: str, col: str, row=None, x: str = "round", ylabel=None,
                  title=None, height: float = 3.2):
    """seaborn relplot of y over rounds, one panel per col (and row), one line per hue, mean and a band of +-1
    std over seeds (seaborn shows no band when there is one seed). None when there is nothing to draw."""
    import seaborn as sns
    d = data.dropna(subset=[y])
    if d.empty:
        return None   # nothing to draw (no runs in the results store): save_figure says so
    g = sns.relplot(data=d, x=x, y=y, hue=hue, col=col, row=row, kind="line", errorbar="sd", height=height,
                    aspect=1.25, facet_kws=dict(sharey=False))
    g.set_axis_labels(x, ylabel or y)
    if title:
        g.figure.suptitle(title, y=1.03)
    return g


PSEUDO_METRICS = {"pseudo_acc": "Pseudo Accuracy", "threshold_acc": "Threshold Accuracy", "label_ratio": "Label Ratio"}


def pseudo_label_curves(df) -> pd.DataFrame:
    """Long per-round pseudo-label quality of the Table 2 variants (no baselines)."""
    runs = df[df.method.isin(list(TABLE2_VARIANTS.values()))]
    c = curves(runs)
    long = c.melt(id_vars=["round", "method", "seed", "partition", "dataset", "num_supervised"],
                  value_vars=[m for m in PSEUDO_METRICS if m in c.columns], var_name="metric", value_name="value")
    long["metric"] = long.metric.map(PSEUDO_METRICS)
    return long.dropna(subset=["value"])


def with_baselines(c: pd.DataFrame, partitions) -> pd.DataFrame:
    """Copy the centralized baselines' curves into every partition panel."""
    is_base = c.method.isin(BASELINES)
    base, fed = c[is_base], c[~is_base]
    return pd.concat([fed] + [base.assign(partition=p) for p in partitions], ignore_index=True)


def stage_curves(df) -> pd.DataFrame:
    """Long table of the instrumented runs' accuracy at each stage of a round (round, stage, value, seed, N_S)."""
    c = instrumented_curves(df)
    cols = [k for k, _ in ROUND_STAGES]
    long = c.melt(id_vars=["round", "seed", "num_supervised"], value_vars=cols, var_name="stage", value_name="acc")
    return long.assign(stage=long.stage.map(dict(ROUND_STAGES))).dropna(subset=["acc"])


def scale_figure(table, cfg):
    """Left: our gain SemiFL - Partially Supervised per point (mean and seed std). Right: the fraction of the gap
    closed, ours per point and the paper's per (dataset, N_S) under IID and Non-IID K=2."""
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw=dict(width_ratios=[1, 1.4]))
    x = np.arange(len(table))
    for ax, col, scale in ((a, "_gain", 1), (b, "_closed", 100)):
        ax.errorbar(x, [scale * v.mean() if len(v) else np.nan for v in table[col]],
                    yerr=[scale * v.std() if len(v) else np.nan for v in table[col]], fmt="o",
                    capsize=3, label=f"ours ({paper.DATASET_NAMES.get(cfg.dataset, cfg.dataset)}, {cfg.model})")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, table.point, rotation=30, ha="right")
    paper_pts = paper_gap_points()
    for i, part in enumerate((IID, NON_IID_K2)):
        pp = paper_pts[paper_pts.partition == part]
        xs = len(table) + 0.5 + np.arange(len(pp)) + i * 0.15
        b.scatter(xs, 100 * pp.closed, marker="s" if part == IID else "^",
                  label=f"paper, {paper.PARTITION_NAMES[part]}")
    ticks = [f"paper {d} {n}" for d, n in zip(paper_pts[paper_pts.partition == IID].dataset,
                                               paper_pts[paper_pts.partition == IID].num_supervised)]
    b.set_xticks(np.r_[x, len(table) + 0.5 + np.arange(len(ticks))], [*table.point, *ticks], rotation=30, ha="right")
    a.set_ylabel("SemiFL - Partially Supervised (points)")
    b.set_ylabel("gap closed (%)")
    b.legend(fontsize=8)
    a.set_title("our gain (final round; seeds: mean and std)")
    b.set_title("fraction of the Partially -> Fully Supervised gap that SemiFL closes")
    fig.tight_layout()
    return fig


def augmentation_grid(data, n_images: int = 8, draws: int = 3, seed: int = 0):
    """A figure of training images and their views (weak; the authors' strong RandAugment; FixMatch's), each draw
    with its own random ops, and the share of strong views that come out blank (one flat colour) over 10,000
    images per variant."""
    import matplotlib.pyplot as plt
    import torch

    from .. import augment
    g = torch.Generator(data.x_train.device).manual_seed(seed)
    x = data.x_train[:n_images]
    rows = [("original", x), ("weak", augment.weak(x, data.flip, g))]
    for variant in STRONG_AUGS:   # the authors' RandAugment, then FixMatch's
        rows += [(f"strong ({variant}) #{d + 1}", augment.strong(x, data.flip, g, variant)) for d in range(draws)]
    fig, axes = plt.subplots(len(rows), n_images, figsize=(n_images * 1.1, len(rows) * 1.15))
    for r, (name, imgs) in enumerate(rows):
        for c in range(n_images):
            ax = axes[r, c]
            ax.imshow(imgs[c].permute(1, 2, 0).squeeze(-1).cpu().numpy(), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([]), ax.set_yticks([])
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
    many = data.x_train[:10000]
    blank = {}
    for variant in STRONG_AUGS:
        v = augment.strong(many, data.flip, g, variant).flatten(1)
        blank[variant] = 100 * (v.amax(1) == v.amin(1)).float().mean().item()
    return fig, blank


FEW_LABEL_METRICS = {"largest_share": "largest class's share of the fix set", "label_ratio": "Label Ratio",
                     "threshold_acc": "Threshold Accuracy (%)"}


def few_label_curves(df) -> pd.DataFrame:
    """Long per-round pseudo-label measures of every rule's SemiFL runs (the fixed rule from its instrumented runs):
    the largest class's share of the fix set, the label ratio (fix-set size / client images) and the fix set's
    pseudo-label accuracy; columns round, rule, seed, N_S, metric, value."""
    from ..methods.pseudo_labels import FIXED
    from .configs import FIXED_INSTRUMENTED
    runs = df[~df.method.isin(BASELINES) & (df.method != FIXED)]
    c = curves(runs)
    if c.empty:   # nothing trained yet (an empty store)
        return pd.DataFrame(columns=["round", "rule", "seed", "N_S", "metric", "value"])
    shares = [k for k in c.columns if k.startswith("fix_share_c")]
    c["largest_share"] = c[shares].max(axis=1).where(c[shares].sum(axis=1) > 0) if shares else np.nan   # empty: NaN
    c["rule"] = c.method.replace({FIXED_INSTRUMENTED: FIXED})
    long = c.melt(id_vars=["round", "rule", "seed", "num_supervised"], value_vars=list(FEW_LABEL_METRICS),
                  var_name="metric", value_name="value")
    long["metric"] = long.metric.map(FEW_LABEL_METRICS)
    return long.rename(columns={"num_supervised": "N_S"}).dropna(subset=["value"])


def horizon_figure(points: pd.DataFrame, df: pd.DataFrame):
    """Left: the gap SemiFL closes (final round, and the mean over the last 10 % of rounds) against R on a log axis,
    every seed a point, with the paper's IID CIFAR-10 (N_S=250) fraction as a reference line. Right: SemiFL's label
    ratio and threshold accuracy per round, one line per R (x = round / R). None when there is nothing to draw."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..methods import SEMIFL
    from .configs import label_of
    if points.empty:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for (measure, shift), marker in zip((("gap closed, final", 0.96), ("gap closed, last 10 %", 1.04)), "os"):
        axes[0].scatter(points.R * shift, 100 * points[measure], marker=marker, alpha=0.8, label=measure)
    axes[0].set_xscale("log")
    axes[0].set_xticks(sorted(points.R.unique()), [str(r) for r in sorted(points.R.unique())])
    axes[0].xaxis.set_minor_formatter(plt.NullFormatter())
    ref = paper_gap_points().query("partition == @IID and num_supervised == 250 and dataset == 'CIFAR-10'")
    axes[0].axhline(100 * ref.closed.iloc[0], ls="--", c="gray", label="paper: CIFAR-10, N_S=250, IID")
    axes[0].axhline(0, c="black", lw=0.8)
    axes[0].set(xlabel="rounds R (log)", ylabel="gap closed (%)", title="Partially -> Fully Supervised gap closed")
    axes[0].legend(fontsize=8)
    c = curves(df[df.method == label_of(SEMIFL)], keep=("R", "seed"))
    c["progress"] = c["round"] / c["R"]
    for ax, y, name in ((axes[1], "label_ratio", "Label Ratio"), (axes[2], "threshold_acc", "Threshold Accuracy")):
        sns.lineplot(data=c.dropna(subset=[y]), x="progress", y=y, hue="R", palette="viridis", errorbar="sd", ax=ax)
        ax.set(xlabel="round / R", ylabel=name, title=f"SemiFL's {name.lower()} per round")
    axes[2].set_ylim(top=100)   # an accuracy: the +-1 std band of a mean near 100 would reach above it
    fig.tight_layout()
    return fig
