"""The results store: one directory per run, named by a hash of its resolved config.

A run directory holds
  config.json      the resolved config and the package version (written first)
  metrics.csv      one row per round (rewritten at every checkpoint)
  checkpoint.pt    everything needed to resume (while the run is incomplete; removed when it completes)
  model.pt         final and best-round global weights (optional: never committed, a run is complete without it)
  summary.json     written last, with the sha256 of metrics.csv, of model.pt and of itself
  .lock            held (flock) by the one process that works on the run; the OS drops it when that process ends
A run is complete when summary.json is intact, metrics.csv and model.pt (if present) match its checksums and its
numbers are metrics.csv's; a config.json whose key is not the directory name's makes the run corrupt, whatever its
state. Every write goes to a temporary file, is fsync'ed, then renamed over the old one: a crash or a full disk leaves
the previous good file. A checkpoint is a zip archive (torch.save) with a CRC-32 per member, checked without unpickling.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .config import Config, result_fields, run_key


class ResultsError(RuntimeError):
    """A run directory that cannot be used as asked (corrupt, or made by another config)."""


class DiskError(ResultsError):
    """The results directory's file system is full or refuses writes while a run trains (disk_error): one line."""


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
DISK_ERRNOS = (*DISK_FULL, errno.EROFS, errno.EACCES, errno.EPERM)   # what disk_error turns into one line


def disk_error(err: OSError, need: int, kept: str = "") -> DiskError:
    """err (errno in DISK_ERRNOS) as one line: the file it could not write; for a full disk, about the space a run
    needs (`need` bytes, run.disk_need); `kept`: what is on disk now (the last checkpoint)."""
    from .config import _size
    full = err.errno in DISK_FULL
    why = f"no space left on device (a run of this config needs about {_size(need)} free there)" if full \
        else (err.strerror or str(err))
    todo = "free some space" if full else "make it writable"
    return DiskError(f"cannot write {err.filename or 'the results directory'}: {why}{'; ' + kept if kept else ''}; "
                     f"{todo} (or choose another results directory) and run the same command again")


