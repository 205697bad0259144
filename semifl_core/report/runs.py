"""Running the paper's items: the (dataset, N_S) grid and configs per profile, `run_all` (complete runs reused, the rest
trained in worker processes), and the runs and per-round metrics read back from the results store."""
from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..workers import pool_size, train_all
from ..config import PROFILE_GRID, Config, ConfigError, check_parameters, profile
from ..results import estimate_minutes, load_metrics, minutes_per_round
from . import paper


def notebook_setup(profile_name, seed, seeds, dataset, rounds, device, results_dir, figures_dir, describes=True):
    """Every notebook's setup cell: check its parameters (a bad one: one line saying which and why), set the table style
    (figures.new_figure sets the figures'), print what it will run (describes=False: the notebook says it) and where it
    reads and writes; returns (seed list, (dataset, N_S) pairs). In a kernel, the package's errors show as their one
    line, `semifl: ...` (cell and papermill still fail); a papermill-injected parameter not declared is refused."""
    shell = _kernel()
    if shell is not None:
        shell.set_custom_exc(_one_line_errors(), _show_one_line)
        check_injected(shell.history_manager.input_hist_raw)
    plain_tables()
    check_parameters(profile_name, seed, seeds, dataset, rounds, device)
    pd.set_option('display.max_columns', 50, 'display.width', 250, 'display.max_colwidth', None)
    seed_list, pairs = seeds_of(seed, seeds), grid(profile_name, dataset)
    if describes:
        say(describe(profile_name, pairs, device, seed_list, rounds))
    if changed := study_changes():
        say(f"Not the committed study ({', '.join(changed)}): the text describes the committed study; the "
            "tables, figures, claims and takeaway are this run's. The repository's figures/ and results/claims/ "
            "stay as committed (figures_dir, results_dir: where yours go).")
    print('results:', shown(repo_path('results', results_dir)), '| figures:', shown(repo_path('figures', figures_dir)))
    return seed_list, pairs


# say()'s width: below JupyterLab's output area (about 113 characters at 1400 px), which breaks a wider line mid-word
PRINT_WIDTH = 100


def say(text, width: int = PRINT_WIDTH) -> None:
    """print(text), lines wrapped to `width` at ' | ' separators first, then at spaces (a long word stays whole)."""
    import textwrap
    fill = lambda s: textwrap.fill(s, width, break_long_words=False, break_on_hyphens=False)  # noqa: E731
    out = []
    for line in str(text).split("\n"):
        parts, rows = line.split(" | "), []
        for part in parts:
            if rows and len(rows[-1]) + 3 + len(part) <= width:
                rows[-1] += " | " + part
            else:
                rows.append(part)
        out += [fill(r + (" |" if i < len(rows) - 1 else "")) for i, r in enumerate(rows)]
    print("\n".join(out))


def plain_tables() -> None:
    """In a kernel, every DataFrame shows through one style (table_html; its text/plain form likewise): text left,
    numbers right, display names for codes, no pandas row numbers (a named index stays as first columns), no NaN."""
    shell = _kernel()
    if shell is None:
        return
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)
    shell.display_formatter.formatters["text/plain"].for_type(
        pd.DataFrame, lambda df, p, cycle: p.text(_shown_frame(df).to_string(index=False, na_rep=NA)))


NA = "-"   # what a table shows for a missing value (never NaN)
PLACEHOLDERS = {"", "-", "not run", "n/a", "N/A"}
_NUMBER = re.compile(r"^[+-]?\d")   # '87.2 (0.2) n=3', '+1.4', '95.3 (0.1)', '0.74'
WRAP_AT = 40   # a text column whose cells are all at most this long stays on one line


def display_name(value):
    """A partition's or method's display name for its code ('non-iid-l-2' -> 'Non-IID, K=2'); anything else as it is."""
    from ..methods import METHODS
    if isinstance(value, str):
        if value in paper.PARTITION_NAMES:
            return paper.PARTITION_NAMES[value]
        if value in METHODS:
            return METHODS[value].label
    return value


