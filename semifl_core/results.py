"""The results store: one directory per run, named by a hash of its resolved config.

A run directory holds
  config.json      the resolved config and the package version (written first)
  metrics.csv      one row per round (rewritten atomically at every checkpoint)
  checkpoint.pt    everything needed to resume (while the run is incomplete; removed when it completes)
  model.pt         final and best-round global weights (a finished run keeps these)
  summary.json     written LAST, atomically, with the sha256 of metrics.csv and model.pt: its presence with
                   matching checksums is what makes a run complete.
Every write goes to a temporary file, is fsync'ed, then renamed over the old one, so a crash while
writing leaves the previous good file in place.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from . import __version__
from .config import EXECUTION_FIELDS, Config


class ResultsError(RuntimeError):
    """A run directory that cannot be used as asked (corrupt, or made by another config)."""


def run_dir(results_dir, cfg: Config) -> Path:
    name = f"{cfg.algorithm}-{cfg.dataset}-{cfg.partition}-ns{cfg.num_supervised}-seed{cfg.seed}-{cfg.key()}"
    return Path(results_dir) / name


def atomic_write(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_torch(path: Path, obj) -> None:
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write(path, buf.getvalue())


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _result_fields(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in EXECUTION_FIELDS}


def config_record(cfg: Config) -> dict:
    return {"config": cfg.to_dict(), "key": cfg.key(), "version": __version__}


@dataclass
class RunInfo:
    path: Path
    state: str          # complete | incomplete | corrupt
    reason: str = ""
    config: dict | None = None
    summary: dict | None = None


def inspect(path: Path) -> RunInfo:
    """State of one run directory."""
    path = Path(path)
    try:
        record = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as err:
        return RunInfo(path, "corrupt", f"config.json unreadable ({type(err).__name__})")
    summary_path = path / "summary.json"
    if not summary_path.exists():
        return RunInfo(path, "incomplete", "no summary.json yet", record)
    try:
        summary = json.loads(summary_path.read_text())
        for name, digest in summary["checksums"].items():
            if sha256(path / name) != digest:
                return RunInfo(path, "corrupt", f"{name} does not match its checksum in summary.json", record, summary)
    except (OSError, ValueError, KeyError) as err:
        return RunInfo(path, "corrupt", f"summary or its files unreadable ({type(err).__name__}: {err})", record)
    return RunInfo(path, "complete", "", record, summary)


def open_run(results_dir, cfg: Config) -> RunInfo:
    """The run directory for cfg: complete (reuse), incomplete (resume) or new. Refuses a corrupt one and one
    whose stored config differs from cfg."""
    path = run_dir(results_dir, cfg)
    if not path.exists():
        return RunInfo(path, "new")
    info = inspect(path)
    if info.state == "corrupt":
        raise ResultsError(f"{path}: corrupt ({info.reason}); remove it (semifl runs --clean) to run again")
    if _result_fields((info.config or {}).get("config", {})) != _result_fields(cfg.to_dict()):
        raise ResultsError(f"{path}: holds a run of a different config; remove it or choose another results_dir")
    return info


def list_runs(results_dir) -> pd.DataFrame:
    rows = []
    for path in sorted(Path(results_dir).glob("*")) if Path(results_dir).exists() else []:
        if not path.is_dir():
            continue
        info = inspect(path)
        cfg = (info.config or {}).get("config", {})
        s = info.summary or {}
        rows.append({"run": path.name, "state": info.state, "algorithm": cfg.get("algorithm"),
                     "dataset": cfg.get("dataset"), "partition": cfg.get("partition"), "seed": cfg.get("seed"),
                     "rounds_done": s.get("rounds_done"), "final_acc": s.get("final_acc"),
                     "best_acc": s.get("best_acc"), "reason": info.reason})
    return pd.DataFrame(rows, columns=["run", "state", "algorithm", "dataset", "partition", "seed", "rounds_done",
                                       "final_acc", "best_acc", "reason"])


def remove_incomplete(results_dir, include_corrupt: bool = True) -> list[str]:
    removed = []
    for path in sorted(Path(results_dir).glob("*")) if Path(results_dir).exists() else []:
        if path.is_dir():
            state = inspect(path).state
            if state == "incomplete" or (include_corrupt and state == "corrupt"):
                shutil.rmtree(path)
                removed.append(path.name)
    return removed


def load_metrics(path) -> pd.DataFrame:
    return pd.read_csv(Path(path) / "metrics.csv")


def load_summary(path) -> dict:
    return json.loads((Path(path) / "summary.json").read_text())
