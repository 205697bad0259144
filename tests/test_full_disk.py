"""A full or read-only results directory: one line naming the path (and, when full, about how much space a run
needs), no traceback; the last good checkpoint is kept, a resumed run equals an uninterrupted one, the runs a notebook's
grid finished stay complete. ENOSPC and read-only file systems are injected (monkeypatch), so no mount is needed."""
import errno
import io
import os
import pickle
import re
import tempfile

import pandas as pd
import pytest
import torch

from semifl_core import results
from semifl_core import run as run_mod
from semifl_core.cli import main as cli_main
from semifl_core.config import profile
from semifl_core.data import synthetic
from semifl_core.report import runs as report_runs
from semifl_core.results import DiskError, ResultsError

DATA = synthetic()
SMOKE = ["run", "--profile", "smoke", "--device", "cpu"]


def _run(cfg, where, **kw):
    return run_mod.run(cfg, where, device="cpu", progress=False, data=DATA, **kw)


def _metrics(path):
    m = pd.read_csv(os.path.join(path, "metrics.csv"))
    return m[[c for c in m.columns if not c.startswith("time_")]]


def _model(path):
    return torch.load(os.path.join(path, "model.pt"), weights_only=False)


def fill_disk(monkeypatch, when):
    """Files opened for writing through os.fdopen (results.atomic_write) whose path satisfies when(path): the disk
    fills while they are written, after half their bytes (ENOSPC). Returns the bytes that reached each such file."""
    real, written = os.fdopen, []

    class Filling(io.BufferedWriter):
        def write(self, data):
            half = bytes(data[:len(data) // 2])
            super().write(half)
            self.flush()
            written.append(len(half))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd, mode="r", *args, **kwargs):
        if "w" in mode and when(os.readlink(f"/proc/self/fd/{fd}")):
            return Filling(io.FileIO(fd, "w"))
        return real(fd, mode, *args, **kwargs)
    monkeypatch.setattr(os, "fdopen", fdopen)
    return written


def visible(stderr: str) -> list[str]:
    """The lines a terminal would show (a progress bar redraws itself after a carriage return)."""
    return [shown for line in stderr.split("\n") if (shown := line.split("\r")[-1].strip())]


def test_a_disk_that_fills_during_the_third_checkpoint_keeps_the_second_and_the_run_resumes_exactly(
        tmp_path, monkeypatch):
    cfg = profile("smoke", rounds=4)
    path = results.run_dir(tmp_path / "r", cfg)
    checkpoints = []

    def third_checkpoint(name):
        if os.path.basename(name).startswith(".checkpoint.pt."):
            checkpoints.append(name)
        return len(checkpoints) == 3 and os.path.basename(name).startswith(".checkpoint.pt.")
    written = fill_disk(monkeypatch, third_checkpoint)
    with pytest.raises(DiskError) as caught:
        _run(cfg, tmp_path / "r", checkpoint_every=1)
    monkeypatch.undo()
    msg = str(caught.value)
    assert written and written[0] > 0                      # it failed part-way through the file
    assert "\n" not in msg and msg.startswith(f"cannot write {path / 'checkpoint.pt'}: no space left on device")
    need = run_mod.disk_need(cfg)
    assert re.search(r"needs about [\d.]+ MiB free", msg) and 1 << 20 < need < 16 << 20, (msg, need)
    assert "the last good checkpoint (round 2) is kept" in msg
    # the previous checkpoint is intact, no partial temporary file is left, the run is incomplete (not complete)
    assert not list(path.glob(".*.tmp"))
    assert results.checkpoint_problem(path / "checkpoint.pt") == ""
    assert torch.load(path / "checkpoint.pt", weights_only=False)["round"] == 2
    assert len(pd.read_csv(path / "metrics.csv")) == 2
    assert results.inspect(path).state == "incomplete"
    # space freed: the same run resumes from round 2 and equals an uninterrupted one, bit for bit on the CPU
    trained, real_round = [], run_mod.Experiment.round
    monkeypatch.setattr(run_mod.Experiment, "round", lambda exp, st, r: trained.append(r) or real_round(exp, st, r))
    resumed = _run(cfg, tmp_path / "r", checkpoint_every=1)
    monkeypatch.undo()
    assert trained == [2, 3]                                # from the kept checkpoint, not from the start
    full = _run(cfg, tmp_path / "full")
    assert not resumed["reused"] and results.inspect(path).state == "complete"
    pd.testing.assert_frame_equal(_metrics(resumed["path"]), _metrics(full["path"]))
    a, b = _model(resumed["path"]), _model(full["path"])
    assert a["best_round"] == b["best_round"]
    for which in ("final", "best"):
        for k, v in b[which].items():
            assert torch.equal(a[which][k], v), (which, k)


def test_the_command_line_says_a_full_disk_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_mod, "_DATA_CACHE", {("synthetic", "None", "cpu"): DATA})
    fill_disk(monkeypatch, lambda name: os.path.basename(name).startswith(".checkpoint.pt."))
    rc = cli_main([*SMOKE, "--results-dir", str(tmp_path), "--checkpoint-every", "1"])
    err = capsys.readouterr().err
    lines = visible(err)
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert re.fullmatch(r"semifl: cannot write .*/checkpoint\.pt: no space left on device \(a run of this config "
                        r"needs about [\d.]+ MiB free there\); no checkpoint was written yet .*; free some space .*",
                        lines[0]), lines[0]


