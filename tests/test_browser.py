"""The committed notebooks in a real browser (tests/browser_check.py): converted to HTML, screenshotted by headless
Chromium, and free of error outputs, stderr bands, NBVAL markers, NaN table cells, tables wider than the page, figures
whose text is smaller than the page's, pointers to sections that do not exist and internal words; the figures README.md
and docs/ embed readable at GitHub's width. The checker itself is tested on small made-up inputs that hold each of
those (all but the table measurement need no browser)."""
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import browser_check  # noqa: E402
from notebook_code import JOBS  # noqa: E402

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


def test_the_figures_readme_and_docs_embed_are_readable_on_github():
    assert browser_check.readme_problems() == []


@pytest.mark.skipif(browser_check.chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_every_committed_notebook_in_a_browser(tmp_path):
    """Every notebook, JOBS at a time (a Chromium each: the two cores; SEMIFL_TEST_JOBS=1: one by one), each with its
    screenshot; fails naming every notebook with a problem and the problem."""
    names = sorted(p.stem for p in browser_check.NB_DIR.glob("*.ipynb"))

    def check(name):
        (tmp_path / name).mkdir()
        found = browser_check.check(name, browser_check.chromium(), tmp_path / name)
        png = tmp_path / name / f"{name}.png"
        return found + ([] if png.exists() and png.stat().st_size > 10_000 else [f"no screenshot: {png}"])
    with ThreadPoolExecutor(JOBS) as pool:
        found = dict(zip(names, pool.map(check, names)))
    assert not any(found.values()), "\n".join(f"{n}: {p}" for n, ps in found.items() for p in ps)


# ---- the layout, figure, pointer and word checks, each on a small made-up input (no browser) ----

def _layout(right, visible=977.0):
    return {"page": 1000, "outputs": [890], "images": [],
            "tables": [{"cell": 4, "right": right, "visible": visible, "header": ["method", "ours", "theirs"],
                        "clipped": ["theirs"] if right > visible + 1 else []}]}


def test_a_table_past_the_page_edge_is_named_by_cell_header_and_clipped_columns():
    found = browser_check.table_problems(_layout(1334.0))
    assert len(found) == 1 and "cell 4" in found[0] and "'theirs'" in found[0] and "method | ours | theirs" in found[0]
    assert browser_check.table_problems(_layout(977.5)) == []          # within a pixel: fits


def _png(font_pt: float | None, width_in: float, dpi: int = 150) -> bytes:
    """A PNG of a figure width_in inches wide at dpi, recording font_pt as save_figure does (None: nothing)."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(width_in, 1))
    buf = io.BytesIO()
    meta = {} if font_pt is None else {browser_check.FONT_KEY: f"{font_pt:g}", browser_check.DPI_KEY: str(dpi)}
    fig.savefig(buf, format="png", dpi=dpi, metadata=meta)
    plt.close(fig)
    return buf.getvalue()


def test_png_info_reads_the_size_and_the_recorded_font():
    info = browser_check.png_info(_png(11, 9.0))
    assert info["width"] == 1350 and info["text"][browser_check.FONT_KEY] == "11"
    assert info["text"][browser_check.DPI_KEY] == "150"


def test_a_figure_whose_text_is_under_the_body_text_at_its_shown_width_fails():
    # 8 pt at 150 dpi in a 15-inch (2250 px) figure shown 890 px wide: 8 * 150 / 72 * 890 / 2250 = 6.6 px
    assert browser_check.font_px(8, 150, 2250, 890) == pytest.approx(6.59, abs=0.01)
    wide = browser_check.figure_problem("cell 3", _png(8, 15.0), 890)
    assert wide and "cell 3" in wide and "6.6 px" in wide
    assert browser_check.figure_problem("cell 3", _png(11, 9.0), 890) is None        # 15.1 px
    assert browser_check.figure_problem("cell 3", _png(11, 9.0), None) is None       # shown at README_WIDTH
    assert browser_check.figure_problem("x", _png(11, 12.0), 890)                    # 11.3 px: too small
    assert "recorded" in browser_check.figure_problem("cell 3", _png(None, 9.0), 890)
    small = 6 * 150 / 72   # a narrow figure is never enlarged: 6 pt stays 12.5 px
    assert browser_check.font_px(6, 150, 400, 890) == pytest.approx(small)


def test_a_notebook_figure_is_checked_at_its_measured_width():
    import base64
    nb = _nb([_code("fig", [{"output_type": "display_data", "metadata": {},
                              "data": {"image/png": base64.b64encode(_png(11, 9.0)).decode()}}])])
    assert browser_check.figure_problems(nb, {"images": [{"cell": 0, "natural": 1350, "shown": 890}]}) == []
    found = browser_check.figure_problems(nb, {"images": [{"cell": 0, "natural": 1350, "shown": 600}]})
    assert len(found) == 1 and found[0].startswith("cell 0")                         # 10.2 px at 600 px


def test_readme_figures_are_checked_at_githubs_column_width(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "ok.png").write_bytes(_png(11, 9.0))
    (tmp_path / "figures" / "wide.png").write_bytes(_png(10, 15.0))
    (tmp_path / "README.md").write_text("# x\n![a](figures/ok.png)\n![b](figures/wide.png)\n"
                                        '<img src="figures/ok.png" width="500">\n![c](figures/gone.png)\n')
    found = browser_check.readme_problems(tmp_path)
    assert len(found) == 3, found
    wide, gone, narrow = found   # the markdown images in order, then the <img> tags
    assert "wide.png" in wide and "gone.png" in gone and "does not exist" in gone
    assert "ok.png" in narrow and "shown 500 px" in narrow


def test_a_pointer_to_a_section_that_does_not_exist_fails(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# semifl\n\n## Install\n\n```\n# not a heading\n```\n")
    (tmp_path / "docs" / "sizing.md").write_text("# The small profile: how it was sized\n")
    nb = _nb([{"cell_type": "markdown", "metadata": {}, "source":
               "See README, 'Install', docs/sizing.md, \"The small profile: how it was sized\" and README, "
               "\"CBAFed's small variant\" and docs/gone.md, 'X y z'."},
              _code("# The rule (README, 'The small profile'): ...\nx = 1")])
    found = browser_check.pointer_problems(nb, tmp_path)
    assert len(found) == 3, found
    assert "CBAFed's small variant" in found[0] and "gone.md" in found[1] and found[2].startswith("cell 1")
    assert browser_check.pointer_problems(_nb([{"cell_type": "markdown", "metadata": {},
                                                "source": "README, 'not a heading'"}]), tmp_path)


def test_internal_words_fail_in_prose_but_not_in_code():
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": s}  # noqa: E731
    bad = _nb([md("As issue 41 asked."), md("the issue's item 5"), md("the GPU lane"), md("the runs' campaign"),
               _code("claims", [{"output_type": "display_data", "metadata": {},
                                 "data": {"text/markdown": "fixed in issue #12"}}])])
    found = browser_check.word_problems(bad)
    assert [f.split(":")[0] for f in found] == ["cell 0", "cell 1", "cell 2", "cell 3", "cell 4"], found
    good = _nb([md("To train its runs: `python -m semifl_core.campaign label_skew_fix`; a plane, an issue of "
                   "scale."), md("```\ncampaign\n```")])
    assert browser_check.word_problems(good) == []


@pytest.mark.skipif(browser_check.chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_the_browser_measures_a_table_wider_than_the_output_area(tmp_path):
    cells = "".join(f"<th>column number {i}</th>" for i in range(30))
    page = tmp_path / "p.html"
    page.write_text('<html><body><div class="jp-Cell"><div class="jp-OutputArea-output" style="overflow-x: auto">'
                    f"<table><tr>{cells}</tr></table></div></div>"
                    '<div class="jp-Cell"><div class="jp-OutputArea-output"><table><tr><th>a</th></tr></table>'
                    "</div></div></body></html>")
    layout = browser_check.measure(page, browser_check.chromium())
    found = browser_check.table_problems(layout)
    assert len(found) == 1 and found[0].startswith("cell 0") and "column number 29" in found[0]


def test_a_line_wider_than_the_editor_or_the_output_area_fails():
    """A code line, or a printed line (which JupyterLab wraps mid-word), over TEXT_CHARS characters."""
    limit = browser_check.TEXT_CHARS
    assert 100 <= limit <= 123                       # 890 px of 7.83 px characters; JupyterLab shows 123
    code = "x = [" + "1, " * 50 + "1]"
    printed = {"output_type": "stream", "name": "stdout", "text": "dir-0.8 " * 20 + "\nshort\n"}
    result = {"output_type": "execute_result", "metadata": {}, "execution_count": 1,
              "data": {"text/plain": "a" * (limit + 1)}}
    table = {"output_type": "execute_result", "metadata": {}, "execution_count": 1,
             "data": {"text/plain": "a" * (limit + 1), "text/html": "<table></table>"}}
    found = browser_check.width_problems(_nb([_code(code, [printed]), _code("y", [result, table])]))
    assert len(found) == 3, found
    assert "code line" in found[0] and "printed line" in found[1] and found[2].startswith("cell 1")
    fits = _nb([_code("y" * limit, [{"output_type": "stream", "name": "stdout", "text": "z" * limit}])])
    assert browser_check.width_problems(fits) == []


def test_a_unit_after_n_fails():
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": s}  # noqa: E731
    html = {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<td>drop 26.2 (1.3) n=3 points</td>"}}
    bad = _nb([md("gap closed 23.4 (9.3) n=3 %"), _code("t", [html])])
    found = browser_check.unit_problems(bad)
    assert [f.split(":")[0] for f in found] == ["cell 0", "cell 1"], found
    good = _nb([md("gap closed 23.4 (9.3) % n=3; 60.0 (0.8) n=3"),
                _code("t", [{"output_type": "display_data", "metadata": {},
                             "data": {"text/html": "<td>87.2 (0.2) n=3</td><td>56 %</td>"}}])])
    assert browser_check.unit_problems(good) == []
