"""Sweeps on Ray (semifl_core/sweep.py): the claim on a run directory, the `semifl sweep` command's errors, and (with
the [distributed] extra) sweeps on local Ray instances: the same results as runs one by one, a killed sweep finished
by the next without retraining, two concurrent sweeps sharing a grid, runs held elsewhere deferred.

The first part runs in the default suite (no ray needed); the second, class TestOnRay, is marked `distributed` and
skips where ray is not installed. Every sweep here trains the same four smoke runs (3 rounds, about a second each)."""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
import torch

from semifl_core import results
from semifl_core.cli import GRID_NAMES, main as cli_main
from semifl_core.config import profile
from semifl_core.run import run

REPO = Path(__file__).resolve().parents[1]
RUNS = [dict(seed=0), dict(seed=1), dict(seed=0, algorithm="partially-supervised"),
        dict(seed=2, partition="non-iid-l-2")]
CONFIGS = [profile("smoke", rounds=3, **kw) for kw in RUNS]
ENV = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
       "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
       "OMP_NUM_THREADS": "1", "SEMIFL_OFFLINE": "1"}


def _wait_for(check, what, timeout=180):
    end = time.time() + timeout
    while not check():
        assert time.time() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


# How long a holder waits at most: far longer than two smoke runs take on Ray even on a loaded 2-core machine (measured
# here: 120 s was not enough beside two 1-thread training processes); a sweep that blocked on a held run never ends.
HOLD_S = 600


def _holder_script(path, until: str = "") -> str:
    """A process that holds run directory `path` until the file `until` exists (or HOLD_S pass: exit code 3)."""
    return (f"import time, pathlib, sys\nfrom semifl_core import results\n"
            f"with results.hold(pathlib.Path({str(path)!r})):\n"
            f"    print('held', flush=True)\n    end = time.time() + {HOLD_S}\n"
            f"    while not pathlib.Path({until!r}).exists():\n"
            f"        time.sleep(0.05)\n        if time.time() > end: sys.exit(3)\n")


