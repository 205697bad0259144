"""Notebooks: every notebook executes headlessly in the smoke profile (papermill) and ends with its claims (or
findings) table and figures; every one renders from an empty store; the committed notebooks pass nbval against the
committed results (--nbval-lax: only cells tagged `nbval-check-output` are compared; nothing trains:
SEMIFL_NO_TRAIN=1). Notebooks run JOBS at a time, each in its own kernel with one thread."""
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from notebook_code import JOBS
from semifl_core.workers import usable_cores

papermill = pytest.importorskip("papermill")
pytest.importorskip("nbval")

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
# Order matters only for speed: the longest first (their smoke-profile minutes), so that the two jobs end together;
# a run two notebooks need is trained by one and reused (or waited for) by the other.
NOTEBOOKS = ["feddure_table1", "diagnosis", "cbafed_table1", "label_skew", "scale", "few_labels", "horizon", "table1",
             "table2", "figure2", "table5", "table3", "theorem1", "learning_curves", "figure6", "table4"]
FIGURES = {"label_skew": ["label_skew_outcome_synthetic.png", "label_skew_mechanism_synthetic.png"],
           "cbafed_table1": ["cbafed_table1_synthetic.png"],
           "theorem1": ["theorem1_rates.png", "theorem1_critical.png"],
           "few_labels": ["few_labels_synthetic.png"], "horizon": ["horizon_synthetic.png"],
           "feddure_table1": ["feddure_table1_synthetic.png"], "figure6": ["figure6_synthetic_100.png"],
           "table5": ["table5_curves.png"], "figure2": ["figure2.png"],
           "learning_curves": ["learning_curves_synthetic_100.png"],
           "diagnosis": ["diagnosis_stages_synthetic.png", "augmentation_synthetic.png"],
           "scale": ["scale_synthetic.png"]}



def _at_once(commands: list, cwd: Path, env: dict | None = None) -> list[str]:
    """Runs the argv lists in cwd, JOBS at a time (each kernel with one thread when several run, and, where taskset
    is, each job on a core of its own: a notebook's runs then train in its kernel, workers.workers_for counting the
    cores the process may use, instead of in worker processes that would compete for the other job's core); returns
    what each failed one printed (its tail), after the notebooks it ran."""
    env = {**os.environ, **(env or {}), **({"OMP_NUM_THREADS": "1"} if JOBS > 1 else {})}
    cores, mine = queue.SimpleQueue(), threading.local()
    usable = usable_cores()
    pin = JOBS > 1 and len(usable) >= JOBS and shutil.which("taskset")
    for core in usable[:JOBS]:
        cores.put(core)

    def run(argv):
        if pin and not hasattr(mine, "core"):
            mine.core = cores.get()
        return subprocess.run(["taskset", "-c", str(mine.core), *argv] if pin else argv, capture_output=True,
                              text=True, cwd=cwd, env=env)
    with ThreadPoolExecutor(JOBS) as pool:
        procs = list(pool.map(run, commands))
    ours = lambda p: " ".join(Path(a).stem for a in p.args if Path(a).parent == NB_DIR)  # noqa: E731
    return [f"{ours(p)}:\n{p.stdout[-4000:]}{p.stderr[-3000:]}" for p in procs if p.returncode]


def _papermill(name: str, out: Path, cwd: Path, **parameters) -> list:
    return [sys.executable, "-m", "papermill", str(NB_DIR / f"{name}.ipynb"), str(out), "--cwd", str(cwd),
            "--no-progress-bar", "-y", json.dumps(parameters)]


