"""README.md's headline and notebook list and docs/results.md are generated (semifl_core/report/readme.py), never
typed: from the committed runs in results/ and from the executed notebooks."""
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from semifl_core.methods import FULLY_SUPERVISED, PARTIALLY_SUPERVISED
from semifl_core.report import configs as C, readme, rule
from semifl_core.report.rule import above
from semifl_core.results import run_dir
from semifl_core.report.runs import REPO

sys.path.insert(0, str(Path(__file__).parent))
import browser_check  # noqa: E402

RESULTS = REPO / "results"


def test_generated_parts_are_what_results_and_the_committed_notebooks_say():
    assert readme.main(["--check"]) == 0, "run `python -m semifl_core.report.readme` (make render does)"


def _table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def _headline_row(text: str, rounds: str, partition: str, method: str = "SemiFL") -> list[str]:
    """The cells of the README headline's row (R, partition, method) in a generated text."""
    hit = [r for r in _table_rows(text) if r[:3] == [rounds, partition, method]]
    assert len(hit) == 1, f"no single headline row R={rounds} / {partition} / {method}"
    return hit[0]


def _full_row(text: str, study: str, partition: str, method: str = "SemiFL") -> list[str]:
    """The cells of the full headline's row (study, partition, method) in docs/results.md's generated text."""
    hit = [r for r in _table_rows(text) if r[0] == study and r[2] == partition and r[3] == method]
    assert len(hit) == 1, f"no single full headline row {study} / {partition} / {method}"
    return hit[0]


def test_a_headline_number_is_the_mean_of_the_runs_summaries(tmp_path):
    """A store holding two of the three seeds of SemiFL at `small` under IID: its cell is their summaries' mean
    (population std) with n=2, the gap closed is computed seed by seed, the verdict is RULE's (no verdict, naming the
    seeds: the paired claim's arms hold different seeds), and every row whose runs are missing says 'not run'."""
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
    text, full = readme.headline(tmp_path), readme.headline_full(tmp_path)
    a = np.array(list(final["a"].values()))
    mean = f"{a.mean():.1f} ({a.std():.1f}) n=2"
    verdict = above(final["a"], final["psl"], "SemiFL above Partially Supervised, R=30")
    assert verdict.startswith("no verdict:") and "A: 0, 2; B: 0, 1, 2" in verdict   # paired: one arm lacks seed 1
    row = _headline_row(text, "30", "IID")
    assert len(row) == 7 and row[3] == mean and row[5] == verdict   # README: seven short columns
    full_row = _full_row(full, "`small`", "IID")
    assert full_row[4] == mean and full_row[6] == verdict
    closed = [100 * (final["a"][s] - final["psl"][s]) / (final["fsl"][s] - final["psl"][s]) for s in (0, 2)]
    assert full_row[8] == verdict.separation == "within noise"    # the rule before, one more release
    assert full_row[9] == f"{np.mean(closed):.1f} ({np.std(closed):.1f}) % n=2"   # the unit before n
    assert full_row[10] == "88.2" and full_row[11] == "87 %"   # theirs: the paper's CIFAR-10 N_S=250 IID column
    assert _headline_row(text, "30", "Non-IID, K=2")[3] == "not run"
    assert _full_row(full, "`long`", "IID")[4:7] == ["not run", "not run", "not run"]
    assert "few labels" not in full   # the winners are picked only once all their IID runs are in
    # the first screen: the rows it names that exist, each with its verdict
    first = readme.finding(readme.headline_rows(tmp_path))
    assert f"- 30 rounds, IID: SemiFL {mean}, Partially Supervised " in first and f"**{verdict}**" in first
    assert "- 300 rounds, IID: SemiFL not run, Partially Supervised not run: **not run**" in first


def test_the_first_screen_shows_three_verdicts_read_from_the_headline():
    """README's finding (before the first command) is three rows of the headline table, number for number, each with
    one of the rule's verdicts."""
    text = (REPO / "README.md").read_text()
    begin, end = readme.FINDING
    first = text[text.index(begin):text.index(end)]
    assert text.index(end) < text.index("make demo")
    bullets = re.findall(r"^- (\d+) rounds, ([^:]+): SemiFL (.+?), Partially Supervised (.+?): \*\*(.+)\*\* "
                         r"\(difference (.+)\)$", first, re.M)
    assert len(bullets) == 3
    for rounds, partition, a, psl, verdict, interval in bullets:
        assert verdict in ("held", "not held", "within noise")
        assert _headline_row(text, rounds, partition)[3:] == [a, psl, verdict, interval]