def check_writable(results_dir) -> None:
    """Before a run trains: its results directory (made if missing) must take a small file. Read-only or not ours to
    write: ResultsError, one line; full: the OSError (ENOSPC) naming the directory, for run.run to say as disk_error."""
    root = Path(results_dir)
    if root.exists() and not root.is_dir():
        raise ResultsError(f"results_dir {str(root)!r} is a file, not a directory; choose another results directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root, prefix=".probe-", suffix=".tmp") as fh:
            fh.write(bytes(4096))
            fh.flush()   # into the file system, which refuses it when full
    except OSError as err:
        if err.errno in DISK_FULL:
            raise OSError(err.errno, err.strerror, str(root)) from None
        what = "is read-only" if err.errno == errno.EROFS else "is not writable"
        raise ResultsError(f"results directory {root} {what} ({err.strerror or err}); choose another results "
                           "directory") from None


def run_dir(results_dir, cfg: Config) -> Path:
    """<algorithm>-<dataset>[-<partition>][-ns<N_S>]-seed<seed>-<key>: the parts the algorithm reads."""
    parts = [cfg.algorithm, cfg.dataset, cfg.partition if cfg.reads("partition") else None,
             f"ns{cfg.num_supervised}" if cfg.reads("num_supervised") else None, f"seed{cfg.seed}", cfg.key()]
    return Path(results_dir) / "-".join(p for p in parts if p)


def atomic_write(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None and os.path.exists(tmp):   # a partial file, never left behind
            os.unlink(tmp)
        if isinstance(err, OSError) and err.errno in DISK_ERRNOS:   # name the file meant, not the temporary one
            raise OSError(err.errno, err.strerror, str(path)) from None
        raise


def save_torch(path: Path, obj) -> None:
    import torch
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write(path, buf.getvalue())


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def config_record(cfg: Config) -> dict:
    return {"config": cfg.to_dict(), "key": cfg.key(), "version": __version__}


@dataclass
class RunInfo:
    path: Path
    state: str          # complete | incomplete | corrupt
    reason: str = ""
    config: dict | None = None
    summary: dict | None = None


def seal(summary: dict) -> dict:
    """The summary with the sha256 of its own content (every other field) added as "summary_sha256"."""
    body = {k: v for k, v in summary.items() if k != "summary_sha256"}
    return {**body, "summary_sha256": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()}


def summarize(metrics: pd.DataFrame) -> dict:
    """The summary's numbers that metrics.csv determines: last round, final and best (on the test set) accuracy."""
    acc = metrics["test_acc"] if "test_acc" in metrics else pd.Series(dtype=float)
    best = acc.idxmax() if acc.notna().any() else None
    return {"rounds_done": int(len(metrics)), "final_acc": float(acc.iloc[-1]) if len(acc) else float("nan"),
            "best_acc": float(acc[best]) if best is not None else -1.0,
            "best_round": int(metrics["round"][best]) if best is not None else None}


def _same_number(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _verify(path: Path, summary: dict) -> str:
    """Why a summary cannot be trusted ("" when it can)."""
    if seal(summary)["summary_sha256"] != summary.get("summary_sha256"):
        return "summary.json was changed after it was written (its own checksum does not match)"
    for name, digest in summary["checksums"].items():
        if not (path / name).exists() and name != "metrics.csv":
            continue  # model.pt is optional: weights are never committed
        if sha256(path / name) != digest:
            return f"{name} does not match its checksum in summary.json"
    for key, value in summarize(load_metrics(path)).items():
        if not _same_number(summary.get(key), value):
            return f"summary.json says {key}={summary.get(key)} but metrics.csv gives {value}"
    return ""


def checkpoint_problem(ckpt: Path) -> str:
    """Why a checkpoint cannot be restored ("" when its zip structure and CRC-32s are intact; nothing is unpickled)."""
    try:
        with zipfile.ZipFile(ckpt) as z:
            bad, names = z.testzip(), z.namelist()
    except Exception as err:  # a damaged archive can fail in many ways (BadZipFile, OSError, EOFError, zlib.error)
        return f"{ckpt.name} is unreadable: truncated or not a checkpoint ({type(err).__name__})"
    if bad:
        return f"{ckpt.name} is damaged ({bad} fails its CRC check)"
    if not any(n.endswith("data.pkl") for n in names):
        return f"{ckpt.name} is a zip archive but not a torch checkpoint"
    return ""


def inspect(path: Path) -> RunInfo:
    """State of one run directory."""
    path = Path(path)
    try:
        record = json.loads((path / "config.json").read_text())
        if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
            raise ValueError("no config record in it")
    except FileNotFoundError:
        others = [f.name for f in path.iterdir() if f.name != LOCK and not f.name.endswith(".tmp")] \
            if path.is_dir() else []
        if not others:   # a run being set up by the process that holds it, or one that died before writing
            return RunInfo(path, "incomplete", "no config.json yet")
        return RunInfo(path, "corrupt", f"config.json is missing (the directory holds {', '.join(sorted(others))})")
    except (OSError, ValueError) as err:
        return RunInfo(path, "corrupt", f"config.json unreadable ({type(err).__name__}: {err})")
    if not path.name.endswith(f"-{run_key(record['config'])}"):
        return RunInfo(path, "corrupt", f"config.json holds a different config (key {run_key(record['config'])}) "
                                        "than the directory's name says (edited or copied from another run)")
    summary_path = path / "summary.json"
    if not summary_path.exists():
        ckpt = path / "checkpoint.pt"
        if ckpt.exists() and (why := checkpoint_problem(ckpt)):
            return RunInfo(path, "corrupt", why, record)
        return RunInfo(path, "incomplete", "no summary.json yet", record)
    try:
        summary = json.loads(summary_path.read_text())
        if not isinstance(summary, dict):
            raise ValueError("summary.json is not a JSON object")
        reason = _verify(path, summary)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, pd.errors.ParserError) as err:
        return RunInfo(path, "corrupt", f"summary or its files unreadable ({type(err).__name__}: {err})", record)
    if reason:
        return RunInfo(path, "corrupt", reason, record, summary)
    return RunInfo(path, "complete", "", record, summary)


def open_run(results_dir, cfg: Config) -> RunInfo:
    """The run directory for cfg: complete (reuse), incomplete (resume) or new. Refuses a corrupt one and one
    whose stored config differs from cfg."""
    path = run_dir(results_dir, cfg)
    if not path.exists():
        return RunInfo(path, "new")
    info = inspect(path)
    if info.state == "corrupt":
        raise ResultsError(f"{path}: corrupt ({info.reason}); delete that directory to start the run over, or run "
                           f"`semifl runs --clean --results-dir {results_dir}`")
    if info.config is None:   # set up by another process right now: `hold` waits for it
        return info
    if result_fields(info.config.get("config", {})) != result_fields(cfg.to_dict()):
        raise ResultsError(f"{path}: holds a run of a different config; remove it or choose another results_dir")
    return info


# ---------------------------------------------------------------------- one process per run
LOCK = ".lock"


_HELD: set = set()   # (run directory, thread) of every hold this process has now


@contextmanager
def hold(path: Path):
    """Hold run directory `path` (made if missing) while the block runs: an exclusive flock on path/.lock, which the OS
    drops when this process ends, however it ends; if another process holds it, wait, saying once which. Re-entrant in
    the thread that holds it already (a sweep worker's `try_hold`, then run.run's `hold`)."""
    path = Path(path)
    if _key(path) in _HELD:   # this thread holds it already
        yield path
        return
    fd = _acquire(path, block=True)
    with _holding(path, fd):
        yield path


@contextmanager
def try_hold(path: Path):
    """`hold` without waiting: yields True, holding `path` while the block runs, or False at once if another process
    holds it (`held_by(path)` says which)."""
    path = Path(path)
    if _key(path) in _HELD:   # this thread holds it already
        yield True
        return
    fd = _acquire(path, block=False)
    if fd is None:
        yield False
        return
    with _holding(path, fd):
        yield True


def _key(path: Path) -> tuple:
    return os.path.realpath(path), threading.get_ident()


def _acquire(path: Path, block: bool) -> int | None:
    """An open descriptor of path/.lock holding its exclusive flock; None if another process holds it and not block."""
    said = False
    while True:
        _mkdir(path)
        fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not block:
                    if _held_elsewhere(fd):
                        os.close(fd)
                        return None
                else:
                    if not said:
                        print(f"semifl: {path} is in use by {_holder(fd)}; waiting for it to finish",
                              file=sys.stderr, flush=True)
                        said = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path / LOCK):
            return fd
        os.close(fd)  # the directory was removed (semifl runs --clean) while we waited: lock the new one


def _held_elsewhere(fd: int, tries: int = 5) -> bool:
    """Whether another process keeps its lock on fd's file: one that only looks (held_by, `semifl runs`) holds it for
    microseconds, so a few more tries 20 ms apart tell a look from a hold. False: fd holds the lock now."""
    for _ in range(tries):
        time.sleep(0.02)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            pass
    return True


@contextmanager
def _holding(path: Path, fd: int):
    """A hold's body: our pid in the lock file, the hold registered; on exit, a directory of only the lock removed."""
    key = _key(path)
    _HELD.add(key)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        _HELD.discard(key)
        try:
            if {f.name for f in path.iterdir()} == {LOCK}:
                (path / LOCK).unlink()
                path.rmdir()
        except OSError:
            pass
        os.close(fd)


def _mkdir(path: Path) -> None:
    if path.parent.exists() and not path.parent.is_dir():
        raise ResultsError(f"results_dir {str(path.parent)!r} is a file, not a directory; choose another results "
                           "directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ResultsError(f"cannot create run directory {path} ({err.strerror}); choose another results directory") \
            from None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _holder(fd: int) -> str:
    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"process {pid}" if pid.isdigit() else "another process"


def held_by(path: Path) -> str:
    """'process N' if another process holds run directory `path` now, else ''."""
    try:
        fd = os.open(Path(path) / LOCK, os.O_RDONLY)
    except OSError:
        return ""   # never held (or not a run directory)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return ""
    except BlockingIOError:
        return _holder(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- the store as a whole
def store_root(results_dir) -> Path:
    """results_dir as a store that may be listed and cleaned: not '' (which would mean the current directory), not a
    file, not the root of a git checkout (a store lives inside one, never is one)."""
    if str(results_dir).strip() == "":
        raise ResultsError("results_dir '': give a directory (e.g. results); '' would be the current directory")
    root = Path(results_dir)
    if root.exists() and not root.is_dir():
        raise ResultsError(f"results_dir {str(root)!r} is a file, not a directory; choose another results directory")
    if (root / ".git" / "HEAD").is_file() or (root / ".git").is_file():   # a repository, or a worktree's gitdir
        raise ResultsError(f"results_dir {str(root)!r} is the root of a git checkout, not a results store; give its "
                           "results/ folder (or another store)")
    return root


def _run_name() -> re.Pattern:
    """run_dir's naming: <algorithm>-<dataset>[-...]-seed<seed>-<12 hex digits>, with a known algorithm and dataset."""
    from .config import DATASETS
    from .methods import METHODS
    alternatives = lambda names: "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))  # noqa: E731
    return re.compile(rf"({alternatives(METHODS)})-({alternatives(DATASETS)})(-.+)?-seed\d+-[0-9a-f]{{12}}")


def is_run(path: Path) -> bool:
    """A directory the store made (run_dir's naming, a config.json or the lock); nothing else is listed or removed."""
    path = Path(path)
    return (path.is_dir() and not path.is_symlink() and bool(_run_name().fullmatch(path.name))
            and ((path / "config.json").is_file() or (path / LOCK).is_file()))


def run_dirs(results_dir) -> list[Path]:
    """The runs in a results directory (is_run), sorted."""
    root = store_root(results_dir)
    return sorted(p for p in root.iterdir() if is_run(p)) if root.exists() else []


def not_runs(results_dir) -> list[Path]:
    """Everything else in a results directory, sorted."""
    root = store_root(results_dir)
    return sorted(p for p in root.iterdir() if not is_run(p)) if root.exists() else []


def list_runs(results_dir) -> pd.DataFrame:
    rows = []
    for path in run_dirs(results_dir):
        info = inspect(path)
        cfg = (info.config or {}).get("config", {})
        s = info.summary or {}
        rows.append({"run": path.name, "state": info.state, "algorithm": cfg.get("algorithm"),
                     "dataset": cfg.get("dataset"), "partition": cfg.get("partition"), "seed": cfg.get("seed"),
                     "rounds_done": s.get("rounds_done"), "final_acc": s.get("final_acc"),
                     "best_acc": s.get("best_acc"), "reason": info.reason,
                     "held_by": held_by(path) if info.state != "complete" else ""})
    return pd.DataFrame(rows, columns=["run", "state", "algorithm", "dataset", "partition", "seed", "rounds_done",
                                       "final_acc", "best_acc", "reason", "held_by"])


def removable(results_dir, include_corrupt: bool = True) -> list[Path]:
    """The runs `remove_incomplete` would remove now: incomplete (and corrupt) ones."""
    return [p for p in run_dirs(results_dir) if _removable(p, include_corrupt)]


def remove_incomplete(results_dir, include_corrupt: bool = True, skipped: list | None = None,
                      only: list | None = None) -> list[str]:
    """Remove incomplete (and corrupt) runs, of `only` if given (a list from `removable`); never one that a process
    holds (appended to `skipped` instead), never anything that is not a run (is_run)."""
    removed = []
    for path in run_dirs(results_dir):
        if not _removable(path, include_corrupt) or (only is not None and path not in only):
            continue
        fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if skipped is not None:
                    skipped.append(f"{path.name} (in use by {_holder(fd)})")
                continue
            if _same_file(fd, path / LOCK) and is_run(path) and _removable(path, include_corrupt):  # still, now held
                shutil.rmtree(path)
                removed.append(path.name)
        finally:
            os.close(fd)
    return removed


def _removable(path: Path, include_corrupt: bool) -> bool:
    state = inspect(path).state
    return state == "incomplete" or (include_corrupt and state == "corrupt")


def load_metrics(path) -> pd.DataFrame:
    return pd.read_csv(Path(path) / "metrics.csv")


# ---------------------------------------------------------------------- training time, read back
# What a round's time depends on besides the method and N_S: a run is priced only by runs of its size
SIZE_FIELDS = ("dataset", "model", "num_clients", "active_rate", "local_epochs", "client_batch", "server_epochs",
               "server_batch")


def minutes_per_round(results_dir) -> dict:
    """(algorithm, num_supervised, size) -> the median training minutes per round of the store's complete runs."""
    per = {}
    for s in Path(results_dir).glob("*/summary.json"):
        cfg = json.loads((s.parent / "config.json").read_text())["config"]
        key = (cfg["algorithm"], cfg["num_supervised"], tuple(cfg.get(f) for f in SIZE_FIELDS))
        per.setdefault(key, []).append(train_minutes(s.parent) / cfg["rounds"])
    return {k: float(np.median(v)) for k, v in per.items()}


def estimate_minutes(cfgs, per: dict) -> float:
    """CPU minutes for `cfgs` at the rates `per` (minutes_per_round) of runs of their size: same method and N_S, else
    method, else SemiFL; NaN with no run of that size to go by. More floor than forecast: semi-supervised rounds grow
    with the label ratio."""
    from .methods import SEMIFL
    total = 0.0
    for cfg in cfgs:
        size = tuple(getattr(cfg, f) for f in SIZE_FIELDS)
        near = sorted((alg != cfg.algorithm, n, v) for (alg, n, sz), v in per.items()
                      if sz == size and alg in (cfg.algorithm, SEMIFL))   # its own method first, then SemiFL
        rate = per.get((cfg.algorithm, cfg.num_supervised, size)) or (near[0][2] if near else None)
        total += rate * cfg.rounds if rate is not None else float("nan")
    return total


def train_minutes(path) -> float:
    """A run's training time in minutes: the per-phase times its metrics.csv records each round, summed (start-up
    excluded). Unlike summary.json's wall_time_s (the last process's time), it counts every round of a resumed run."""
    m = load_metrics(path)
    return float(np.nansum(m[[c for c in m.columns if c.startswith("time_")]].to_numpy(float)) / 60)