# ====================================================================== the default suite (no ray needed)
def test_importing_the_package_and_the_cli_loads_neither_ray_nor_flower():
    code = ("import sys, contextlib, io\n"
            "import semifl_core, semifl_core.sweep, semifl_core.results, semifl_core.report, semifl_core.run\n"
            "from semifl_core import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['--help']); cli.main(['sweep', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'flwr')))")
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_sweep_without_ray_says_how_to_install_it_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)   # `import ray` raises ImportError, as where it is not installed
    assert cli_main(["sweep", "table3", "--profile", "smoke", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "semifl: sweep needs the [distributed] extra: pip install -e '.[distributed]'\n"
    assert not any(tmp_path.iterdir())   # nothing was started or written


def test_sweep_of_an_unknown_grid_lists_the_grids_in_one_line(capsys):
    assert cli_main(["sweep", "tabel3", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("semifl: sweep 'tabel3': unknown grid; allowed are table1, ")
    assert "did you mean 'table3'?" in err and all(name in err for name in GRID_NAMES)


def test_every_grid_the_cli_names_builds_configs():
    from semifl_core.report.configs import GRIDS, grid_configs
    assert tuple(GRIDS) == GRID_NAMES   # the CLI's list (it cannot import the builders at start-up) is the real one
    for name in GRID_NAMES:
        configs = grid_configs(name, "smoke", rounds=2)
        assert configs and all(c.dataset == "synthetic" and c.rounds in (2, 10) for c in configs.values()), name
        assert sum(c.rounds == 2 for c in configs.values()) > len(configs) / 2   # 10: scale's and diagnosis' 5x
    assert len(grid_configs("table3", "smoke")) == 4


def test_the_split_grid_holds_every_n_s_the_diagnosis_notebook_draws_splits_at():
    from semifl_core.report.configs import diagnosis_ns, grid_configs
    ns = lambda name: {c.num_supervised for c in grid_configs(name, "small").values()}  # noqa: E731
    assert ns("split") == ns("diagnosis") == set(diagnosis_ns("small")) == {40, 100}
    assert {c.split_seed for c in grid_configs("split", "small").values()} == {0, 1, 2, 3, 4}


def test_a_held_run_is_refused_at_once_and_claimed_once_free(tmp_path):
    path = tmp_path / "results" / "run-a"
    free = tmp_path / "free"
    holder = subprocess.Popen([sys.executable, "-c", _holder_script(path, str(free))], env=ENV,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.perf_counter()
        with results.try_hold(path) as mine:
            assert mine is False
        assert time.perf_counter() - start < 1.0                  # refused without waiting for the holder
        assert results.held_by(path) == f"process {holder.pid}"   # and the holder keeps its hold
        free.touch()
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()
    with results.try_hold(path) as mine:
        assert mine is True
        check = subprocess.run([sys.executable, "-c", "import sys; from semifl_core import results\n"
                                f"with results.try_hold({str(path)!r}) as mine: sys.exit(0 if mine else 7)"],
                               env=ENV, timeout=60)
        assert check.returncode == 7   # while this process holds it, another is refused
    assert not path.exists()           # nothing but the lock was left: removed on the way out, as `hold` does


def test_a_claim_covers_the_run_it_trains_and_a_mere_look_does_not_refuse_it(tmp_path):
    cfg = CONFIGS[2]
    path = results.run_dir(tmp_path, cfg)
    with results.try_hold(path) as mine:
        assert mine
        with results.hold(path):   # re-entrant in this thread: no deadlock with run.run's own hold
            pass
        s = run(cfg, tmp_path, device="cpu", progress=False)
        assert not s["reused"] and results.inspect(path).state == "complete"
    # a process that only looks (held_by's brief shared lock) is told apart from one that holds the run
    fd = os.open(path / results.LOCK, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    threading.Timer(0.03, os.close, [fd]).start()
    with results.try_hold(path) as mine:
        assert mine


# ====================================================================== on Ray (the [distributed] extra)
SWEEP = """
import json, sys, time, pathlib
from semifl_core.config import profile
from semifl_core.sweep import sweep
a = json.loads(sys.argv[1])
if a.get("ready"):   # join Ray first, then wait for the other sweep, so that both sweep at once
    import ray
    ray.init(address=a["address"], log_to_driver=False, logging_level="WARNING")
    pathlib.Path(a["ready"]).touch()
    while not all(pathlib.Path(p).exists() for p in a["others"]):
        time.sleep(0.02)
out = sweep([profile("smoke", rounds=3, **kw) for kw in a["runs"]], a["results"], address=a["address"],
            progress=False, checkpoint_every=a.get("checkpoint_every", 10))
pathlib.Path(a["out"]).write_text(json.dumps({"summaries": out.summaries, "failures": out.failures}))
"""


STOPPED = """
import json, sys
from semifl_core.config import profile
from semifl_core.sweep import sweep
a = json.loads(sys.argv[1])
try:
    sweep([profile("smoke", **kw) for kw in a["runs"]], a["results"], address=a["address"], progress=False,
          checkpoint_every=10 ** 6)
except KeyboardInterrupt as err:
    print(err, flush=True)
    sys.exit(130)
"""


def _ray_tmp() -> str:
    """A short directory for a Ray instance's files (its socket paths must stay under 107 characters)."""
    return tempfile.mkdtemp(prefix="semifl-ray-", dir="/tmp")


def _metrics(path):
    m = pd.read_csv(Path(path) / "metrics.csv")
    return m[[c for c in m.columns if not c.startswith("time_")]]


def _same_as_one_by_one(summary, ref):
    for key in ("final_acc", "best_acc", "best_round", "rounds_done", "best_acc_train_sbn"):
        assert summary[key] == ref[key], key
    pd.testing.assert_frame_equal(_metrics(summary["path"]), _metrics(ref["path"]))


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance (2 CPUs) for the module: starting one takes 10-20 s here. The sweeps in subprocesses
    join it by its address, as sweeps join a cluster."""
    ray = pytest.importorskip("ray")
    where = _ray_tmp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=where, log_to_driver=False,
                 logging_level="WARNING")
    yield ray
    ray.shutdown()
    shutil.rmtree(where, ignore_errors=True)


def _address(ray) -> str:
    return ray.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory):
    """The four runs trained one after the other in this process, with run.run, on one thread as each sweep worker
    trains (OMP_NUM_THREADS=1): on another thread count the sums round otherwise, a client sample at the smoke
    profile's threshold is taken in one and not the other, and the runs part after round 1."""
    where = tmp_path_factory.mktemp("one-by-one")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [run(cfg, where, device="cpu", progress=False) for cfg in CONFIGS]
    finally:
        torch.set_num_threads(threads)


@pytest.mark.distributed
class TestOnRay:
    def test_a_sweep_gives_the_same_runs_as_one_by_one_and_a_complete_grid_needs_no_ray(self, local_ray, one_by_one,
                                                                                      tmp_path, monkeypatch):
        from semifl_core.sweep import sweep
        out = sweep(CONFIGS, tmp_path, progress=False)
        assert out.failures == {} and out.trained == 4
        for s, ref in zip(out.summaries, one_by_one):
            assert Path(s["path"]).parent == tmp_path and not s["reused"]
            _same_as_one_by_one(s, ref)
        monkeypatch.setitem(sys.modules, "ray", None)   # complete runs are reused without Ray
        again = sweep(CONFIGS, tmp_path, progress=False)
        assert again.reused == 4 and [s["path"] for s in again.summaries] == [s["path"] for s in out.summaries]

    def test_run_all_on_ray_gives_the_processes_backend_table(self, local_ray, one_by_one, tmp_path):
        from semifl_core.report import run_all
        configs = {"SemiFL": CONFIGS[0], "Partially Supervised": CONFIGS[2]}
        df = run_all(configs, [0], tmp_path, device="cpu", backend="ray")
        assert list(df.label) == list(configs) and not df.reused.any()
        assert list(df.final_acc) == [one_by_one[0]["final_acc"], one_by_one[2]["final_acc"]]
        again = run_all(configs, [0], tmp_path, device="cpu")   # the default backend reuses what Ray trained
        assert again.reused.all() and list(again.path) == list(df.path)

    def test_a_killed_sweep_is_finished_by_the_next_without_retraining(self, local_ray, one_by_one, tmp_path):
        store = tmp_path / "results"
        args = dict(runs=RUNS, results=str(store), out=str(tmp_path / "out.json"), address=_address(local_ray),
                    checkpoint_every=1)
        first = subprocess.Popen([sys.executable, "-c", SWEEP, json.dumps(args)], env=ENV, cwd=tmp_path,
                                 stderr=subprocess.PIPE, start_new_session=True)
        paths = [results.run_dir(store, c) for c in CONFIGS]
        try:
            _wait_for(lambda: any((p / "summary.json").exists() for p in paths) or first.poll() is not None,
                      "the first run of the sweep to complete")
        finally:   # the sweep's driver: Ray then ends the tasks it owns, the runs they were training with them
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=60)
        assert first.returncode == -signal.SIGKILL, first.stderr.read().decode()[-2000:]
        states = [results.inspect(p).state if p.exists() else "new" for p in paths]
        finished = [i for i, state in enumerate(states) if state == "complete"]
        assert finished and len(finished) < 4, states   # killed midway
        before = {i: ((paths[i] / "summary.json").stat().st_mtime_ns, (paths[i] / "summary.json").read_bytes())
                  for i in finished}

        from semifl_core.sweep import sweep
        _wait_for(lambda: not any(results.held_by(p) for p in paths), "the killed workers' locks to go", 60)
        out = sweep(CONFIGS, store, progress=False)
        assert out.failures == {}
        assert [s["reused"] for s in out.summaries] == [i in finished for i in range(4)]   # only the rest trained
        for i, (mtime, content) in before.items():
            assert (paths[i] / "summary.json").stat().st_mtime_ns == mtime
            assert (paths[i] / "summary.json").read_bytes() == content
        for s, ref in zip(out.summaries, one_by_one):   # resumed or restarted, the runs are the uninterrupted ones
            _same_as_one_by_one(s, ref)

    def test_two_concurrent_sweeps_over_one_grid_train_every_run_once(self, local_ray, one_by_one, tmp_path):
        # one sweep in a subprocess, one here, started together (each waits for the other to be ready)
        from semifl_core.sweep import sweep
        store, ready = tmp_path / "results", [tmp_path / "ready-there", tmp_path / "ready-here"]
        args = dict(runs=RUNS, results=str(store), out=str(tmp_path / "out.json"), address=_address(local_ray),
                    ready=str(ready[0]), others=[str(r) for r in ready])
        there = subprocess.Popen([sys.executable, "-c", SWEEP, json.dumps(args)], env=ENV, cwd=tmp_path,
                                 stderr=subprocess.PIPE, start_new_session=True)
        try:
            _wait_for(lambda: ready[0].exists() or there.poll() is not None, "the other sweep to join Ray")
            ready[1].touch()
            here = sweep(CONFIGS, store, progress=False)
            assert there.wait(timeout=240) == 0, there.stderr.read().decode()[-3000:]
        finally:
            if there.poll() is None:
                os.killpg(there.pid, signal.SIGKILL)
        got = json.loads((tmp_path / "out.json").read_text())
        assert got["failures"] == {} and here.failures == {}
        for i in range(4):
            a, b = here.summaries[i], got["summaries"][i]
            assert [a["reused"], b["reused"]].count(False) == 1, (i, a["reused"], b["reused"])   # trained once
            assert a["summary_sha256"] == b["summary_sha256"]   # and both sweeps report that one training
            _same_as_one_by_one(a, one_by_one[i])

    def test_runs_held_elsewhere_are_left_for_the_end_without_blocking_a_worker(self, local_ray, one_by_one,
                                                                             tmp_path):
        # another process holds the first two runs until the last two are complete. Ray has 2 CPUs: a sweep whose
        # tasks waited on a held run would block both workers, and the holder would never let go (exit code 3).
        from semifl_core.sweep import sweep
        paths = [results.run_dir(tmp_path, c) for c in CONFIGS]
        marker = tmp_path / "others-done"
        holders = [subprocess.Popen([sys.executable, "-c", _holder_script(p, str(marker))], env=ENV,
                                    stdout=subprocess.PIPE, text=True) for p in paths[:2]]
        for h in holders:
            assert h.stdout.readline().strip() == "held"
        done = threading.Event()

        def release():   # let go once runs 3 and 4 are complete (or the sweep has ended)
            while not done.is_set() and not all((p / "summary.json").exists() for p in paths[2:]):
                time.sleep(0.05)
            marker.touch()
        watcher = threading.Thread(target=release)
        watcher.start()
        try:
            out = sweep(CONFIGS, tmp_path, progress=False)
        finally:
            done.set()
            watcher.join()
            codes = [h.wait(timeout=HOLD_S + 30) for h in holders]
        assert codes == [0, 0]   # released because the other runs finished while the held ones were left aside
        assert out.failures == {} and out.trained == 4
        held_done = min((p / "summary.json").stat().st_mtime_ns for p in paths[:2])
        assert held_done > max((p / "summary.json").stat().st_mtime_ns for p in paths[2:])
        for s, ref in zip(out.summaries, one_by_one):
            _same_as_one_by_one(s, ref)

    def test_a_wrong_address_is_one_line_not_a_hang(self, local_ray, tmp_path):
        from semifl_core.config import ConfigError
        from semifl_core.sweep import sweep
        with pytest.raises(ConfigError, match="this process is connected to the Ray instance at"):
            sweep(CONFIGS, tmp_path, address="127.0.0.1:1")   # connected to another instance: said, not ignored
        start = time.perf_counter()   # a fresh process: Ray alone would retry that address for minutes
        out = subprocess.run([sys.executable, "-m", "semifl_core.cli", "sweep", "table3", "--profile", "smoke",
                              "--rounds", "2", "--address", "127.0.0.1:1", "--results-dir", str(tmp_path)], env=ENV,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and time.perf_counter() - start < 60
        assert out.stderr.startswith("semifl: address '127.0.0.1:1': nothing answers there") and \
            out.stderr.count("\n") == 1, out.stderr

    def test_a_failed_run_is_reported_not_counted_done_and_the_others_finish(self, local_ray, tmp_path, capsys):
        from semifl_core.sweep import SweepError, sweep
        diverges = profile("smoke", rounds=3, lr=1e12)   # round 1: a loss is nan (TrainingError)
        out = sweep([CONFIGS[2], diverges], tmp_path, names=["fine", "diverges"], progress=True)
        assert out.summaries[0] is not None and not out.summaries[0]["reused"]
        assert out.summaries[1] is None and list(out.failures) == [1] and out.trained == 1
        assert re.match(r"TrainingError: round 1: (client|server) loss is nan", out.failures[1]), out.failures[1]
        assert results.inspect(results.run_dir(tmp_path, diverges)).state != "complete"
        err = capsys.readouterr().err
        assert "done=1" in err and "failed=1" in err and "done=2" not in err   # the bar: the failure is not done
        assert re.search(r"semifl: sweep: 1 of 2 runs failed:\n  diverges: TrainingError: round 1: (client|server) "
                         "loss is nan", err), err
        with pytest.raises(SweepError, match=r"1 of 2 runs failed: diverges: TrainingError: round 1"):
            out.check()

    def test_sigterm_stops_a_sweep_as_a_process_sweep_stops(self, local_ray, tmp_path):
        # each running run finishes its round and writes its checkpoint (none is due: checkpoint_every is huge), the
        # driver waits for them and says in one line what is left; before, the runs died mid-round with the driver
        from semifl_core.run import checkpoint_mismatch
        store, runs = tmp_path / "results", [dict(seed=0, rounds=10 ** 4), dict(seed=1, rounds=10 ** 4)]
        cfgs = [profile("smoke", **kw) for kw in runs]
        paths = [results.run_dir(store, c) for c in cfgs]
        driver = subprocess.Popen([sys.executable, "-c", STOPPED, json.dumps(dict(runs=runs, results=str(store),
                                   address=_address(local_ray)))], env=ENV, cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _wait_for(lambda: all((p / "config.json").exists() for p in paths) or driver.poll() is not None,
                      "both runs to start their rounds")   # run.run writes config.json just before its first round
            time.sleep(2)   # some rounds into the runs
            driver.send_signal(signal.SIGTERM)
            out, err = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
        assert driver.returncode == 130, err[-3000:]
        assert out.splitlines() == ["stopped: 2 runs unfinished (checkpointed), 0 not started; run the same "
                                    "cell/command again to resume"]
        for cfg, path in zip(cfgs, paths):
            ck = torch.load(path / "checkpoint.pt", weights_only=False)
            assert checkpoint_mismatch(ck, cfg) == "" and 1 <= ck["round"] < cfg.rounds
            assert not results.held_by(path)   # the tasks have ended: nothing trains on

    def test_semifl_sweep_refuses_runs_per_gpu_below_one_in_one_line(self, tmp_path):
        pytest.importorskip("ray")   # the command asks for ray first
        out = subprocess.run([sys.executable, "-m", "semifl_core.cli", "sweep", "table3", "--profile", "smoke",
                              "--runs-per-gpu", "0", "--results-dir", str(tmp_path)], env=ENV, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2 and out.stderr == ("semifl: runs_per_gpu=0: must be an integer >= 1 (the runs "
                                                      "trained at once on one GPU)\n")
