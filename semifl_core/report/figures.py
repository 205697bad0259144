"""Figures: saving them (png and pdf), line plots over rounds, the curves the figures draw (pseudo-label quality,
stages of a round, baselines copied into every panel), the scale study's figure and the augmentation grid."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import STRONG_AUGS
from . import paper
from .configs import BASELINES, TABLE2_VARIANTS
from .paper import IID, NON_IID_K2
from .runs import curves, display_name, repo_path, shown
from .tables import GAP_FINAL, GAP_LATE, ROUND_STAGES, instrumented_curves, paper_gap_points


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


def colors(n: int) -> list:
    """n distinct colours (tab10, tab20 beyond ten series)."""
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def mean_band(ax, g: pd.DataFrame, x: str, y: str, color, label: str, bounds=(None, None), **line):
    """One series over x: the mean over seeds as a line and a band of one population std (ddof 0, as the tables'),
    the band clipped to `bounds` (an accuracy never below 0 % or above 100 %)."""
    s = g.groupby(x)[y].agg(["mean", lambda v: v.std(ddof=0)]).sort_index()
    mean, std = s.iloc[:, 0].to_numpy(float), np.nan_to_num(s.iloc[:, 1].to_numpy(float))
    ax.plot(s.index, mean, color=color, label=label, **line)
    ax.fill_between(s.index, np.clip(mean - std, *bounds), np.clip(mean + std, *bounds), color=color, alpha=0.18,
                    lw=0)


def reference_line(ax, g: pd.DataFrame, y: str, color, label: str, x: str = "round"):
    """A run drawn as what it is, a reference: its final value (mean over seeds) as a dashed horizontal line (e.g.
    Fully Supervised, trained for its own number of epochs, not for the rounds of the x axis)."""
    last = g[g[x] == g.groupby("seed")[x].transform("max")] if "seed" in g else g[g[x] == g[x].max()]
    ax.axhline(last[y].mean(), color=color, ls="--", lw=1.5, label=label)


def lineplot_grid(data: pd.DataFrame, y: str, hue: str, col: str, row=None, x: str = "round", ylabel=None,
                  title=None, height: float = 3.0, bounds=(0, 100), refs=(), hue_order=None, xlabel="round",
                  wrap=None, dashed=()):
    """y over rounds, one panel per col (and row), one line per hue: the mean over seeds and a band of one std
    (clipped to `bounds`: a (low, high) pair, or a dict from a col or row value to its pair). Hue values in `refs`
    are drawn as reference lines (their final value); hue values in `dashed` as dashed lines, drawn last, so that a
    line lying on another (e.g. two rules with the same threshold) stays visible. Titles, legend (outside the panels,
    below them) and values use display names; ylabel is a string or a dict from a col or row value to its label; wrap
    (no row): at most that many panels a line, so that a figure stays readable at a notebook's width. None when
    nothing to draw."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    d = data.dropna(subset=[y])
    if d.empty:
        return None   # nothing to draw (no runs in the results store): save_figure says so
    facets = [c for c in (hue, col, row) if c is not None]
    d = d.assign(**{c: d[c].map(display_name) for c in facets})
    cols = list(dict.fromkeys(d[col]))
    rows = list(dict.fromkeys(d[row])) if row else [None]
    cells = [(r, c) for r in rows for c in cols]
    ncol = min(wrap, len(cols)) if wrap and not row else len(cols)
    nrow = -(-len(cells) // ncol)
    hues = [h for h in (hue_order or dict.fromkeys(d[hue])) if h in set(d[hue])]
    color = dict(zip(hues, colors(len(hues))))
    dash = {display_name(h) for h in dashed}
    drawn = sorted(hues, key=lambda h: h in dash)   # the dashed last, on top
    pick = lambda v, r, c: v.get(c, v.get(r)) if isinstance(v, dict) else v   # noqa: E731
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, height * nrow + 0.9), squeeze=False,
                             layout="constrained")
    for ax in axes.flat[len(cells):]:
        ax.set_visible(False)
    for k, (r, c) in enumerate(cells):
        ax = axes.flat[k]
        at = d[(d[col] == c) & ((d[row] == r) if row else True)]
        lo, hi = pick(bounds, r, c) or (None, None)
        for h in drawn:
            g = at[at[hue] == h]
            if len(g) and h in refs:
                reference_line(ax, g, y, color[h], f"{h} (its final accuracy)", x)
            elif len(g):
                mean_band(ax, g, x, y, color[h], h, (lo, hi), **({"ls": "--"} if h in dash else {}))
        ax.set_title(c if r is None else f"{r} | {c}", fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(pick(ylabel, r, c) or y)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = {}
    for ax in axes.flat[:len(cells)]:
        for hd, lb in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lb, hd)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=min(len(handles), 3), frameon=False)
    if title:
        fig.suptitle(title)
    return fig