def test_readme_code_lines_and_headline_are_narrow():
    """No code line of the README is cut off by its box (under 90 characters) and the headline table has at most seven
    columns (the rest are in docs/results.md)."""
    text = (REPO / "README.md").read_text()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            assert len(line) < 90, f"README code line of {len(line)} characters: {line}"
    begin, end = readme.HEADLINE
    header = next(line for line in text[text.index(begin):text.index(end)].splitlines() if line.startswith("| "))
    assert header.count("|") - 1 <= 7


def test_the_cpu_wheels_make_installs_are_the_packages_torch_pins():
    """`make install` on a machine without an NVIDIA GPU installs torch's CPU wheels in pyproject.toml's range (the
    README's manual line too), falling back to the default index."""
    import tomllib
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"torch(vision)?\b", d)]
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^TORCH_PINS := (.*)$", make, re.M).group(1) == " ".join(f'"{p}"' for p in pins)
    assert "command -v nvidia-smi" in make and "--index-url $(TORCH_CPU)" in make
    assert "pip install " + " ".join(f'"{p}"' for p in pins) in (REPO / "README.md").read_text()


def test_a_stale_number_in_the_readme_is_regenerated_from_results():
    """--check compares README.md with what the generator makes of it: a number typed over is not what results/ says,
    and the generator writes the committed runs' number back."""
    committed = (REPO / "README.md").read_text()
    row = next(line for line in committed.splitlines() if line.startswith("| 30 | IID | SemiFL |"))
    cells = row.split(" | ")
    cells[3] = "99.9 (0.0)"
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


def test_the_readme_and_docs_name_no_issue_or_session_number():
    """A reader cannot open our tracker or know our working sessions: the README and docs name a date or what is
    meant (the notebooks' browser check holds them to the same patterns)."""
    numbered = lambda text: [m.group(0) for p, _ in browser_check.NUMBERED for m in p.finditer(text)]  # noqa: E731
    assert numbered("as issue 41 asked") and numbered("until session 15")
    assert not numbered("an issue of 12 clients") and not numbered("stops at round 30")
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        found = numbered(doc.read_text())
        assert not found, f"{doc.relative_to(REPO)} names {found}: say the date or what is meant"


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
                    cell(out("2 of 2 runs are not in\nresults and are left out")),   # run_all wraps its lines
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


def test_why_a_verdict_changed_reads_the_test_and_n_from_the_whole_interval_cell():
    # the test's name is not always the cell's last part: a conjunction ends with 'weakest of k'
    boot = readme._why("held", "within noise", "+0.0 [-0.0, +0.1], n=200, bootstrap, weakest of 5")
    assert "percentile" in boot and "n=3" not in boot
    at3 = readme._why("held", "within noise", "+1.8 [-6.9, +10.5] at 99.2 %, n=3 of 6 planned, paired t")
    assert "widened by its family's correction" in at3 and "at n=3" in at3
    at4 = readme._why("held", "within noise", "+4.3 [-1.0, +9.5] at 98.8 %, n=4, paired t")
    assert "n=4" in at4 and "n=3" not in at4
    assert "paired by seed" in readme._why("within noise", "held", "+0.4 [+0.0, +0.8], n=3, paired t, weakest of 2")
    assert "paired" not in readme._why("within noise", "held", "+1.0 [+0.2, +1.8], n=3, Welch t")
    # a 'not worse' claim that the rule before held on an interval through zero says so, not a width at n=3
    nw = readme._why("held", "within noise", "-0.4 [-1.8, +1.1], n=3, paired t", "IID: A is not worse than B")
    assert "'not worse'" in nw and "n=3" not in nw
    assert "'not worse'" not in readme._why("held", "within noise", "+1.8 [-6.9, +10.5], n=3, paired t", "A beats B")


def _made_up_row(diffs, R=30, study="`small`"):
    psl = {s: 70.0 + (s % 3) for s in range(len(diffs))}   # the shared labeled set moves both arms alike
    return dict(study=study, R=R, partition="iid", method="SemiFL", psl=psl,
                a={s: psl[s] + d for s, d in enumerate(diffs)})


def test_a_decided_claim_one_seed_from_another_verdict_is_named_under_the_headline():
    steady = _made_up_row([2.0, 2.2, 1.9, 2.1, 2.0, 2.1])          # held, and held without any one seed
    edge = _made_up_row([3.0, 0.2, 2.5, 0.6, 2.8, 1.0], R=100, study="training length")  # held only with all six
    rows = readme.judge([steady, edge])
    assert str(steady["verdict"]) == "held" and str(edge["verdict"]) == "held"
    lines = readme.fragile_lines(rows)
    assert len(lines) == 1 and "R=100" in lines[0] and "**held** at n=6" in lines[0]
    turned = [s for s, v in rule.leave_one_out(edge["a"], edge["psl"], edge["verdict"].judged.level).items()
              if v != "held"]
    assert len(turned) > 1 and f"without any one of seeds {rule.and_list(map(str, turned))}" in lines[0]
    # three seeds: leaving one out leaves no verdict, which is not 'another verdict'
    assert readme.fragile_lines(readme.judge([_made_up_row([2.0, 2.1, 1.9])])) == []


