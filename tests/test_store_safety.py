"""The results store touches only what it made, and resumes only its own checkpoints.

`semifl runs --clean` once removed every subdirectory of the results directory that had no config.json (a checkout's
.git, a user's notes/); a checkpoint copied from another run was resumed and sealed with that run's numbers."""
import hashlib
import shutil
from pathlib import Path

import pytest
import torch

from semifl_core import results
from semifl_core import run as run_mod
from semifl_core.cli import main as cli_main
from semifl_core.config import profile
from semifl_core.data import synthetic
from interrupt import interrupted

DATA = synthetic()


def digest(root: Path) -> dict:
    """path -> sha256 of every file under root (directories included by their path, empty ones too)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def test_clean_removes_only_the_broken_runs_and_leaves_every_other_byte(tmp_path, capsys):
    store = tmp_path / "results"
    done = profile("smoke", rounds=1)
    run_mod.run(done, store, device="cpu", progress=False, data=DATA)
    broken = interrupted(profile("smoke", rounds=3, seed=1), store, data=DATA)
    (broken / "checkpoint.pt").write_bytes(b"not a zip")                     # corrupt
    half = interrupted(profile("smoke", rounds=3, seed=2), store, data=DATA)            # incomplete (a good checkpoint)
    (store / "notes").mkdir()
    (store / "notes" / "ideas.txt").write_text("keep me")
    (store / ".git").mkdir()                                                 # a folder named .git, not a repository
    (store / ".git" / "description").write_text("mine")
    (store / "empty").mkdir()
    lookalike = store / "semifl-synthetic-iid-ns100-seed7-0123456789ab"     # a run's name, nothing the store wrote
    lookalike.mkdir()
    (lookalike / "data.bin").write_bytes(b"\x00\x01")
    (store / "README.txt").write_text("my runs")
    (store / "claims").mkdir()                                                # the package's own: not listed
    (store / "claims" / "table1.csv").write_text("claim\n")
    (store / "confirmation_plan.json").write_text("{}")
    others = {k: v for k, v in digest(store).items() if not k.startswith((broken.name, half.name))}

    assert cli_main(["runs", "--clean", "--results-dir", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"--clean: 2 incomplete or corrupt run(s) to remove:\n  {broken.name}\n  {half.name}\n" in out
    assert f"removed {broken.name}" in out and f"removed {half.name}" in out
    for name in ("notes/", ".git/", "empty/", f"{lookalike.name}/", "README.txt"):
        assert out.count(f"not a run, left alone: {name}\n") == 1
    assert "claims" not in out and "confirmation_plan" not in out
    assert digest(store) == others                # every byte of everything else, the complete run included
    assert results.open_run(store, done).state == "complete"


@pytest.mark.parametrize("given, says", [("", "results_dir '': give a directory"),
                                         ("{repo}", "is the root of a git checkout")])
def test_runs_refuses_the_current_directory_and_a_checkout(tmp_path, capsys, given, says):
    repo = tmp_path / "checkout"
    (repo / ".git" / "refs").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "src").mkdir()
    before = digest(repo)
    for clean in ([], ["--clean"]):
        assert cli_main(["runs", *clean, "--results-dir", given.format(repo=repo)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("semifl: ") and says in err
    assert digest(repo) == before


def test_a_checkpoint_from_another_run_is_refused_naming_both_keys(tmp_path):
    mine, other = profile("smoke", rounds=3, seed=0), profile("smoke", rounds=3, seed=1)
    a, b = interrupted(mine, tmp_path / "a", data=DATA), interrupted(other, tmp_path / "b", data=DATA)
    shutil.copy(b / "checkpoint.pt", a / "checkpoint.pt")    # the swap a user could make by hand
    with pytest.raises(results.ResultsError, match=rf"corrupt checkpoint \(it belongs to run key {other.key()}, "
                                                   rf"this run's key is {mine.key()}\)"):
        run_mod.run(mine, tmp_path / "a", device="cpu", progress=False, data=DATA)
    assert not (a / "summary.json").exists()


def test_a_checkpoint_without_its_key_or_with_a_round_past_the_run_is_refused(tmp_path):
    cfg = profile("smoke", rounds=3)
    path = interrupted(cfg, tmp_path, data=DATA)
    ck = torch.load(path / "checkpoint.pt", weights_only=False)
    for bad, says in (({k: v for k, v in ck.items() if k != "key"}, "written by an older version"),
                      ({**ck, "round": 7}, "its round 7 does not fit this run")):
        results.save_torch(path / "checkpoint.pt", bad)
        with pytest.raises(results.ResultsError, match=says):
            run_mod.run(cfg, tmp_path, device="cpu", progress=False, data=DATA)
    results.save_torch(path / "checkpoint.pt", ck)            # its own checkpoint still resumes
    assert run_mod.run(cfg, tmp_path, device="cpu", progress=False, data=DATA)["rounds_done"] == 3
