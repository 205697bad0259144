"""The committed notebooks in a real browser (tests/browser_check.py): converted to HTML, screenshotted by headless
Chromium, and free of error outputs, stderr bands, NBVAL markers and NaN table cells. The checker itself is tested on
a notebook made to hold each of those."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import browser_check  # noqa: E402

pytest.importorskip("nbconvert")


def _nb(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _code(source, outputs=(), tags=()):
    return {"cell_type": "code", "source": source, "outputs": list(outputs), "metadata": {"tags": list(tags)},
            "execution_count": 1}


def test_the_checker_finds_what_a_reader_should_not_see():
    bad = _nb([_code("# NBVAL_CHECK_OUTPUT\nx"),
               _code("y", [{"output_type": "stream", "name": "stderr", "text": "runs: 100%"}]),
               _code("z", [{"output_type": "error", "ename": "ValueError", "evalue": "", "traceback": []}])])
    found = browser_check.problems(bad, "<table><tr><td>NaN</td></tr></table>")
    assert len(found) == 4 and "NBVAL" in found[0] and "stderr" in found[1] and "error" in found[2]
    assert "NaN" in found[3]
    good = _nb([_code("x", [{"output_type": "stream", "name": "stdout", "text": "ok"}], tags=["nbval-check-output"])])
    assert browser_check.problems(good, "<table><tr><td>87.2 (0.2) n=3</td></tr></table>") == []


@pytest.mark.skipif(browser_check.chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
@pytest.mark.parametrize("name", sorted(p.stem for p in browser_check.NB_DIR.glob("*.ipynb")))
def test_committed_notebook_in_a_browser(name, tmp_path):
    assert browser_check.check(name, browser_check.chromium(), tmp_path) == []
    png = tmp_path / f"{name}.png"
    assert png.exists() and png.stat().st_size > 10_000
    assert json.loads((browser_check.NB_DIR / f"{name}.ipynb").read_text())["cells"]