def _shown_frame(df: pd.DataFrame) -> pd.DataFrame:
    """df as a table shows it: a named index as leading columns, codes as display names, one level of column names."""
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    if isinstance(df.columns, pd.MultiIndex):
        df.columns = [", ".join(str(x) for x in c if str(x)) for c in df.columns]
    df = df.rename(columns=lambda c: str(display_name(c)))
    return df.apply(lambda col: col if pd.api.types.is_numeric_dtype(col) else col.map(display_name))


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def numeric_column(values) -> bool:
    """Numbers, or cells that read as numbers ('87.2 (0.2) n=3'), placeholders aside: a column shown right-aligned."""
    vals = [v for v in values if not (isinstance(v, str) and v.strip() in PLACEHOLDERS) and not _missing(v)]
    return bool(vals) and all(_is_number(v) or (isinstance(v, str) and _NUMBER.match(v.strip())) for v in vals)


def _missing(v) -> bool:
    return v is None or (_is_number(v) and np.isnan(v))


def _cell_texts(col: pd.Series) -> list[str]:
    """A column's cells as text: floats at the fewest decimals (at most 4) that show each value, NaN and None as NA."""
    floats = [v for v in col if _is_number(v) and not _missing(v) and not float(v).is_integer()]
    decimals = max((len(np.format_float_positional(v, precision=4, trim="-").partition(".")[2]) for v in floats),
                   default=0)
    out = []
    for v in col:
        if _missing(v):
            out.append(NA)
        elif _is_number(v) and not isinstance(v, (int, np.integer)):
            out.append(f"{v:.{decimals}f}")
        else:
            out.append(str(v))
    return out


