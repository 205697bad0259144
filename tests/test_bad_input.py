"""Every bad input and every damaged results directory gives one line on stderr naming what is wrong (and what is
allowed), an exit code != 0, no traceback, and leaves no directory that the store would treat as complete.

The table runs `semifl` in-process (cli.main) on the smoke profile; the lock tests start real processes."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest
import torch

from semifl_core import results
from semifl_core.methods import semifl
from semifl_core import data as data_mod
from semifl_core import run as run_mod
from semifl_core.cli import build_parser, main as cli_main, parse_sets
from semifl_core.config import ConfigError, check_parameters, profile
from semifl_core.data import synthetic
from interrupt import interrupted

REPO = Path(__file__).resolve().parents[1]
DATA = synthetic()
SMOKE = ["--profile", "smoke", "--device", "cpu"]
COMPLETE = profile("smoke", rounds=2)      # a finished run: config, metrics, model, summary
INCOMPLETE = profile("smoke", rounds=3)    # an interrupted run: config, metrics, checkpoint of round 1


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    root = tmp_path_factory.mktemp("templates")
    run_mod.run(COMPLETE, root, device="cpu", progress=False, data=DATA)
    interrupted(INCOMPLETE, root, after=1, data=DATA)
    return root


# ---------------------------------------------------------------------- damage done to a copied run directory
def edit_json(name, **changes):
    def damage(path):
        d = json.loads((path / name).read_text())
        (path / name).write_text(json.dumps({**d, **changes}))
    return damage


def reseal_summary(path):        # a careful forger: edits final_acc and recomputes the summary's own checksum
    s = json.loads((path / "summary.json").read_text())
    (path / "summary.json").write_text(json.dumps(results.seal({**s, "final_acc": 99.9})))


def edit_metrics(path):
    text = (path / "metrics.csv").read_text().splitlines()
    header, last = text[0].split(","), text[-1].split(",")
    last[header.index("test_acc")] = "99.9"
    (path / "metrics.csv").write_text("\n".join(text[:-1] + [",".join(last)]) + "\n")


def append(name, data=b"x"):
    return lambda path: (path / name).open("ab").write(data)


def write(name, data):
    return lambda path: (path / name).write_bytes(data)


def truncate(name):
    return lambda path: (path / name).write_bytes((path / name).read_bytes()[:300])


def flip_byte(name):
    def damage(path):
        b = bytearray((path / name).read_bytes())
        b[len(b) // 2] ^= 0xFF
        (path / name).write_bytes(bytes(b))
    return damage


def remove(name):
    return lambda path: (path / name).unlink()


def other_config(path):
    (path / "config.json").write_text(json.dumps(results.config_record(COMPLETE.replace(lr=0.1))))


def wrong_checkpoint(path):       # a valid torch file that is not our checkpoint (passes the zip check)
    torch.save({"something": 1}, path / "checkpoint.pt")


def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def one_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def download_fails(monkeypatch):
    monkeypatch.delenv("SEMIFL_OFFLINE", raising=False)

    def offline(name, root):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(data_mod, "_download", offline)


def nan_loss(monkeypatch):
    for name in ("client_loss", "supervised_loss"):
        monkeypatch.setattr(semifl, name, _nan(getattr(semifl, name)))


def _nan(real):
    def loss_fn(f, b, *rest):
        loss, aux = real(f, b, *rest)
        return loss * float("nan"), aux
    return loss_fn


def inf_weights(monkeypatch):   # a step that overflowed the weights after the round's last loss (which is finite)
    real = run_mod.Experiment.close_round

    def close_round(self, st, rnd):
        with torch.no_grad():
            list(st.model.parameters())[-1].fill_(float("inf"))
        return real(self, st, rnd)
    monkeypatch.setattr(run_mod.Experiment, "close_round", close_round)


# (id, argv after the command's fixed part, words the one stderr line must contain, exit code,
#  template to copy into the results directory (None, "complete", "incomplete"), damage, environment patch)
R2, R3 = ["--set", "rounds=2"], ["--set", "rounds=3"]
CASES = [
    # ---- command-line flags
    ("checkpoint-every 0", ["run", *SMOKE, "--checkpoint-every", "0"], ["checkpoint_every=0", ">= 1"], 2),
    ("checkpoint-every negative", ["run", *SMOKE, "--checkpoint-every", "-3"], ["checkpoint_every=-3"], 2),
    ("checkpoint-every not int", ["run", *SMOKE, "--checkpoint-every", "x"], ["--checkpoint-every", "'x'"], 2),
    ("device bogus", ["run", "--profile", "smoke", "--device", "bogus"], ["device='bogus'", "cuda:N"], 2),
    ("device cuda, no GPU", ["run", "--profile", "smoke", "--device", "cuda"], ["device='cuda'", "no CUDA"],
     2, None, None, no_gpu),
    ("device cuda:7, one GPU", ["run", "--profile", "smoke", "--device", "cuda:7"], ["device='cuda:7'", "cuda:0"], 2,
     None, None, one_gpu),
    ("results-dir is a file", ["run", *SMOKE, "--results-dir", "{file}"], ["results_dir", "is a file"], 2),
    ("runs: results-dir is a file", ["runs", "--results-dir", "{file}"], ["results_dir", "is a file"], 2),
    ("unknown profile", ["run", "--profile", "smok"], ["profile='smok'", "did you mean 'smoke'"], 2),
    ("unknown dataset", ["run", *SMOKE, "--dataset", "cifar11"], ["dataset='cifar11'", "cifar10"], 2),
    ("unknown algorithm", ["run", *SMOKE, "--algorithm", "semfl"], ["algorithm='semfl'", "did you mean"], 2),
    ("unknown flag", ["run", *SMOKE, "--rounds", "3"], ["unrecognized arguments: --rounds"], 2),
    ("unknown command", ["train"], ["invalid choice: 'train'"], 2),
    ("demo of the baseline itself", ["demo", *SMOKE, "--algorithm", "partially-supervised"],
     ["--algorithm partially-supervised", "baseline"], 2),
    ("--dataset and --set dataset disagree", ["run", *SMOKE, "--dataset", "mnist", "--set", "dataset=cifar10"],
     ["--dataset mnist", "dataset=cifar10"], 2),
    ("dataset files missing, offline", ["run", *SMOKE, "--dataset", "cifar10", "--data-root", "{tmp}/data"],
     ["cifar10", "cifar-10-batches-py"], 2),
    ("download fails", ["run", *SMOKE, "--dataset", "mnist", "--data-root", "{tmp}/data"],
     ["download failed", "URLError", "name resolution", "MNIST/raw"], 2, None, None, download_fails),
    # ---- --set values
    ("seed -1", ["run", *SMOKE, "--set", "seed=-1"], ["seed=-1", "0 to 2**32 - 1"], 2),
    ("seed not an integer", ["run", *SMOKE, "--set", "seed=1.5"], ["seed='1.5'", "integer"], 2),
    ("rounds 0", ["run", *SMOKE, "--set", "rounds=0"], ["rounds=0", ">= 1"], 2),
    ("unknown field", ["run", *SMOKE, "--set", "local_epoch=2"], ["'local_epoch'", "did you mean 'local_epochs'"], 2),
    ("field set twice", ["run", *SMOKE, "--set", "rounds=1", "--set", "rounds=2"], ["rounds", "twice"], 2),
    ("no = in --set", ["run", *SMOKE, "--set", "rounds"], ["--set 'rounds'", "NAME=VALUE"], 2),
    ("non-iid shards exceed a class", ["run", *SMOKE, "--set", "num_clients=1000", "partition=non-iid-l-2"],
     ["partition='non-iid-l-2'", "no data", "1900"], 2),
    ("non-iid K > classes", ["run", *SMOKE, "--set", "partition=non-iid-l-11"], ["partition='non-iid-l-11'"], 2),
    ("more IID clients than samples", ["run", *SMOKE, "--set", "num_clients=1901"], ["num_clients=1901", "1900"], 2),
    ("Dirichlet alpha 0", ["run", *SMOKE, "--set", "partition=dir-0"], ["partition='dir-0'", "> 0"], 2),
    ("partition garbage", ["run", *SMOKE, "--set", "partition=noniid"], ["partition='noniid'", "dir-ALPHA"], 2),
    ("lr nan", ["run", *SMOKE, "--set", "lr=nan"], ["lr=nan", "finite"], 2),
    ("bool maybe", ["run", *SMOKE, "--set", "mix_loss=maybe"], ["mix_loss='maybe'", "true or false"], 2),
    ("threshold 2", ["run", *SMOKE, "--set", "threshold=2"], ["threshold=2.0", "[0, 1]"], 2),
    ("N_S above the training set", ["run", *SMOKE, "--set", "num_supervised=2010"], ["num_supervised=2010"], 2),
    ("N_S above the rarest class", ["run", *SMOKE, "--dataset", "svhn", "--set", "num_supervised=50000"],
     ["num_supervised=50000", "rarest class", "4659"], 2),
    # ---- damaged results directories (the summary, the checkpoint)
    ("summary final_acc edited", ["run", *SMOKE, *R2], ["summary.json", "checksum"], 2, "complete",
     edit_json("summary.json", final_acc=99.9)),
    ("summary edited and re-sealed", ["run", *SMOKE, *R2], ["final_acc=99.9", "metrics.csv gives"], 2,
     "complete", reseal_summary),
    ("summary garbled", ["run", *SMOKE, *R2], ["summary", "JSONDecodeError"], 2, "complete",
     write("summary.json", b"{not json")),
    ("summary a JSON list", ["run", *SMOKE, *R2], ["summary.json is not a JSON object"], 2, "complete",
     write("summary.json", b"[1, 2]")),
    ("metrics edited", ["run", *SMOKE, *R2], ["metrics.csv", "checksum"], 2, "complete", edit_metrics),
    ("metrics deleted", ["run", *SMOKE, *R2], ["metrics.csv", "FileNotFoundError"], 2, "complete",
     remove("metrics.csv")),
    ("model.pt edited", ["run", *SMOKE, *R2], ["model.pt", "checksum"], 2, "complete", append("model.pt")),
    ("config.json missing", ["run", *SMOKE, *R2], ["config.json is missing"], 2, "complete", remove("config.json")),
    ("config.json garbled", ["run", *SMOKE, *R2], ["config.json unreadable"], 2, "complete",
     write("config.json", b"\x00\xff garbage")),
    ("config.json of another config", ["run", *SMOKE, *R2], ["config.json holds a different config"], 2, "complete",
     other_config),
    ("checkpoint truncated", ["run", *SMOKE, *R3], ["checkpoint.pt", "truncated", "--clean"], 2,
     "incomplete", truncate("checkpoint.pt")),
    ("checkpoint random bytes", ["run", *SMOKE, *R3], ["checkpoint.pt", "unreadable"], 2, "incomplete",
     write("checkpoint.pt", os.urandom(4096))),
    ("checkpoint one byte flipped", ["run", *SMOKE, *R3], ["checkpoint.pt", "CRC"], 2, "incomplete",
     flip_byte("checkpoint.pt")),
    ("checkpoint of something else", ["run", *SMOKE, *R3],
     ["corrupt checkpoint", "not a checkpoint of this package", "start that run over"],
     2, "incomplete", wrong_checkpoint),
    # ---- training that fails: the message says what is on disk
    ("non-finite loss, no checkpoint yet", ["run", *SMOKE, *R2], ["loss is nan",
     "no checkpoint was written yet"], 1, None, None, nan_loss),
    # ---- absurd values: refused by validation, or reported like divergence
    ("local_epochs 1e9", ["run", *SMOKE, "--set", "local_epochs=1e9", "rounds=6"],
     ["local_epochs=1000000000.0", "batch plan", "5.7e+11 samples", "TiB", "at most 2**31", "local_epochs <= 3.77e+06"],
     2),
    ("server_epochs 1e9", ["run", *SMOKE, "--set", "server_epochs=1e9"],
     ["server_epochs=1000000000.0", "batch plan", "GiB of indices", "at most 2**31"], 2),
    ("server_batch 1e9", ["run", *SMOKE, "--set", "server_batch=1000000000"],
     ["server_batch=1000000000", "labeled set", "at most 100 (num_supervised)"], 2),
    ("server_batch above the training set (labels=all)", ["run", *SMOKE, "--algorithm", "fully-supervised", "--set",
     "server_batch=2001"], ["server_batch=2001", "at most 2000 (the whole training set)"], 2),
    ("client_batch 1e9", ["run", *SMOKE, "--set", "client_batch=1000000000"],
     ["client_batch=1000000000", "at most 1900", "clients' samples"], 2),
    ("lr 1e300", ["run", *SMOKE, "--set", "lr=1e300"], ["lr=1e+300", "float32", "3.403e+38"], 2),
    ("weight_decay 1e300", ["run", *SMOKE, "--set", "weight_decay=1e300"], ["weight_decay=1e+300", "float32"], 2),
    ("clip_norm 1e39", ["run", *SMOKE, "--set", "clip_norm=1e39"], ["clip_norm=1e+39", "float32"], 2),
    ("Adam's step overflows float32", ["run", *SMOKE, "--algorithm", "feddure", "--set", "lr=1e38", *R2],
     ["round 1:", "overflowed float32", "stopped, no checkpoint was written yet", "lower lr"], 1),
    ("weights overflowed, loss finite", ["run", *SMOKE, *R2], ["round 1:", "weights overflowed", "non-finite",
     "stopped, no checkpoint was written yet", "lower lr"], 1, None, None, inf_weights),
]


def visible(stderr: str) -> list[str]:
    """The lines a terminal would show (a progress bar redraws itself after a carriage return)."""
    return [shown for line in stderr.split("\n") if (shown := line.split("\r")[-1].strip())]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line(case, templates, tmp_path, capsys, monkeypatch):
    name, argv, words, code, template, damage, patch = (*case, None, None, None)[:7]
    monkeypatch.setenv("SEMIFL_OFFLINE", "1")
    monkeypatch.setattr(run_mod, "_DATA_CACHE", {("synthetic", "None", "cpu"): DATA})
    (tmp_path / "a_file").write_text("not a directory")
    out_dir = tmp_path / "results"
    if patch:
        patch(monkeypatch)
    argv = [a.replace("{file}", str(tmp_path / "a_file")).replace("{tmp}", str(tmp_path)) for a in argv]
    if argv[0] in ("run", "demo") and "--results-dir" not in argv:
        argv += ["--results-dir", str(out_dir)]
    if template:
        cfg = COMPLETE if template == "complete" else INCOMPLETE
        src = results.run_dir(templates, cfg)
        shutil.copytree(src, results.run_dir(out_dir, cfg))
        damage(results.run_dir(out_dir, cfg))
    capsys.readouterr()
    rc = cli_main(argv)
    out, err = capsys.readouterr()
    lines = visible(err)
    assert rc == code, (rc, out, err)
    assert len(lines) == 1 and lines[0].startswith("semifl: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in out + err
    left = [p for p in out_dir.glob("*")] if out_dir.is_dir() else []
    assert not [p for p in left if results.inspect(p).state == "complete"], left
    if template is None and code == 2:
        assert left == [], left            # refused before any work: nothing written


def test_cases_cover_every_command_that_takes_input():
    assert len(CASES) >= 30 and {c[1][0] for c in CASES} >= {"run", "runs", "demo"}


# ---------------------------------------------------------------------- the store after damage
def test_runs_lists_a_corrupt_checkpoint_and_clean_removes_it(templates, tmp_path, capsys):
    shutil.copytree(results.run_dir(templates, INCOMPLETE), results.run_dir(tmp_path, INCOMPLETE))
    shutil.copytree(results.run_dir(templates, COMPLETE), results.run_dir(tmp_path, COMPLETE))
    truncate("checkpoint.pt")(results.run_dir(tmp_path, INCOMPLETE))
    assert cli_main(["runs", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "corrupt" in out and "checkpoint.pt is unreadable" in out and "complete" in out
    assert cli_main(["runs", "--clean", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"removed {results.run_dir(tmp_path, INCOMPLETE).name}" in out
    assert [p.name for p in tmp_path.iterdir()] == [results.run_dir(tmp_path, COMPLETE).name]


def test_runs_on_an_empty_results_directory_says_so(tmp_path, capsys):
    assert cli_main(["runs", "--results-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"no runs in {tmp_path.resolve()}"


def test_the_run_key_survives_json_switches_added_later_and_fields_a_method_does_not_read():
    from semifl_core.config import LATER_FIELDS, run_key
    for cfg in (profile("smoke"), profile("small", partition="dir-0.3"), profile("paper", "cifar100"),
                profile("small", algorithm="fully-supervised")):
        stored = json.loads(json.dumps(cfg.to_dict()))
        assert run_key(stored) == cfg.key()
        older = {k: v for k, v in stored.items() if k not in LATER_FIELDS}   # written before those switches existed
        assert run_key(older) == cfg.key()
    assert profile("smoke", round_order="paper").key() != profile("smoke").key()
    assert profile("smoke", split_seed=0).key() == profile("smoke").key() != profile("smoke", split_seed=1).key()
    # a centralized baseline ignores the federation (and Fully Supervised ignores N_S): one run serves them all
    psl = profile("small", algorithm="partially-supervised")
    assert psl.key() == psl.replace(partition="dir-0.1", local_epochs=1.0).key() != psl.replace(num_supervised=40).key()
    fsl = profile("small", algorithm="fully-supervised")
    assert fsl.key() == fsl.replace(num_supervised=40, partition="non-iid-l-2").key() != fsl.replace(rounds=3).key()
    assert results.run_dir("r", fsl).name == f"fully-supervised-fashionmnist-seed0-{fsl.key()}"


# ---------------------------------------------------------------------- the command line itself
def test_repeated_set_all_count_and_demo_honours_algorithm(monkeypatch, capsys, tmp_path):
    args = build_parser().parse_args(["run", "--set", "rounds=1", "--set", "seed=3", "lr=0.1"])
    assert parse_sets(args.set) == {"rounds": 1, "seed": 3, "lr": 0.1}
    seen = []

    def fake_run(cfg, *a, **k):
        seen.append(cfg.algorithm)
        return {"final_acc": 1.0, "best_acc": 1.0, "best_round": 1, "wall_time_s": 0.0, "device": "cpu",
                "engine": "sequential", "path": str(tmp_path), "reused": False}
    monkeypatch.setattr(run_mod, "run", fake_run)
    assert cli_main(["demo", "--profile", "smoke", "--algorithm", "fedavg-fixmatch"]) == 0
    assert seen == ["fedavg-fixmatch", "partially-supervised"]


def test_every_run_option_says_its_default_and_allowed_values():
    sub = build_parser()._subparsers._group_actions[0]
    for command in ("run", "demo"):
        for action in sub.choices[command]._actions:
            if action.dest != "help":
                assert action.help and "default" in action.help, (command, action.dest)


def test_help_and_profiles_import_neither_torch_nor_pandas():
    code = ("import sys, contextlib, io; from semifl_core.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(['profiles']) == 0; main(['--help'])\n"
            "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stderr


# ---------------------------------------------------------------------- notebook parameters
@pytest.mark.parametrize("params, words", [
    (dict(profile_name="bogus"), ["profile='bogus'", "paper, small, long, smoke"]),
    (dict(profile_name="smoke", seed=-1), ["seed=-1"]),
    (dict(profile_name="smoke", seed="2"), ["seed='2'"]),
    (dict(profile_name="smoke", seeds="012"), ["seeds='012'"]),
    (dict(profile_name="smoke", seeds=[0, -5]), ["seed=-5"]),
    (dict(profile_name="smoke", dataset="cifar11"), ["dataset='cifar11'"]),
    (dict(profile_name="smoke", rounds=0), ["rounds=0"]),
    (dict(profile_name="smoke", device="gpu"), ["device='gpu'", "cuda:N"]),
    (dict(profile_name="smoke", partition="non-iid-l-0"), ["partition='non-iid-l-0'"]),
])
def test_notebook_parameters_give_one_line(params, words):
    with pytest.raises(ConfigError) as info:
        check_parameters(**params)
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)
    check_parameters("smoke", seeds=[0, 1], dataset=["synthetic"], rounds=2, device="cpu")   # good ones pass


PARAMETERS_CELL = "profile = 'small'   # 'paper' | 'small'\nseed = None\nseeds = [0, 1, 2]\nresults_dir = None\n"


@pytest.mark.parametrize("history, words", [
    (["", PARAMETERS_CELL, '# Parameters\nprofile_name = "nope"\n', "setup()"],
     ["unknown notebook parameter 'profile_name'", "did you mean 'profile'", "profile, seed, seeds, results_dir"]),
    (["", PARAMETERS_CELL, '# Parameters\nseeds = [0]\nextra = 1\n'], ["'extra'"]),
    (["", PARAMETERS_CELL, '# Parameters\nprofile = "smoke"\n', "x = 1", PARAMETERS_CELL, '# Parameters\nsed = 1\n'],
     ["'sed'", "did you mean 'seed'"]),   # the last injected cell counts
    (["", PARAMETERS_CELL, '# Parameters\nprofile = "smoke"\nPAPERMILL_INPUT_PATH = "a.ipynb"\n'], None),
    (["", PARAMETERS_CELL, '# Parameters\nprofile = "smoke"\nseeds = [0]\n'], None),   # known names
    (["", PARAMETERS_CELL, "import os"], None),                                  # nothing injected
    (["", "import os\nprint(1)", '# Parameters\nwhatever = 1\n'], None),       # out of order by hand: no check
])
def test_papermill_parameters_the_notebook_does_not_declare_are_refused(history, words):
    from semifl_core.report.runs import check_injected
    if words is None:
        check_injected(history)
        return
    with pytest.raises(ConfigError) as info:
        check_injected(history)
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("params, words, cli", [
    (dict(profile="smal"), ["profile='smal'", "did you mean 'small'"], False),
    (dict(profile_name="smoke"), ["unknown notebook parameter 'profile_name'", "did you mean 'profile'"], True),
])
def test_a_bad_or_unknown_notebook_parameter_fails_papermill_in_one_line(params, words, cli, tmp_path):
    """Papermill parameters: the setup cell's error output is the one line (not IPython's traceback), and papermill
    still fails (the command exits non-zero). table4 trains nothing."""
    papermill = pytest.importorskip("papermill")
    import nbformat
    out = tmp_path / "out.ipynb"
    params = {**params, "results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures")}
    if cli:
        args = [a for k, v in params.items() for a in ("-p", k, v)]
        proc = subprocess.run([str(Path(sys.executable).parent / "papermill"), "-k", "python3", "--no-progress-bar",
                               str(REPO / "notebooks" / "table4.ipynb"), str(out), *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env={**ENV, "SEMIFL_NO_TRAIN": "1"})
        assert proc.returncode != 0, proc.stderr[-3000:]
        shown = [line for line in proc.stderr.split('Exception encountered at "In [')[-1].splitlines()[1:]
                 if line.strip()]   # what papermill shows of the cell's error, after its own traceback
        assert len(shown) == 1 and shown[0].startswith("semifl: ") and all(w in shown[0] for w in words), shown
    else:
        with pytest.raises(papermill.PapermillExecutionError) as err:
            papermill.execute_notebook(str(REPO / "notebooks" / "table4.ipynb"), str(out), kernel_name="python3",
                                       progress_bar=False, cwd=str(tmp_path), parameters=params)
        assert err.value.ename == "ConfigError" and words[0] in err.value.evalue
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ConfigError", errors
    assert len(errors[0].traceback) == 1 and errors[0].traceback[0].startswith("semifl: "), errors[0].traceback
    assert "\n" not in errors[0].traceback[0] and all(w in errors[0].traceback[0] for w in words)
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------------- absurd values
def test_the_bounds_refuse_no_committed_config_and_no_profile():
    """Every committed run's config still validates, and so does every profile with every method on the profile's own
    datasets (a refusal there, if any, is an older rule's, not one of the bounds)."""
    from semifl_core.config import LATER_FIELDS, PROFILE_GRID, Config
    from semifl_core.methods import METHODS
    stored = sorted((REPO / "results").glob("*/config.json"))
    for path in stored:
        Config.from_dict({**LATER_FIELDS, **json.loads(path.read_text())["config"]})
    for name, pairs in PROFILE_GRID.items():
        for ds, n in pairs:
            for algorithm in METHODS:
                try:
                    profile(name, ds, num_supervised=n, algorithm=algorithm)
                except ConfigError as err:
                    assert not any(w in str(err) for w in ("batch plan", "larger than", "float32")), str(err)


def test_the_bounds_allow_their_limits():
    big = 3.4028234663852886e38
    for cfg in (profile("smoke", server_batch=100), profile("smoke", client_batch=1900),   # the data's size: one batch
                profile("smoke", algorithm="fully-supervised", server_batch=2000),
                profile("smoke", lr=big), profile("smoke", weight_decay=big), profile("smoke", clip_norm=big),
                profile("smoke", local_epochs=3.7e6), profile("smoke", server_epochs=2.1e7),
                profile("smoke", algorithm="fl2", client_batch=32), profile("small", "synthetic", algorithm="fl2")):
        assert cfg.validate() is cfg
    for changes in (dict(server_batch=101), dict(client_batch=1901), dict(lr=big * 1.0001), dict(threshold=-1e39),
                    dict(local_epochs=3.8e6), dict(server_epochs=2.2e7)):
        with pytest.raises(ConfigError):
            profile("smoke", **changes)


def test_keep_round_stops_on_overflowed_weights():
    from semifl_core.run import State, TrainingError, keep_round
    model = torch.nn.Linear(2, 2)
    st = State(model, torch.optim.SGD(model.parameters(), lr=1.0))
    keep_round(st, {"round": 1, "client_loss": 0.5, "test_acc": 10.0}, lambda: "kept")
    assert st.round == 1 and len(st.metrics) == 1
    with torch.no_grad():
        model.bias[1] = float("-inf")
    with pytest.raises(TrainingError, match=r"^round 2: the model's weights overflowed \(non-finite values in bias\); "
                                            r"stopped, kept; lower lr or weight_decay$"):
        keep_round(st, {"round": 2, "client_loss": 0.5}, lambda: "kept")
    assert st.round == 1 and len(st.metrics) == 1   # the failed round is not kept


# ---------------------------------------------------------------------- two processes on one run
HOLDER = """
import sys, time, pathlib
from semifl_core import run as R
from semifl_core.config import profile
go, ready = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
real = R.Experiment.round
def round_(self, st, r):          # hold the run in round 2 until told to go on
    if r == 1:
        ready.touch()
        while not go.exists():
            time.sleep(0.05)
    return real(self, st, r)
R.Experiment.round = round_
R.run(profile("smoke", rounds=3), sys.argv[1], device="cpu", progress=False)
"""
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "SEMIFL_OFFLINE": "1"}


