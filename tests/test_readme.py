"""README.md's headline and notebook list and docs/results.md are generated (semifl_core/report/readme.py), never
typed: from the committed runs in results/ and from the executed notebooks."""
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from semifl_core.methods import FULLY_SUPERVISED, PARTIALLY_SUPERVISED
from semifl_core.report import configs as C, readme
from semifl_core.report.rule import above
from semifl_core.results import run_dir
from semifl_core.report.runs import REPO

RESULTS = REPO / "results"


def test_generated_parts_are_what_results_and_the_committed_notebooks_say():
    assert readme.main(["--check"]) == 0, "run `python -m semifl_core.report.readme` (make render does)"


def _headline_row(text: str, study: str, partition: str, method: str = "SemiFL") -> list[str]:
    """The cells of the headline table's row (study, partition, method) in a generated text."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]
    hit = [r for r in rows if r[0] == study and r[2] == partition and r[3] == method]
    assert len(hit) == 1, f"no single headline row {study} / {partition} / {method}"
    return hit[0]


def test_a_headline_number_is_the_mean_of_the_runs_summaries(tmp_path):
    """A store holding two of the three seeds of SemiFL at `small` under IID: its cell is their summaries' mean
    (population std) with n=2, the gap closed is computed seed by seed, the verdict is RULE's, and every row whose runs
    are missing says 'not run'."""
    cfgs = C.table1_configs("small", "fashionmnist", 100)
    semi, psl, fsl = (cfgs[k] for k in ("SemiFL | iid", C.label_of(PARTIALLY_SUPERVISED),
                                        C.label_of(FULLY_SUPERVISED)))
    final = {}
    for name, cfg, seeds in (("a", semi, (0, 2)), ("psl", psl, (0, 1, 2)), ("fsl", fsl, (0, 1, 2))):
        for s in seeds:
            src = run_dir(RESULTS, cfg.replace(seed=s))
            if not (src / "summary.json").exists():
                pytest.skip(f"{src.name} is not committed")
            shutil.copytree(src, tmp_path / src.name)
            final.setdefault(name, {})[s] = json.loads((src / "summary.json").read_text())["final_acc"]
    text = readme.headline(tmp_path)
    row = _headline_row(text, "`small`", "IID")
    a = np.array(list(final["a"].values()))
    assert row[4] == f"{a.mean():.1f} ({a.std():.1f}) n=2"
    assert row[6] == above(a, list(final["psl"].values()))
    closed = [100 * (final["a"][s] - final["psl"][s]) / (final["fsl"][s] - final["psl"][s]) for s in (0, 2)]
    assert row[7] == f"{np.mean(closed):.1f} ({np.std(closed):.1f}) n=2 %"
    assert row[8] == "88.2" and row[9] == "87 %"   # theirs: the paper's CIFAR-10 N_S=250 IID column
    assert _headline_row(text, "`small`", "Non-IID, K=2")[4] == "not run"
    assert _headline_row(text, "`long`", "IID")[4:7] == ["not run", "not run", "not run"]
    assert "few labels" not in text   # the winners are picked only once all their IID runs are in


def test_a_stale_number_in_the_readme_is_regenerated_from_results():
    """--check compares README.md with what the generator makes of it: a number typed over is not what results/ says,
    and the generator writes the committed runs' number back."""
    committed = (REPO / "README.md").read_text()
    row = next(line for line in committed.splitlines() if line.startswith("| `small` | 30 | IID | SemiFL |"))
    cells = row.split(" | ")
    cells[4] = "99.9 (0.0)"
    stale = committed.replace(row, " | ".join(cells))
    assert stale != committed and readme.generated(stale)["README.md"] == committed


def test_the_user_commands_in_the_readme_train_nothing():
    """The README documents `papermill notebooks/table1.ipynb out.ipynb -p seed 2` (and `-p profile long`) as
    training nothing: every run they need is committed."""
    text = (REPO / "README.md").read_text()
    assert "papermill notebooks/table1.ipynb out.ipynb -p seed 2" in text
    assert "papermill notebooks/table1.ipynb out.ipynb -p profile long" in text
    for prof, seeds in (("small", (2,)), ("long", (0, 1, 2))):
        for label, cfg in C.table1_configs(prof, "fashionmnist", 100).items():
            for s in seeds:
                assert (run_dir(RESULTS, cfg.replace(seed=s)) / "summary.json").exists(), f"{prof}: {label} seed {s}"