PSEUDO_METRICS = {"pseudo_acc": "Pseudo Accuracy", "threshold_acc": "Threshold Accuracy", "label_ratio": "Label Ratio"}
PSEUDO_UNITS = {"Pseudo Accuracy": "Pseudo Accuracy (%)", "Threshold Accuracy": "Threshold Accuracy (%)",
                "Label Ratio": "Label Ratio (fraction, 0-1)"}
PSEUDO_BOUNDS = {"Pseudo Accuracy": (0, 100), "Threshold Accuracy": (0, 100), "Label Ratio": (0, 1)}


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
    for ax, col in ((a, "_gain"), (b, "_closed")):
        ax.errorbar(x, [v.mean() if len(v) else np.nan for v in table[col]],
                    yerr=[v.std() if len(v) else np.nan for v in table[col]], fmt="o",
                    capsize=3, label=f"ours ({paper.DATASET_NAMES.get(cfg.dataset, cfg.dataset)}, {cfg.model})")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, table.point, rotation=30, ha="right")
    paper_pts = paper_gap_points()
    for i, part in enumerate((IID, NON_IID_K2)):
        pp = paper_pts[paper_pts.partition == part]
        xs = len(table) + 0.5 + np.arange(len(pp)) + i * 0.15
        b.scatter(xs, pp.closed, marker="s" if part == IID else "^",
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


FEW_LABEL_METRICS = {"test_acc": "test accuracy (%)", "largest_share": "largest class's share of the fix set",
                     "label_ratio": "Label Ratio (fraction)", "threshold_acc": "Threshold Accuracy (%)"}
FEW_LABEL_BOUNDS = {"test accuracy (%)": (0, 100), "largest class's share of the fix set": (0, 1),
                    "Label Ratio (fraction)": (0, 1), "Threshold Accuracy (%)": (0, 100)}


def few_label_curves(df) -> pd.DataFrame:
    """Long per-round measures of the few-label study: the outcome, test accuracy, of every rule's SemiFL runs (the
    fixed rule from its instrumented runs) and of the baselines, then the rules' pseudo-label measures: the largest
    class's share of the fix set, the label ratio (fix-set size / client images) and the fix set's pseudo-label
    accuracy; columns round, rule, seed, N_S ('N_S=<n>'), metric (FEW_LABEL_METRICS' names, in its order), value."""
    from ..methods.pseudo_labels import FIXED
    from .configs import FIXED_INSTRUMENTED
    c = curves(df[df.method != FIXED])
    if c.empty:   # nothing trained yet (an empty store)
        return pd.DataFrame(columns=["round", "rule", "seed", "N_S", "metric", "value"])
    shares = [k for k in c.columns if k.startswith("fix_share_c")]
    c["largest_share"] = c[shares].max(axis=1).where(c[shares].sum(axis=1) > 0) if shares else np.nan   # empty: NaN
    c = c.reindex(columns=list(c.columns) + [k for k in FEW_LABEL_METRICS if k not in c])
    c["rule"] = c.method.replace({FIXED_INSTRUMENTED: FIXED})
    long = c.melt(id_vars=["round", "rule", "seed", "num_supervised"], value_vars=list(FEW_LABEL_METRICS),
                  var_name="metric", value_name="value")
    long["metric"] = long.metric.map(FEW_LABEL_METRICS)
    long["N_S"] = "N_S=" + long.num_supervised.astype(int).astype(str)
    return long.drop(columns="num_supervised").dropna(subset=["value"])


def horizon_figure(points: pd.DataFrame, df: pd.DataFrame):
    """Left: the gap SemiFL closes (final round, and the mean over the last 10 % of rounds, %) against R on a log
    axis, every seed a point, with the paper's IID CIFAR-10 (N_S=250) value as a reference line. Middle and right:
    SemiFL's label ratio and threshold accuracy per round, one colour per R (x = round / R), mean and a band of one
    std clipped to the measure's range. Legends below the panels. None when there is nothing to draw."""
    import matplotlib.pyplot as plt

    from ..methods import SEMIFL
    from .configs import label_of
    if points.empty:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    for (measure, shift), marker in zip(((GAP_FINAL, 0.96), (GAP_LATE, 1.04)), "os"):
        axes[0].scatter(points.R * shift, points[measure], marker=marker, alpha=0.8, label=measure)
    axes[0].set_xscale("log")
    axes[0].set_xticks(sorted(points.R.unique()), [str(r) for r in sorted(points.R.unique())])
    axes[0].xaxis.set_minor_formatter(plt.NullFormatter())
    ref = paper_gap_points().query("partition == @IID and num_supervised == 250 and dataset == 'CIFAR-10'")
    axes[0].axhline(ref.closed.iloc[0], ls="--", c="gray", label="paper: CIFAR-10, N_S=250, IID")
    axes[0].axhline(0, c="black", lw=0.8)
    axes[0].set(xlabel="rounds R (log scale)", ylabel="gap closed (%)", title="Partially -> Fully Supervised gap closed")
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    c = curves(df[df.method == label_of(SEMIFL)], keep=("R", "seed"))
    c["progress"] = c["round"] / c["R"]
    rs = sorted(c.R.unique())
    for ax, y, name, bounds in ((axes[1], "label_ratio", "Label Ratio (fraction)", (0, 1)),
                                (axes[2], "threshold_acc", "Threshold Accuracy (%)", (0, 100))):
        for r, color in zip(rs, colors(len(rs))):
            mean_band(ax, c[c.R == r].dropna(subset=[y]), "progress", y, color, f"R={r}", bounds, marker=".")
        ax.set(xlabel="round / R", ylabel=name, title=f"SemiFL's {name.split(' (')[0].lower()} per round")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    return fig


def cbafed_figure(df, warmup: int, title: str):
    """CBAFed's Table 1 runs (df: run_all over configs.cbafed_configs). Left: test accuracy per round per row, mean
    and a band of one std over seeds, with the end of the warm-up (the labeled client alone trains until then) as a
    dotted line. Right, CBAFed only: the share of the unlabeled clients' images that enter training and the accuracy
    of their pseudo-labels, per federated round. Legends below the panels. None when there is nothing to draw."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from ..methods import CBAFED
    from .configs import label_of
    long = curves(df, keep=("label", "seed"))
    if long.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    rows = list(dict.fromkeys(long.label))
    for row, color in zip(rows, colors(len(rows))):
        mean_band(axes[0], long[long.label == row].dropna(subset=["test_acc"]), "round", "test_acc", color, row)
    axes[0].axvline(warmup + 0.5, color="grey", ls=":", label=f"end of the warm-up (round {warmup})")
    axes[0].set(xlabel="round (warm-up, then federated)", ylabel="test accuracy (%)", title=title)
    cb = long[long.label == label_of(CBAFED)].assign(label_ratio=lambda d: 100 * d.get("label_ratio", np.nan))
    for (y, name), color in zip((("label_ratio", "unlabeled images used (label ratio, %)"),
                                 ("pseudo_acc", "their pseudo-labels' accuracy (%)")), colors(2)):
        if y in cb:
            mean_band(axes[1], cb.dropna(subset=[y]), "round", y, color, name, (0, 100))
    axes[1].set(xlabel="federated round", ylabel="%", title="CBAFed: the unlabeled clients' pseudo-labels")
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    return fig
