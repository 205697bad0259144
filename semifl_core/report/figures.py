"""Figures: one style and width (THEME, MAX_WIDTH; new_figure starts every figure), saving (a PNG that records its
smallest font and dpi, and a pdf) and showing the saved PNG, line plots over rounds, with_baselines (Figure 2, learning
curves). Other figures (Figure 6, the scale, diagnosis, few-label, horizon, CBAFed ones) live in their notebook."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from .configs import BASELINES
from .runs import _kernel, display_name, repo_path, study_changes


DPI = 150
MAX_WIDTH = 9.0    # inches: at DPI at most 1350 px, so that an 890 px column shrinks a figure to 0.66 at most
# Smallest text 11 pt: shown 890 px wide (GitHub's README column; JupyterLab's output area in a 1400 px window), a
# MAX_WIDTH figure draws it as 15 px, above the page's 13-14 px.
THEME = dict(style="whitegrid", context="notebook",
             rc={"font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12, "xtick.labelsize": 11,
                 "ytick.labelsize": 11, "legend.fontsize": 11, "legend.title_fontsize": 11, "figure.titlesize": 13})
# tests/browser_check.py reads these from the PNG: the figure's smallest font (points) and its dpi
FONT_KEY, DPI_KEY = "semifl:font-min-pt", "semifl:dpi"


def new_figure(height: float, width: float = MAX_WIDTH, **kw):
    """A figure in THEME, at most MAX_WIDTH inches wide (constrained layout by default); every figure starts here."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    if width > MAX_WIDTH:
        raise ValueError(f"a figure {width:g} in wide: at most {MAX_WIDTH:g} in (it would be shrunk, its text "
                         "with it)")
    sns.set_theme(**THEME)
    return plt.figure(figsize=(width, height), **{"layout": "constrained", **kw})


# mathtext draws a super- or subscript at 0.7 of its text's size (SHRINK_FACTOR), as a default log-axis label's exponent
SCRIPT = 0.7


def smallest_font(fig) -> float:
    """The smallest font size (points) a drawn figure shows; text with a mathtext sub/superscript counts at SCRIPT."""
    import re

    from matplotlib.text import Text
    fig.canvas.draw()
    sizes = [t.get_fontsize() * (SCRIPT if re.search(r"\$[^$]*[\^_][^$]*\$", t.get_text()) else 1.0)
             for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())]
    return float(min(sizes)) if sizes else 0.0


def plain_number(x: float) -> str:
    """A log-axis tick label in plain text: 0.1, 1, 10 and non-powers of ten in 0.01-1000 as written, else 1e3, 2e-4."""
    e = int(np.floor(np.log10(x) + 1e-9))
    m = x / 10.0 ** e
    decade = abs(m - 1) < 1e-6
    if -1 <= e <= 1 or (not decade and -2 <= e <= 2):
        return f"{x:g}"
    return f"1e{e}" if decade else f"{m:g}e{e}"