def table_html(df: pd.DataFrame) -> str:
    """The one table style of every notebook, as HTML with inline styles (they survive JupyterLab's sanitizer, a <style>
    block does not): text left, numbers right (numeric_column), cells of at most WRAP_AT characters on one line, display
    names, NA for a missing value. Deterministic: a re-render gives the same bytes (nbval compares them)."""
    from html import escape
    df = _shown_frame(df)
    cols = []
    for name in df.columns:
        texts = _cell_texts(df[name])
        right = numeric_column(df[name].tolist())
        one_line = max((len(t) for t in texts), default=0) <= WRAP_AT   # a long interval cell wraps too
        style = f"text-align: {'right' if right else 'left'}; white-space: {'nowrap' if one_line else 'normal'}" + \
            ("" if one_line else "; min-width: 14em")
        cols.append((str(name), texts, style))
    # a header may wrap at its spaces, so a long name never widens a column of short cells past the page
    head = "".join(f'<th style="{st.replace("nowrap", "normal")}">{escape(name)}</th>' for name, _, st in cols)
    body = "".join("<tr>" + "".join(f'<td style="{st}">{escape(texts[i])}</td>' for _, texts, st in cols) + "</tr>"
                   for i in range(len(df)))
    return (f'<table class="dataframe" style="table-layout: auto; margin-left: 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _kernel():
    if "IPython" not in sys.modules:   # not imported: not in IPython
        return None
    from IPython import get_ipython
    return get_ipython()


def _one_line_errors() -> tuple:
    """The errors the command line reports as one line (cli._exit_code), to show as that line in a notebook too."""
    from ..data import DataError
    from ..results import ResultsError
    from ..run import TrainingError
    return ConfigError, ResultsError, DataError, TrainingError


def _show_one_line(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception handler: the error's one line, as `semifl` prints it, instead of the traceback."""
    stb = [f"semifl: {' '.join(str(value).split())}"]
    shell._showtraceback(etype, value, stb)
    return stb


INJECTED = "# Parameters\n"   # how papermill's injected cell begins (papermill.translators: codify's comment)


def check_injected(history: list[str]) -> None:
    """Papermill injects its parameters as a cell of assignments beginning INJECTED, right after the parameters cell
    (history: IPython's In); every name it sets must be set there too or be papermill's own (PAPERMILL_*,
    --inject-paths), else ConfigError. Unchecked without that cell, or if either is not plain assignments (by hand)."""
    _changed.clear()
    at = max((i for i, src in enumerate(history) if src.startswith(INJECTED)), default=0)
    if at == 0:
        return
    declared, injected = _assigned(history[at - 1]), _assigned(history[at])
    if not declared or injected is None:
        return
    _changed.extend(f"{k}={v!r}" for k, v in injected.items()
                    if k in declared and k not in SAME_STUDY and v != declared[k])
    unknown = [name for name in injected if name not in declared and not name.startswith("PAPERMILL_")]
    if unknown:
        import difflib

        from ..methods import METHODS
        owners = [m.name for m in METHODS.values() if unknown[0] in m.fields]
        if owners and "fields" in declared:   # a method's own field: the notebook takes it in `fields`
            raise ConfigError(f"notebook parameter {unknown[0]!r} is a field of {', '.join(owners)}: give it in "
                              f"`fields`, e.g. -y \"fields: {{{unknown[0]}: ...}}\" (with methods naming {owners[0]})")
        close = difflib.get_close_matches(unknown[0], declared, n=1)
        raise ConfigError(f"unknown notebook parameter {unknown[0]!r}" + (f" (did you mean {close[0]!r}?)" if close
                          else "") + f"; this notebook's parameters are {', '.join(declared)}")


def _assigned(source: str) -> dict | None:
    """{name: value} that a cell of plain assignments (`name = value`) sets, in order (a value that is no literal: its
    source text); None for any other cell."""
    import ast
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    out = {}
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else None
        if targets is None or not all(isinstance(t, ast.Name) for t in targets):
            return None
        try:
            value = ast.literal_eval(node.value) if node.value is not None else None
        except ValueError:
            value = ast.unparse(node.value)
        out.update({t.id: value for t in targets})
    return out


# The parameters that change where a notebook draws or runs, never which study it is
SAME_STUDY = ("figures_dir", "device")
_changed: list = []   # in a kernel: the parameters papermill set otherwise than the notebook ("seed=2")


def study_changes() -> list[str]:
    """The parameters this papermill run set to other values than the notebook's own, as 'name=value' (SAME_STUDY's
    aside): [] for the committed study. A notebook then writes no committed file of the repository (figures/,
    results/claims/): they hold the committed study's."""
    return list(_changed)


def seeds_of(seed=None, seeds=(0, 1, 2)) -> list[int]:
    """The seeds a notebook runs: [seed] when a single seed is given (`papermill ... -p seed 2`), else `seeds`."""
    return [int(seed)] if seed is not None else [int(s) for s in seeds]


def grid(profile_name: str, dataset=None) -> list[tuple[str, int]]:
    """(dataset, N_S) pairs: the profile's PROFILE_GRID, or `dataset`'s (name or list; off the grid: default N_S)."""
    pairs = PROFILE_GRID[profile_name]
    if dataset is None:
        return list(pairs)
    wanted = [dataset] if isinstance(dataset, str) else list(dataset)
    out = [p for p in pairs if p[0] in wanted]
    for ds in wanted:
        if not any(p[0] == ds for p in out):
            out.append((ds, profile(profile_name, ds).num_supervised))
    return out


def make(profile_name: str, dataset: str, num_supervised: int, rounds=None, **overrides) -> Config:
    if rounds is not None:
        overrides["rounds"] = int(rounds)
    return profile(profile_name, dataset, num_supervised=num_supervised, **overrides)


def describe(profile_name: str, pairs, device: str = "auto", seeds=(0,), rounds=None) -> str:
    """One line: which profile, data, device and seeds this notebook uses."""
    from ..run import pick_device
    dev = pick_device(device)
    cfg = make(profile_name, pairs[0][0], pairs[0][1], rounds)
    data = ", ".join(f"{paper.DATASET_NAMES.get(d, d)} N_S={n}" for d, n in pairs)
    return (f"profile={profile_name!r} | data: {data} | model={cfg.model}, M={cfg.num_clients}, C={cfg.active_rate}, "
            f"T={cfg.rounds}, E={cfg.local_epochs} | device: {dev} ({platform.processor() or platform.machine()}) "
            f"| seeds: {list(seeds)}")


REPO = Path(__file__).resolve().parents[2]


def repo_path(name: str, given=None) -> Path:
    """`given` if set, else <repository>/name: the committed results/ and figures/ (or ./name outside a checkout), so
    a notebook reads and writes the same folders whether it runs from the repository root or from notebooks/."""
    if given is not None:
        return Path(given)
    return REPO / name if (REPO / "pyproject.toml").exists() else Path.cwd() / name


def shown(path) -> str:
    """A path as notebooks print it: relative to the repository when inside it (no machine-specific prefix)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


COLLECT = "SEMIFL_COLLECT"   # a file: run_all appends each run it would train there, one JSON line (label, config)


def no_train() -> bool:
    """SEMIFL_NO_TRAIN=1: render from the results store only; runs not in it are left out (and said so). CI does so."""
    return os.environ.get("SEMIFL_NO_TRAIN", "0") not in ("", "0")


COLUMNS = ["label", "seed", "algorithm", "dataset", "num_supervised", "partition", "finetune", "global_pseudo_labels",
           "mix_loss", "local_epochs", "global_momentum", "sbn_source", "rounds", "model", "final_acc", "best_acc",
           "best_round", "wall_time_s", "reused", "path", "draw"]


def _row(label, cfg, s) -> dict:
    return {"label": label, "seed": cfg.seed, "algorithm": cfg.algorithm, "dataset": cfg.dataset,
            "num_supervised": cfg.num_supervised, "partition": cfg.partition, "finetune": cfg.finetune,
            "global_pseudo_labels": cfg.global_pseudo_labels, "mix_loss": cfg.mix_loss,
            "local_epochs": cfg.local_epochs, "global_momentum": cfg.global_momentum, "sbn_source": cfg.sbn_source,
            "rounds": cfg.rounds, "model": cfg.model, "final_acc": s["final_acc"], "best_acc": s["best_acc"],
            "best_round": s["best_round"], "wall_time_s": s["wall_time_s"], "reused": s["reused"], "path": s["path"],
            "draw": draw_of(cfg)}


def final_accs(cfg: Config, seeds, results_dir=None) -> dict:
    """{seed: final-round test accuracy} of cfg's complete runs in the store at `seeds` (a run not complete: absent)."""
    from ..results import open_run
    store = repo_path("results", results_dir)
    found = {s: open_run(store, cfg.replace(seed=s)) for s in seeds}
    return {s: float(i.summary["final_acc"]) for s, i in found.items() if i.state == "complete"}


def draw_of(cfg: Config) -> str:
    """The server's labeled set a run trained on, without its seed (partition.labeled_draw): two runs of equal draw at
    one seed hold the same labeled images, so claims between them pair by seed (rule.above)."""
    from ..partition import labeled_draw
    return repr(labeled_draw(cfg.replace(seed=0)))


BACKENDS = ("processes", "ray")
FROM_STORE = "Rendered from the results store only (SEMIFL_NO_TRAIN=1: nothing trains)"


def _stored(results_dir: Path, cfg: Config) -> dict | None:
    from ..results import open_run
    info = open_run(results_dir, cfg)
    return {**info.summary, "path": str(info.path), "reused": True} if info.state == "complete" else None


def stored_runs(configs: dict, seeds, results_dir=None) -> pd.DataFrame:
    """run_all's table of the complete runs only, read from the store: nothing trains and nothing is printed (for a
    plan read from the committed runs, whose lines a notebook must not count as its own runs)."""
    results_dir = repo_path("results", results_dir)
    jobs = [(label, cfg.replace(seed=s)) for label, cfg in configs.items() for s in seeds]
    found = [(label, cfg, _stored(results_dir, cfg)) for label, cfg in jobs]
    return pd.DataFrame([_row(label, cfg, s) for label, cfg, s in found if s is not None], columns=COLUMNS)


def run_all(configs: dict, seeds, results_dir=None, device="auto", data_root=None, workers=None, backend=None,
            address=None, gpus_per_run=None, runs_per_gpu=None) -> pd.DataFrame:
    """Run every {label: Config} for every seed with one progress bar: complete runs are reused, the rest train in
    `workers` processes (default: workers.pool_size), each resuming from its checkpoint; `runs_per_gpu` (K):
    workers.runs_per_gpu, which never changes a run's key or results. backend="ray" hands the runs to semifl_core.sweep
    (`address`; `gpus_per_run`: its num_gpus); the default is $SEMIFL_BACKEND (so papermill can send a notebook's grids
    to Ray), else "processes". Returns one row per (label, seed): the config's main fields and the run summary. With
    SEMIFL_NO_TRAIN (no_train()), runs not in the store are left out, named in one line. Ctrl-C or SIGTERM stops the
    runs as workers.train_all does, then raises KeyboardInterrupt with one line saying what is left."""
    backend = backend or os.environ.get("SEMIFL_BACKEND") or "processes"
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r}: allowed are {', '.join(BACKENDS)}")
    from tqdm import tqdm  # text bars: they render in committed notebooks (no widgets needed)

    results_dir = repo_path("results", results_dir)
    jobs = [(label, cfg.replace(seed=s)) for label, cfg in configs.items() for s in seeds]
    done, todo = {}, []
    for i, (label, cfg) in enumerate(jobs):
        summary = _stored(results_dir, cfg)
        if summary is not None:
            done[i] = summary
        else:
            todo.append(i)
    if todo and os.environ.get(COLLECT):   # a campaign asking what this notebook would train (campaign.queue)
        with open(os.environ[COLLECT], "a") as f:
            f.writelines(json.dumps({"label": jobs[i][0], "config": jobs[i][1].to_dict()}) + "\n" for i in todo)
    if todo and no_train():
        left = [f"{jobs[i][0]} (seed {jobs[i][1].seed})" for i in todo]
        say(f"{FROM_STORE}: {len(todo)} of {len(jobs)} runs are not in {shown(results_dir)} and are left "
            f"out of everything below: {'; '.join(left[:6])}{'; ...' if len(left) > 6 else ''}")
        jobs = [job for i, job in enumerate(jobs) if i in done]
        done, todo = {k: done[i] for k, i in enumerate(sorted(done))}, []
    if todo:
        est = estimate_minutes([jobs[i][1] for i in todo], minutes_per_round(results_dir))
        print(f"{len(todo)} of {len(jobs)} runs are not in {shown(results_dir)} and train now: "
              + (f"about {est:.0f} CPU minutes at the committed runs' median minutes per round (their machine, one "
                 "thread per run)" if est == est else "no committed run to estimate their time from"))
    swept = backend == "ray" and bool(todo)
    if swept:   # with its own bar; a failed run: SweepError naming it, once the others have finished
        from ..sweep import sweep
        out = sweep([jobs[i][1] for i in todo], results_dir, address=address, num_gpus=gpus_per_run, device=device,
                    data_root=data_root, names=[f"{jobs[i][0]} (seed {jobs[i][1].seed})" for i in todo],
                    runs_per_gpu=runs_per_gpu)
        done.update(zip(todo, out.check().summaries))
        todo = []
    n, gpus = pool_size(device, [jobs[i][1] for i in todo], workers, runs_per_gpu) if todo else (1, None)

    def finished(k, summary):
        done[todo[k]] = summary
        bar.update()
    # on stdout (stderr shows as a red band in a notebook), and only while something trains
    with tqdm(total=len(jobs), initial=len(done), desc=f"runs ({len(todo)} to train, {n} at a time)",
              disable=swept or not todo, file=sys.stdout) as bar:
        train_all([jobs[i][1] for i in todo], results_dir, device, data_root, n, gpus, finished)
    return pd.DataFrame([_row(label, cfg, done[i]) for i, (label, cfg) in enumerate(jobs)], columns=COLUMNS)


def runs_summary(df: pd.DataFrame) -> str:
    """'N runs: x new, y reused', and the federated runs whose clients trained in no round (none of their images passed
    the threshold: a short run's clients may add nothing), which a table would show as if they had."""
    from ..methods import METHODS
    idle = [f"{r.label} (seed {r.seed})" for r in df.itertuples() if METHODS[r.algorithm].federated
            and load_metrics(r.path).get("clients_trained", pd.Series([1])).fillna(0).sum() == 0]
    return (f"{len(df)} runs: {int((~df.reused).sum())} new, {int(df.reused.sum())} reused from the results store"
            + (f"\n{len(idle)} federated runs in which no client trained in any round (no image passed the threshold): "
               f"{'; '.join(idle[:4])}{'; ...' if len(idle) > 4 else ''}" if idle else ""))


def curves(df: pd.DataFrame,
           keep=("label", "method", "seed", "partition", "dataset", "num_supervised", "algorithm")) -> pd.DataFrame:
    """Per-round metrics of every run in df (run_all's output), with those of df's `keep` columns it has."""
    parts = []
    for _, row in df.iterrows():
        m = load_metrics(row.path)
        for k in keep:
            if k in row:
                m[k] = row[k]
        parts.append(m)
    if not parts:   # no runs: an empty frame with the columns a caller selects on
        return pd.DataFrame(columns=["round", "test_acc", *(k for k in keep if k in df.columns)])
    return pd.concat(parts, ignore_index=True)


def run_pairs(builder, p, pairs, seeds, results_dir, device="auto", rounds=None, **run_options) -> pd.DataFrame:
    """run_all of builder(p, ds, n, rounds) per (dataset, N_S) pair, concatenated, with 'method' and 'pair' columns."""
    dfs = [run_all(builder(p, ds, n, rounds), seeds, results_dir, device, **run_options) for ds, n in pairs]
    df = pd.concat(dfs, ignore_index=True)
    df["method"] = df.label.str.split(" | ", regex=False).str[0]
    df["pair"] = [f"{paper.DATASET_NAMES.get(d, d)}, N_S={n}" for d, n in zip(df.dataset, df.num_supervised)]
    return df
