"""A committed notebook opened in JupyterLab (with jupytext) and saved unchanged (Ctrl-S) must change nothing in git:
each .ipynb is byte for byte what nbformat's writer writes for it (one-space indent, sorted keys, a final newline),
names the installed python3 kernel by its display name, and its percent-script pair (notebooks/X.py) is what jupytext
writes for it with notebooks/jupytext.toml. After a render (papermill writes no final newline):
`python -m semifl_core.report.notebook_files notebooks/*.ipynb`."""
from pathlib import Path

import pytest

from semifl_core.report import notebook_files

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("jupytext")

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
FIX = "python -m semifl_core.report.notebook_files notebooks/{}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_is_as_nbformat_writes_it(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    written = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    written += "" if written.endswith("\n") else "\n"
    assert path.read_text(encoding="utf-8") == written, (f"{path.name}: not as nbformat writes it; "
                                                         f"{FIX.format(path.name)}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_names_the_installed_kernel(path):
    spec = nbformat.read(path, as_version=nbformat.NO_CONVERT).metadata.kernelspec
    assert spec.name == notebook_files.KERNEL
    assert spec.display_name == notebook_files.kernel_display_name(), (
        f"{path.name}: kernelspec display name {spec.display_name!r}, the installed kernel's is "
        f"{notebook_files.kernel_display_name()!r}; {FIX.format(path.name)}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_py_pair_is_what_jupytext_writes(path):
    pair = path.with_suffix(".py")
    assert pair.read_text(encoding="utf-8") == notebook_files.paired_text(path), (
        f"{pair.name} is not what jupytext writes for {path.name}: `jupytext --sync notebooks/{path.name}` (after "
        "a render: the notebook is the newer file), then check the diff")


def test_save_as_jupyter_adds_the_final_newline_and_the_kernel_name(tmp_path):
    """What papermill leaves (no final newline, another display name) is rewritten as JupyterLab saves it; a second
    call changes nothing."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# x")])
    nb.metadata.kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path = tmp_path / "x.ipynb"
    path.write_text(nbformat.writes(nb).rstrip("\n"), encoding="utf-8")
    assert notebook_files.save_as_jupyter(path) is True
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and notebook_files.kernel_display_name() in text
    assert notebook_files.save_as_jupyter(path) is False and notebook_files.main(["--check", str(path)]) == 0