def test_readme_is_short_and_its_links_and_figures_exist():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(figures) >= 2 and all(f.startswith("figures/") for f in figures)
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which does not exist"
    linked = set(re.findall(r"\]\(docs/([^)#]+)\)", text))
    assert {p.name for p in (REPO / "docs").glob("*.md")} <= linked, "a doc the README does not link"


def test_a_dataframe_table_becomes_markdown_without_its_index():
    df = pd.DataFrame({"claim": ["a | b", "c &amp; <d>"], "held": ["held", "not run"]})
    assert readme.markdown(readme.html_table(df.to_html())) == (
        "| claim | held |\n| --- | --- |\n| a \\| b | held |\n| c &amp; <d> | not run |")
    named = df.set_index("claim")   # a named index is a column of the table
    assert readme.html_table(named.to_html())[-1] == ["c &amp; <d>", "not run"]


def _notebook(tmp_path, name, claims, duration=4.2):
    out = lambda t: {"output_type": "stream", "name": "stdout", "text": t}  # noqa: E731
    cell = lambda *o: {"cell_type": "code", "source": "", "outputs": list(o), "metadata": {}}  # noqa: E731
    nb = {"metadata": {"papermill": {"duration": duration}},
          "cells": [cell(out("3 of 10 runs are not in results and are left out")),
                    cell(out("2 of 2 runs are not in results")),
                    cell(out("SEMIFL_NO_TRAIN is set: all 5 runs are in results")),
                    cell({"output_type": "execute_result", "data": {"text/html": pd.DataFrame(claims).to_html()}})]}
    path = tmp_path / f"{name}.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_run_state_claims_and_render_time_are_read_from_the_notebook(tmp_path):
    path = _notebook(tmp_path, "table1", {"claim": ["x"], "held": ["held"], "evidence": ["1 vs 2"]}, duration=75)
    state, table = readme.summary(path)
    assert state == "12 of 17 runs committed" and readme.markdown(table).splitlines()[2] == "| x | held | 1 vs 2 |"
    assert readme.render_time(path) == "about a minute"


def test_the_notebook_list_shows_the_key_claims_verdict_and_fails_when_it_is_gone(tmp_path):
    key = readme.ITEMS["table1"][1]
    path = _notebook(tmp_path, "table1", {"claim": ["other", f"[Fashion-MNIST] {key}"],
                                          "held": ["held", "within noise"], "evidence": ["", ""]})
    line = next(x for x in readme.notebook_list(tmp_path).splitlines() if x.startswith("| [table1]"))
    assert f"**within noise**: [Fashion-MNIST] {key}" in line and "12 of 17 runs committed" in line
    _notebook(tmp_path, "table1", {"claim": ["renamed"], "held": ["held"], "evidence": [""]})
    with pytest.raises(ValueError, match="no claim contains"):
        readme.notebook_list(tmp_path)
    assert path.exists()


def test_results_doc_holds_every_notebooks_claims_table(tmp_path):
    _notebook(tmp_path, "table3", {"claim": ["sBN from the server is not worse"], "held": ["held"], "evidence": ["e"]})
    doc = readme.results_doc(tmp_path)
    assert "## table3: " in doc and "| sBN from the server is not worse | held | e |" in doc
    assert "## table1" not in doc   # only the notebooks that exist


def test_splice_replaces_only_what_stands_between_the_markers():
    begin, end = readme.HEADLINE
    text = f"intro\n{begin}\nold\n{end}\noutro\n"
    once = readme.splice(text, readme.HEADLINE, "new")
    assert once == f"intro\n{begin}\n\nnew\n\n{end}\noutro\n" and readme.splice(once, readme.HEADLINE, "new") == once