def _wait_for(check, what, timeout=120):
    end = time.time() + timeout
    while not check():
        assert time.time() < end, f"timed out waiting for {what}"
        time.sleep(0.1)


def _holder(tmp_path):
    go, ready = tmp_path / "go", tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "results"), str(go), str(ready)], env=ENV,
                         cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: ready.exists() or p.poll() is not None, "the first process to hold the run")
    assert p.poll() is None, p.stderr.read()
    return p, go


def test_a_second_process_waits_for_the_run_then_reuses_it(tmp_path):
    first, go = _holder(tmp_path)
    log = tmp_path / "second.err"
    with open(log, "w") as err:
        second = subprocess.Popen([sys.executable, "-m", "semifl_core.cli", "run", *SMOKE, *R3, "--results-dir",
                                   str(tmp_path / "results")], env=ENV, cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=err, text=True)
        _wait_for(lambda: "in use" in log.read_text() or second.poll() is not None, "the second process to wait")
        assert second.poll() is None, log.read_text()
        go.touch()
        assert first.wait(timeout=120) == 0, first.stderr.read()
        out = second.communicate(timeout=120)[0]
    assert second.returncode == 0, log.read_text()
    assert "reused" in out
    assert visible(log.read_text()) == [f"semifl: {results.run_dir(tmp_path / 'results', INCOMPLETE)} is in use by "
                                        f"process {first.pid}; waiting for it to finish"]


def test_clean_never_removes_a_held_run_and_the_lock_dies_with_its_process(tmp_path, capsys):
    first, go = _holder(tmp_path)
    path = results.run_dir(tmp_path / "results", INCOMPLETE)
    stale = tmp_path / "results" / "semifl-synthetic-iid-ns100-seed9-000000000000"   # incomplete, held by no one
    stale.mkdir()
    (stale / results.LOCK).write_text("999999\n")   # its process died before writing config.json
    try:
        assert results.inspect(path).state == "incomplete" and results.held_by(path) == f"process {first.pid}"
        assert cli_main(["runs", "--clean", "--results-dir", str(tmp_path / "results")]) == 0
        out = capsys.readouterr().out
        assert f"skipped {path.name} (in use by process {first.pid})" in out and f"removed {stale.name}" in out
        assert (path / "config.json").exists() and not stale.exists()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert results.held_by(path) == ""          # SIGKILL: the OS dropped the lock
    assert cli_main(["runs", "--clean", "--results-dir", str(tmp_path / "results")]) == 0
    assert f"removed {path.name}" in capsys.readouterr().out
