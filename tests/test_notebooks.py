"""Execute every notebook headlessly in the smoke profile (papermill), check its claims table and figures, then
re-execute the executed notebooks with nbval (--nbval-lax: only cells marked # NBVAL_CHECK_OUTPUT are compared)."""
import subprocess
import sys
from pathlib import Path

import pytest

papermill = pytest.importorskip("papermill")
pytest.importorskip("nbval")

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
# Order matters only for speed: later notebooks reuse the runs of earlier ones.
NOTEBOOKS = ["table1", "table2", "figure6", "table3", "table5", "figure2", "learning_curves", "table4"]
FIGURES = {"figure6": "figure6_synthetic_100.png", "table5": "table5_curves.png", "figure2": "figure2.png",
           "learning_curves": "learning_curves_synthetic_100.png"}


def _text(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", ""))
        for key in ("text/plain", "text/html"):
            out.append(str(o.get("data", {}).get(key, "")))
    return "\n".join(out)


def test_notebooks_execute_in_smoke_profile(tmp_path):
    import nbformat
    results, figures, executed = tmp_path / "results", tmp_path / "figures", tmp_path / "executed"
    executed.mkdir()
    paths = []
    for name in NOTEBOOKS:
        out = executed / f"{name}.ipynb"
        papermill.execute_notebook(str(NB_DIR / f"{name}.ipynb"), str(out), cwd=str(NB_DIR), progress_bar=False,
                                   parameters=dict(profile="smoke", results_dir=str(results),
                                                   figures_dir=str(figures)))
        nb = nbformat.read(out, as_version=4)
        last = _text(nb.cells[-1])
        assert "claim" in last and "held" in last and "evidence" in last, f"{name}: last cell has no claims table"
        if name in FIGURES:
            assert (figures / FIGURES[name]).exists(), f"{name}: {FIGURES[name]} not written"
            assert (figures / FIGURES[name]).with_suffix(".pdf").exists()
        paths.append(str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider", *paths],
                          cwd=NB_DIR, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
