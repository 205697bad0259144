"""The results store: one directory per run, named by a hash of its resolved config.

A run directory holds
  config.json      the resolved config and the package version (written first)
  metrics.csv      one row per round (rewritten atomically at every checkpoint)
  checkpoint.pt    everything needed to resume (while the run is incomplete; removed when it completes)
  model.pt         final and best-round global weights (optional: never committed, a run is complete without it)
  summary.json     written LAST, atomically, with the sha256 of metrics.csv and model.pt and of itself. A run is
                   complete when summary.json is intact, metrics.csv matches its checksum, model.pt (if present)
                   matches its own, and the summary's numbers are those recomputed from metrics.csv.
Every write goes to a temporary file, is fsync'ed, then renamed over the old one, so a crash while
writing leaves the previous good file in place.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from . import __version__
from .config import Config, result_fields


class ResultsError(RuntimeError):
    """A run directory that cannot be used as asked (corrupt, or made by another config)."""


def run_dir(results_dir, cfg: Config) -> Path:
    """<algorithm>-<dataset>[-<partition>][-ns<N_S>]-seed<seed>-<key>: the parts the algorithm reads."""
    parts = [cfg.algorithm, cfg.dataset, cfg.partition if cfg.reads("partition") else None,
             f"ns{cfg.num_supervised}" if cfg.reads("num_supervised") else None, f"seed{cfg.seed}", cfg.key()]
    return Path(results_dir) / "-".join(p for p in parts if p)


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
        reason = _verify(path, summary)
    except (OSError, ValueError, KeyError, TypeError, pd.errors.ParserError) as err:
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
        raise ResultsError(f"{path}: corrupt ({info.reason}); remove it (semifl runs --clean) to run again")
    if result_fields((info.config or {}).get("config", {})) != result_fields(cfg.to_dict()):
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

