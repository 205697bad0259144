"""README.md: written by hand around one generated table (semifl_core/report/readme.py), read from the committed
runs and the confirmation on fresh seeds."""
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np

from semifl_core.methods import PARTIALLY_SUPERVISED
from semifl_core.report import configs as C, confirmation as K, readme
from semifl_core.report.runs import REPO
from semifl_core.results import run_dir

sys.path.insert(0, str(Path(__file__).parent))
import browser_check  # noqa: E402

RESULTS = REPO / "results"


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def test_the_generated_table_is_what_results_and_the_confirmation_say():
    assert readme.main(["--check"]) == 0, "run `python -m semifl_core.report.readme` (make render does)"


def test_a_typed_over_number_is_found_and_written_back():
    committed = (REPO / "README.md").read_text()
    row = next(line for line in committed.splitlines() if line.startswith("| 30 rounds, IID |"))
    cells = row.split(" | ")
    cells[1] = "99.9 (0.0)"
    stale = committed.replace(row, " | ".join(cells))
    assert stale != committed and readme.splice(stale, readme.HEADLINE, readme.headline()) == committed


def test_a_row_is_the_mean_of_the_runs_summaries_and_a_missing_seed_gives_no_verdict(tmp_path):
    """A store with SemiFL at 30 rounds IID at seeds 0 and 2 and Partially Supervised at 0-2: the cell is the two
    summaries' mean (population std), the paired claim gives no verdict (its arms hold different seeds), and a
    confirmation claim without its runs reads 'not run' at seeds 0-2 and waits for its fresh seeds."""
    cfgs = C.table1_configs("small", "fashionmnist", 100)
    semi, psl = cfgs["SemiFL | iid"], cfgs[C.label_of(PARTIALLY_SUPERVISED)]
    final = {}
    for name, cfg, seeds in (("a", semi, (0, 2)), ("psl", psl, (0, 1, 2))):
        for s in seeds:
            src = run_dir(RESULTS, cfg.replace(seed=s))
            shutil.copytree(src, tmp_path / src.name)
            final.setdefault(name, {})[s] = json.loads((src / "summary.json").read_text())["final_acc"]
    shutil.copy(K.plan_file(), K.plan_file(tmp_path))
    K.mark_started(tmp_path)
    names = dict(readme.ROWS)
    t = K.final_words([names["30 rounds, IID"], names["300 rounds, IID"]], tmp_path).set_index("seed_plan_name")
    r30, r300 = t.loc[names["30 rounds, IID"]], t.loc[names["300 rounds, IID"]]
    a = np.array(list(final["a"].values()))
    assert r30["a"] == f"{a.mean():.1f} ({a.std():.1f}) n=2"
    assert r30["exploration: seeds 0-2"].startswith("no verdict") and "A: 0, 2; B: 0, 1, 2" in \
        r30["exploration: seeds 0-2"]
    assert r300["a"] == "not run" and r300["final word"] == "awaiting confirmation"


def test_the_claims_files_are_what_the_committed_runs_say():
    """Each results/claims/<notebook>.csv (written by that notebook's final-words cell, read by the README) is what
    report.confirmation.final_words recomputes from the committed runs: a file typed over or left stale fails."""
    import pandas as pd
    files = sorted((RESULTS / "claims").glob("*.csv"))
    assert {f.stem for f in files} == {"table1", "horizon", "few_labels", "label_skew"}
    for f in files:
        written = pd.read_csv(f, dtype=str, keep_default_na=False)
        again = K.final_words(list(written.seed_plan_name)).astype(str)
        assert written.equals(again), f"{f.name} is not what results/ says: run `make render`"


def test_the_final_word_is_the_confirmations_where_a_claim_was_given_seeds():
    """No README verdict rests on seeds chosen after its claim was seen: a claim the seed plan gave more seeds reads
    its confirmation (or 'not confirmed' where the plan could not give it a fair test); the others their seeds 0-2."""
    conf = {r["seed_plan_name"]: c for r, c in zip(K.load_plan()["claims"], K.verdicts())}
    for r in readme.rows():
        name = dict(readme.ROWS)[r["setting"]]
        if name in conf:
            assert r["verdict"] in ("confirmed", "not confirmed", "awaiting confirmation")
            assert r["verdict"] == ("awaiting confirmation" if conf[name].verdict == "running" else conf[name].verdict)
        else:
            assert r["fresh"] == "not given more seeds" and r["verdict"] == r["explored"].split(":")[0]


def test_the_first_screen_names_algorithm_1_and_both_commands_and_the_readme_is_short():
    text = (REPO / "README.md").read_text()
    first = "\n".join(text.splitlines()[:40])
    assert "semifl_core/methods/semifl.py" in first and "semifl_round" in first
    assert "make demo" in first and "make test" in first
    assert len(text.encode()) <= 10_000
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            assert len(line) < 90, f"README code line of {len(line)} characters: {line}"


def test_the_cpu_wheels_make_installs_are_the_packages_torch_pins():
    """`make install` on a machine without an NVIDIA GPU installs torch's CPU wheels in pyproject.toml's range (the
    install docs' manual line too), falling back to the default index."""
    import tomllib
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"torch(vision)?\b", d)]
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^TORCH_PINS := (.*)$", make, re.M).group(1) == " ".join(f'"{p}"' for p in pins)
    assert "command -v nvidia-smi" in make and "--index-url $(TORCH_CPU)" in make
    assert "pip install " + " ".join(f'"{p}"' for p in pins) in (REPO / "docs" / "usage.md").read_text()


def test_the_user_command_in_the_readme_trains_nothing():
    """`papermill notebooks/table1.ipynb out.ipynb -p seed 2`: every run it needs is committed."""
    assert "papermill notebooks/table1.ipynb out.ipynb -p seed 2" in (REPO / "README.md").read_text()
    for label, cfg in C.table1_configs("small", "fashionmnist", 100).items():
        assert (run_dir(RESULTS, cfg.replace(seed=2)) / "summary.json").exists(), label


def test_links_exist_and_every_doc_is_linked_from_the_readme():
    text = (REPO / "README.md").read_text()
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


def test_splice_replaces_only_what_stands_between_the_markers():
    begin, end = readme.HEADLINE
    text = f"intro\n{begin}\nold\n{end}\noutro\n"
    once = readme.splice(text, readme.HEADLINE, "new")
    assert once == f"intro\n{begin}\n\nnew\n\n{end}\noutro\n" and readme.splice(once, readme.HEADLINE, "new") == once


def test_every_readme_final_word_is_the_one_its_notebook_shows():
    """The README's verdict of each claim is the final word the committed notebooks show for it (their final-words
    cells' last column), so the two cannot disagree after a render."""
    import html as html_lib
    shown = {}
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code" or "confirmation.frame" not in "".join(cell["source"]):
                continue
            for out in cell.get("outputs", []):
                page = "".join(out.get("data", {}).get("text/html", ""))
                for row in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S):
                    cells = [html_lib.unescape(c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
                    if len(cells) == 4 and cells[0] != "claim":
                        shown.setdefault(cells[0], set()).add(cells[-1])
    rows = readme.rows()
    assert rows and all(r["claim"] in shown for r in rows), "a claim of the README no notebook shows"
    for r in rows:
        assert shown[r["claim"]] == {r["verdict"]}, (f"{r['claim']}: README {r['verdict']}, "
                                                     f"notebooks {shown[r['claim']]}")
