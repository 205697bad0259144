"""Notebooks: every notebook executes headlessly in the smoke profile (papermill) and ends with its claims (or
findings) table and figures, then nbval re-executes the executed copies (--nbval-lax: only cells tagged
`nbval-check-output` are compared). The committed notebooks themselves are checked by
`pytest --nbval-lax notebooks/` against the committed results (Makefile `test`)."""
import subprocess
import sys
from pathlib import Path

import pytest

papermill = pytest.importorskip("papermill")
pytest.importorskip("nbval")

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
# Order matters only for speed: later notebooks reuse the runs of earlier ones.
NOTEBOOKS = ["table1", "table2", "figure6", "table3", "table5", "figure2", "learning_curves", "table4", "diagnosis",
             "scale", "feddure_table1", "few_labels", "horizon", "theorem1", "cbafed_table1", "label_skew"]
FIGURES = {"label_skew": ["label_skew_outcome_synthetic.png", "label_skew_mechanism_synthetic.png"],
           "cbafed_table1": ["cbafed_table1_synthetic.png"], "theorem1": ["theorem1_rates.png", "theorem1_critical.png"], "few_labels": ["few_labels_synthetic.png"], "horizon": ["horizon_synthetic.png"], "feddure_table1": ["feddure_table1_synthetic.png"], "figure6": ["figure6_synthetic_100.png"], "table5": ["table5_curves.png"], "figure2": ["figure2.png"],
           "learning_curves": ["learning_curves_synthetic_100.png"],
           "diagnosis": ["diagnosis_stages_synthetic.png", "augmentation_synthetic.png"], "scale": ["scale_synthetic.png"]}


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
    paths = []
    for name in NOTEBOOKS:
        out = executed / f"{name}.ipynb"
        papermill.execute_notebook(str(NB_DIR / f"{name}.ipynb"), str(out), cwd=str(tmp_path), progress_bar=False,
                                   parameters=dict(profile="smoke", seeds=[0], results_dir=str(results),
                                                   figures_dir=str(figures)))
        nb = nbformat.read(out, as_version=4)
        last = _text(nb.cells[-1])
        assert ("claim" in last or "finding" in last) and "evidence" in last, f"{name}: last cell has no claims table"
        for fig in FIGURES.get(name, []):
            assert (figures / fig).exists() and (figures / fig).with_suffix(".pdf").exists(), f"{name}: {fig}"
        paths.append(str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider", *paths],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_a_bad_notebook_parameter_is_one_line_in_the_error(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NB_DIR / "table4.ipynb"), str(tmp_path / "out.ipynb"), progress_bar=False,
                                   parameters=dict(profile="smal"))
    assert err.value.ename == "ConfigError" and "profile='smal'" in err.value.evalue and "small" in err.value.evalue


def test_notebooks_render_from_an_empty_store_without_training(tmp_path, monkeypatch):
    """SEMIFL_NO_TRAIN (how CI renders the committed notebooks): a run missing from the store is left out and named,
    and every table and claim says 'not run' instead of failing or inventing a number."""
    import nbformat
    monkeypatch.setenv("SEMIFL_NO_TRAIN", "1")
    for name in NOTEBOOKS:
        out = tmp_path / f"{name}.ipynb"
        papermill.execute_notebook(str(NB_DIR / f"{name}.ipynb"), str(out), cwd=str(tmp_path), progress_bar=False,
                                   parameters=dict(results_dir=str(tmp_path / "results"),
                                                   figures_dir=str(tmp_path / "figures")))
        nb = nbformat.read(out, as_version=4)
        text = "\n".join(_text(c) for c in nb.cells)
        if name not in ("table4", "theorem1"):   # these two train nothing
            assert "are not in" in text and "left out" in text, name
            assert "not run" in _text(nb.cells[-1]), f"{name}: the claims do not say what was not run"
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