def plain_log_ticks(fig) -> None:
    """Relabel log axes that matplotlib labels itself (10 with a SCRIPT-sized exponent) with plain_number, full size."""
    from matplotlib.ticker import LogFormatter, LogFormatterSciNotation

    class Plain(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return plain_number(x) if super().__call__(x, pos) else ""

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                f = get()
                if axis.get_scale() == "log" and isinstance(f, LogFormatter) and not isinstance(f, Plain):
                    put(Plain(f._base, labelOnlyBase=f.labelOnlyBase, minor_thresholds=f.minor_thresholds))


def save_figure(fig, figures_dir, name: str) -> None:
    """Save fig as figures_dir/name.png and .pdf (default: the repository's figures/), the PNG at DPI with FONT_KEY and
    DPI_KEY in its metadata (tests/browser_check.py checks them), and show that PNG (the figure is closed: the notebook
    shows the file the README embeds). fig None: says so in one line."""
    import io

    import matplotlib.pyplot as plt
    if fig is None:
        print(f"{name}: no figure (no runs to draw)")
        return
    d = repo_path("figures", figures_dir)
    fig = getattr(fig, "figure", fig)   # accepts a seaborn FacetGrid
    plain_log_ticks(fig)
    font = smallest_font(fig)
    png = io.BytesIO()
    fig.savefig(png, format="png", bbox_inches="tight", dpi=DPI, metadata={FONT_KEY: f"{font:g}", DPI_KEY: f"{DPI}"})
    if figures_dir is None and study_changes():   # the committed figure stays the committed study's
        print(f"{name}: shown, not saved over figures/{name}.png (not the committed study; figures_dir saves it)")
    else:
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.png").write_bytes(png.getvalue())
        # no creation date in the pdf: a re-render of unchanged results leaves the file byte-identical
        fig.savefig(d / f"{name}.pdf", bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    if _kernel() is not None:
        from IPython.display import Image, display
        display(Image(data=png.getvalue(), format="png"))


# tab10 in an order that keeps neighbours apart: red and brown (or red and pink) never both among the first seven
TAB10_ORDER = [0, 1, 2, 3, 4, 7, 9, 8, 6, 5]


def colors(n: int) -> list:
    """n distinct colours (tab10 in TAB10_ORDER, tab20 beyond ten series)."""
    import matplotlib.pyplot as plt
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in TAB10_ORDER[:n]]
    cmap = plt.get_cmap("tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def mean_band(ax, g: pd.DataFrame, x: str, y: str, color, label: str, bounds=(None, None), **line):
    """One series: its mean over seeds and a band of one population std (ddof 0, as the tables') clipped to `bounds`."""
    s = g.groupby(x)[y].agg(["mean", lambda v: v.std(ddof=0)]).sort_index()
    mean, std = s.iloc[:, 0].to_numpy(float), np.nan_to_num(s.iloc[:, 1].to_numpy(float))
    ax.plot(s.index, mean, color=color, label=label, **line)
    ax.fill_between(s.index, np.clip(mean - std, *bounds), np.clip(mean + std, *bounds), color=color, alpha=0.18,
                    lw=0)


def reference_line(ax, g: pd.DataFrame, y: str, color, label: str, x: str = "round"):
    """A reference run (e.g. Fully Supervised: its own epochs, not these rounds): its final mean as a dashed line."""
    last = g[g[x] == g.groupby("seed")[x].transform("max")] if "seed" in g else g[g[x] == g[x].max()]
    ax.axhline(last[y].mean(), color=color, ls="--", lw=1.5, label=label)


def lineplot_grid(data: pd.DataFrame, y: str, hue: str, col: str, row=None, x: str = "round", ylabel=None,
                  title=None, height: float = 3.0, bounds=(0, 100), refs=(), hue_order=None, xlabel="round",
                  wrap=2, dashed=()):
    """y over rounds, one panel per col (and row), one line per hue: mean over seeds and a band of one std, clipped to
    `bounds` ((low, high), or a dict from a col or row value to one). Hues in `refs` are drawn as reference lines; in
    `dashed`, dashed and last, so a line lying on another stays visible. Display names throughout; legend below the
    panels; ylabel: a string or a dict as `bounds`; wrap (no row): at most that many panels a line (two keep a
    MAX_WIDTH figure readable); `height`: inches a panel. None when there is nothing to draw."""
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
    legend_rows = -(-len(hues) // (2 if max(map(len, map(str, hues)), default=0) > 28 else 3))
    # a row's and a column's name in a title: on one line, or on two in every panel when one would be too long
    two_lines = bool(row) and (ncol > 2 or any(len(f"{r} | {c}") > 36 for r, c in cells))
    fig = new_figure(height * nrow + 0.9 + 0.25 * legend_rows)
    axes = fig.subplots(nrow, ncol, squeeze=False)
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
        ax.set_title(c if r is None else f"{r}\n{c}" if two_lines else f"{r} | {c}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("\n".join(textwrap.wrap(str(pick(ylabel, r, c) or y), 26)))   # a long label on two lines
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = {}
    for ax in axes.flat[:len(cells)]:
        for hd, lb in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lb, hd)
    long_labels = max(map(len, handles), default=0) > 28
    fig.legend(handles.values(), handles.keys(), loc="outside lower center",
               ncol=min(len(handles), 2 if long_labels else 3), frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def with_baselines(c: pd.DataFrame, partitions) -> pd.DataFrame:
    """Copy the centralized baselines' curves into every partition panel."""
    is_base = c.method.isin(BASELINES)
    base, fed = c[is_base], c[~is_base]
    return pd.concat([fed] + [base.assign(partition=p) for p in partitions], ignore_index=True)