def test_the_label_skew_answer_names_held_remedies_or_the_closest_and_the_largest_lead_left_open(tmp_path):
    claim = lambda remedy, rival, part: f"SemiFL + {remedy} beats {rival} under {part} at 300 rounds"  # noqa: E731
    psl, fixed = "Partially Supervised", "SemiFL's fixed rule"
    k2 = "Non-IID, K=2"
    rows = [(claim("one local epoch (E=1)", psl, k2), "within noise", "+2.1 [-0.5, +4.7] at 99.2 %, n=5, paired t"),
            (claim("no global momentum", psl, k2), "within noise",
             "+1.5 [-5.4, +8.4] at 99.2 %, n=3 of 8 planned, paired t"),
            (claim("FedVLS's released loss", psl, k2), "within noise", "+2.3 [-14.7, +19.4] at 99.2 %, n=3, paired t"),
            (claim("one local epoch (E=1)", fixed, k2), "held", "+2.0 [+0.3, +3.8] at 99.2 %, n=6, paired t"),
            (claim("no global momentum", fixed, k2), "within noise", "+1.0 [-4.0, +6.0] at 99.2 %, n=3, paired t")]
    _notebook(tmp_path, "label_skew", {"claim": [r[0] for r in rows], "verdict": [r[1] for r in rows],
                                       readme.INTERVAL: [r[2] for r in rows], "evidence": ["a vs b"] * len(rows)})
    text = readme.label_skew_answer(tmp_path)
    assert ("above Partially Supervised under Non-IID, K=2: none held of 3 (closest: one local epoch (E=1), "
            "+2.1 [-0.5, +4.7] at 99.2 %, n=5, paired t); their intervals leave open leads of at most +19.4 points "
            "(1 with more seeds planned)") in text
    assert ("above the fixed rule under Non-IID, K=2: one local epoch (E=1) (+2.0 [+0.3, +3.8] at 99.2 %, n=6, "
            "paired t)") in text
    assert "Dir(0.1)" not in text   # no row, no sentence
    assert "under IID" not in text  # no IID check row, no sentence
    assert readme.label_skew_answer(tmp_path / "none") == "Under label skew: the label_skew notebook is not executed."


@pytest.mark.parametrize("verdict, interval, said", [
    ("within noise", "-0.3 [-1.9, +1.3], n=3, paired t",
     "no global momentum, within noise (-0.3 [-1.9, +1.3], n=3, paired t): no loss was found, and a loss of more than "
     "1.9 points is ruled out."),
    ("not held", "-2.0 [-3.0, -1.0], n=3, paired t", "no global momentum, not held (-2.0 [-3.0, -1.0], n=3, paired t)."),
    ("not run", "-", None),
])
def test_the_label_skew_answer_gives_the_iid_check_once_it_has_a_verdict(tmp_path, verdict, interval, said):
    from semifl_core.report.label_skew import part3_iid_claims
    iid = pd.DataFrame({"remedy": ["no global momentum"], "remedy's final": ["x"], "SemiFL, fixed rule": ["y"],
                        "not worse than SemiFL": [verdict]}).set_index("remedy")
    [(claim, _, _)] = part3_iid_claims(iid)   # the claim's text as the notebook writes it
    _notebook(tmp_path, "label_skew", {"claim": [claim], "verdict": [verdict], readme.INTERVAL: [interval],
                                       "evidence": ["a vs b"]})
    text = readme.label_skew_answer(tmp_path)
    line = "not worse than the fixed rule under IID (the check for a remedy held under K=2): no global momentum"
    assert (line in text) == (said is not None) and (said is None or said in text)


def test_the_label_skew_answer_carries_a_held_remedys_one_seed_less_note(tmp_path):
    note = f"{rule.ONE_SEED_LESS}: within noise without any one of seeds 0, 1 and 2"
    _notebook(tmp_path, "label_skew", {
        "claim": ["SemiFL + one local epoch (E=1) beats SemiFL's fixed rule under Non-IID, K=2 at 300 rounds"],
        "verdict": ["held"], readme.INTERVAL: ["+1.9 [+0.2, +3.5] at 99.2 %, n=6, paired t"],
        "evidence": [f"72.2 (2.4) n=6 vs 70.4 (2.7) n=6; {note}"]})
    assert f"one local epoch (E=1) (+1.9 [+0.2, +3.5] at 99.2 %, n=6, paired t; {note})" in \
        readme.label_skew_answer(tmp_path)
