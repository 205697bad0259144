"""README.md's results block is generated from the committed notebooks (semifl_core/report/readme.py), never typed."""
import pandas as pd

from semifl_core.report import readme


def test_readme_results_block_is_what_the_committed_notebooks_say():
    assert readme.main(["--check"]) == 0, "run `python -m semifl_core.report.readme` (make render does)"


def test_a_dataframe_table_becomes_markdown_without_its_index():
    df = pd.DataFrame({"claim": ["a | b", "c &amp; <d>"], "held": ["held", "not run"]})
    assert readme.markdown(readme.html_table(df.to_html())) == (
        "| claim | held |\n| --- | --- |\n| a \\| b | held |\n| c &amp; <d> | not run |")
    named = df.set_index("claim")   # a named index is a column of the table
    assert readme.html_table(named.to_html())[-1] == ["c &amp; <d>", "not run"]


def test_run_state_is_read_from_the_notebook(tmp_path):
    import json
    out = lambda t: {"output_type": "stream", "name": "stdout", "text": t}  # noqa: E731
    cell = lambda *o: {"cell_type": "code", "source": "", "outputs": list(o), "metadata": {}}  # noqa: E731
    nb = {"cells": [cell(out("3 of 10 runs are not in results and are left out")),
                    cell(out("2 of 2 runs are not in results")),
                    cell(out("SEMIFL_NO_TRAIN is set: all 5 runs are in results")),
                    cell({"output_type": "execute_result", "data": {"text/html": pd.DataFrame(
                        {"claim": ["x"], "held": ["held"], "evidence": ["1 vs 2"]}).to_html()}})]}
    (tmp_path / "table1.ipynb").write_text(json.dumps(nb))
    state, table = readme.summary(tmp_path / "table1.ipynb")
    assert state == "12 of 17 runs committed" and table.splitlines()[2] == "| x | held | 1 vs 2 |"