def _nbval(paths: list) -> list:
    """One pytest --nbval-lax command per job, the notebooks dealt out among them."""
    return [[sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider", *map(str, paths[j::JOBS])]
            for j in range(min(JOBS, len(paths)))]


def _text(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", ""))
        for key in ("text/plain", "text/html"):
            out.append(str(o.get("data", {}).get(key, "")))
    return "\n".join(out)


def test_every_notebook_is_in_the_list():
    assert sorted(NOTEBOOKS) == sorted(p.stem for p in NB_DIR.glob("*.ipynb"))


def _cells(nb):
    """(cell type, source, tags) per cell. A cell's trailing newlines are dropped: jupytext's percent format cannot
    hold them (it writes them as blank lines before the next `# %%`), so they are not a disagreement."""
    return [(c.cell_type, c.source.rstrip("\n"), c.metadata.get("tags", [])) for c in nb.cells]


def test_paired_notebooks_agree():
    """Each notebook is one notebook in two files (notebooks/jupytext.toml): X.ipynb (with outputs) and its percent
    script X.py. Fails when one was edited and not synced (`jupytext --sync notebooks/X.ipynb`), or lacks its pair."""
    jupytext = pytest.importorskip("jupytext")
    ipynbs = {p.stem for p in NB_DIR.glob("*.ipynb")}
    scripts = {p.stem for p in NB_DIR.glob("*.py")}
    assert not ipynbs - scripts, f"notebooks without a .py pair (jupytext --sync): {sorted(ipynbs - scripts)}"
    assert not scripts - ipynbs, f".py files without a notebook (jupytext --sync): {sorted(scripts - ipynbs)}"
    for name in sorted(ipynbs):
        nb = _cells(jupytext.read(NB_DIR / f"{name}.ipynb"))
        py = _cells(jupytext.read(NB_DIR / f"{name}.py", fmt="py:percent"))
        assert sum("parameters" in t for *_, t in nb) == 1, f"{name}.ipynb: no single papermill parameters cell"
        diff = next((i for i, (a, b) in enumerate(zip(nb, py)) if a != b), min(len(nb), len(py)))
        assert nb == py, (f"{name}.ipynb and {name}.py differ from cell {diff} on ({len(nb)} and {len(py)} cells): "
                          f"{nb[diff:diff + 1]} vs {py[diff:diff + 1]}; run `jupytext --sync notebooks/{name}.ipynb`")


def test_notebooks_execute_in_smoke_profile(tmp_path):
    import nbformat
    results, figures, executed = tmp_path / "results", tmp_path / "figures", tmp_path / "executed"
    executed.mkdir()
    paths = [executed / f"{name}.ipynb" for name in NOTEBOOKS]
    failed = _at_once([_papermill(name, out, tmp_path, profile="smoke", seeds=[0], results_dir=str(results),
                                  figures_dir=str(figures)) for name, out in zip(NOTEBOOKS, paths)], tmp_path)
    assert not failed, "\n".join(failed)
    for name, out in zip(NOTEBOOKS, paths):
        nb = nbformat.read(out, as_version=4)
        last = _text(nb.cells[-1])
        assert ("claim" in last or "finding" in last) and "evidence" in last, f"{name}: last cell has no claims table"
        for fig in FIGURES.get(name, []):
            assert (figures / fig).exists() and (figures / fig).with_suffix(".pdf").exists(), f"{name}: {fig}"


def test_committed_notebooks_reproduce_their_checked_outputs():
    """nbval on the committed notebooks against the committed results/ (what `make render` wrote): every cell tagged
    nbval-check-output gives the same output again; nothing trains. (The smoke profile's copies are not checked so:
    their outputs are made by the same code from another store.)"""
    failed = _at_once(_nbval(sorted(NB_DIR.glob("*.ipynb"))), NB_DIR.parent, {"SEMIFL_NO_TRAIN": "1"})
    assert not failed, "\n".join(failed)


def test_a_bad_notebook_parameter_is_one_line_in_the_error(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NB_DIR / "table4.ipynb"), str(tmp_path / "out.ipynb"), progress_bar=False,
                                   parameters=dict(profile="smal"))
    assert err.value.ename == "ConfigError" and "profile='smal'" in err.value.evalue and "small" in err.value.evalue


def test_notebooks_render_from_an_empty_store_without_training(tmp_path):
    """SEMIFL_NO_TRAIN (how CI renders the committed notebooks): a run missing from the store is left out and named,
    and every table and claim says 'not run' instead of failing or inventing a number. (table4 and theorem1 read no
    runs: an empty store changes nothing for them, and the other tests execute them.)"""
    import nbformat
    reading = [name for name in NOTEBOOKS if name not in ("table4", "theorem1")]
    failed = _at_once([_papermill(name, tmp_path / f"{name}.ipynb", tmp_path, results_dir=str(tmp_path / "results"),
                                  figures_dir=str(tmp_path / "figures")) for name in reading],
                      tmp_path, {"SEMIFL_NO_TRAIN": "1"})
    assert not failed, "\n".join(failed)
    for name in reading:
        nb = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)
        text = "\n".join(_text(c) for c in nb.cells)
        assert "are not in" in text and "left out" in text, name
        assert "not run" in _text(nb.cells[-1]), f"{name}: the claims do not say what was not run"
    # nothing trained: the store holds only what the four claim-judging notebooks decided, and that reads 'not run'
    # (few_labels' claims are the winners its rule picks from runs: none here, so its file has no rows)
    written = sorted(p.relative_to(tmp_path / "results").as_posix() for p in (tmp_path / "results").rglob("*")
                     if p.is_file())
    assert written == [f"claims/{n}.csv" for n in sorted(("table1", "horizon", "few_labels", "label_skew"))]
    for f in written:
        rows = (tmp_path / "results" / f).read_text().splitlines()[1:]
        assert all(",not run,not run,not run," in r for r in rows), f