def test_a_full_results_directory_is_refused_before_any_training(tmp_path, monkeypatch, capsys):
    real = tempfile.TemporaryFile

    class Full(io.BufferedRandom):   # the probe file of a full file system
        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_round(*args):
        raise AssertionError("trained on a full disk")
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **kw: Full(real(*a, buffering=0, **kw)))
    monkeypatch.setattr(run_mod.Experiment, "round", no_round)
    rc = cli_main([*SMOKE, "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert rc == 1 and visible(err) == [err.strip()], err
    assert re.fullmatch(rf"semifl: cannot write {re.escape(str(tmp_path / 'results'))}: no space left on device "
                        r"\(a run of this config needs about [\d.]+ MiB free there\); nothing was trained; .*",
                        err.strip()), err
    assert os.listdir(tmp_path / "results") == []          # no run directory, no probe file left


def test_a_read_only_results_directory_is_refused_before_any_training_and_still_reused(tmp_path, monkeypatch,
                                                                                      capsys):
    store = tmp_path / "results"
    done = _run(profile("smoke", rounds=1), store)
    if os.geteuid() != 0:   # chmod stops everyone but root
        store.chmod(0o555)
    else:                   # root writes whatever the mode: inject a read-only file system
        def read_only(*args, dir=None, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
        monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    try:
        rc = cli_main([*SMOKE, "--set", "rounds=2", "--results-dir", str(store)])
        err = capsys.readouterr().err
        assert rc == 2 and visible(err) == [err.strip()], err
        assert re.fullmatch(rf"semifl: results directory {re.escape(str(store))} is (read-only|not writable) "
                            r"\((Read-only file system|Permission denied)\); choose another results directory",
                            err.strip())
        assert sorted(p.name for p in store.iterdir()) == [os.path.basename(done["path"])]
        # a complete run in a read-only store is read, never written: reused as ever
        assert cli_main([*SMOKE, "--set", "rounds=1", "--results-dir", str(store)]) == 0
        assert "reused" in capsys.readouterr().out
    finally:
        store.chmod(0o755)


def test_a_notebook_grid_that_fills_the_disk_stops_in_one_line_and_keeps_its_finished_runs(tmp_path, monkeypatch):
    cfg = profile("smoke", rounds=2)
    store = tmp_path / "results"
    first, second = (results.run_dir(store, cfg.replace(seed=s)) for s in (0, 1))
    monkeypatch.setattr(run_mod, "_DATA_CACHE", {("synthetic", "None", "cpu"): DATA})
    fill_disk(monkeypatch, lambda name: os.path.dirname(name) == os.path.realpath(second)
              and os.path.basename(name).startswith(".model.pt."))   # the second run, as it finishes
    with pytest.raises(DiskError) as caught:   # workers=1: run_all trains in this process, as its workers do
        report_runs.run_all({"SemiFL": cfg}, seeds=[0, 1], results_dir=store, device="cpu", workers=1)
    err = caught.value
    assert str(err).startswith(f"cannot write {second / 'model.pt'}: no space left on device") and "\n" not in str(err)
    assert results.inspect(first).state == "complete" and results.inspect(second).state != "complete"
    # a notebook shows it as the command line does, one line (report.runs sets this handler on the kernel) ...
    assert isinstance(err, report_runs._one_line_errors()) and isinstance(err, ResultsError)
    shown = []

    class Shell:
        def _showtraceback(self, etype, value, stb):
            shown.append(stb)
    report_runs._show_one_line(Shell(), type(err), err, None)
    assert shown == [[f"semifl: {err}"]]
    # ... and from a spawned worker too: the error crosses the process boundary as itself
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DiskError and str(back) == str(err)
    # space freed: the grid reuses the finished run and trains the other
    monkeypatch.undo()
    monkeypatch.setattr(run_mod, "_DATA_CACHE", {("synthetic", "None", "cpu"): DATA})
    df = report_runs.run_all({"SemiFL": cfg}, seeds=[0, 1], results_dir=store, device="cpu", workers=1)
    assert list(df.reused) == [True, False]


def test_a_checkpoint_is_written_while_the_next_round_trains(tmp_path, monkeypatch):
    """The writer thread: round 2 starts before round 1's checkpoint is on disk (the write waits for it), and the
    run still ends with every checkpoint's metrics and a complete result."""
    import threading
    started, overlapped, real = threading.Event(), [], run_mod.write_checkpoint
    round_fn = run_mod.Experiment.round

    def next_round(self, st, r):
        if r == 1:
            started.set()
        return round_fn(self, st, r)

    def slow_write(path, ck):
        overlapped.append(started.wait(timeout=20))   # returns only once round 2 has started, or after 20 s
        real(path, ck)
    monkeypatch.setattr(run_mod.Experiment, "round", next_round)
    monkeypatch.setattr(run_mod, "write_checkpoint", slow_write)
    out = _run(profile("smoke", rounds=2), tmp_path, checkpoint_every=1)
    assert overlapped[0] is True and len(_metrics(out["path"])) == 2


def test_a_full_disk_in_the_writer_thread_stops_the_run_with_the_last_good_checkpoint(tmp_path, monkeypatch):
    """A write that fails in the background is the run's error at the next round (one line, DiskError), and the
    checkpoint before it is what stays on disk."""
    cfg = profile("smoke", rounds=4)
    calls = []
    real = run_mod.write_checkpoint

    def second_fails(path, ck):
        calls.append(ck["round"])
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, ck)
    monkeypatch.setattr(run_mod, "write_checkpoint", second_fails)
    with pytest.raises(DiskError) as err:
        _run(cfg, tmp_path, checkpoint_every=1)
    assert "\n" not in str(err.value) and "checkpoint (round 1)" in str(err.value)
    ck = torch.load(next(tmp_path.glob("*/checkpoint.pt")), weights_only=False)
    assert ck["round"] == 1
