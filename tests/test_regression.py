"""Regression oracle: smoke-profile runs must give the metrics.csv that the code gave before a refactor.

tests/reference/<name>.csv were written by `python tests/test_regression.py` from the code at 2a72dec (before
the methods/ refactor), on the 2-core CPU machine that runs CI. Every column but the wall times (time_*) must be
equal, row for row; the set of columns too. A change that alters any number a run records fails here.
To accept a deliberate change of behaviour, regenerate the files and say so in the commit.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

REFERENCE = Path(__file__).parent / "reference"
# name -> (algorithm, overrides on the smoke profile); three rounds, seed 5 (not a seed the other tests use)
CASES = {
    "semifl": ("semifl", {}),
    "semifl-vectorized": ("semifl", {"engine": "vectorized"}),
    "semifl-paper-order-diagnostics": ("semifl", {"round_order": "paper", "diagnostics": True,
                                                  "partition": "non-iid-l-2"}),
    "semifl-parallel-dir": ("semifl", {"finetune": False, "partition": "dir-0.3"}),
    "semifl-batch-pseudo-labels": ("semifl", {"global_pseudo_labels": False, "mix_loss": False,
                                              "client_momentum": "reset", "server_momentum": "reset"}),
    "semifl-no-mix-bn": ("semifl", {"mix_loss": False, "norm": "bn", "global_momentum": 0.0}),
    "fedavg-fixmatch": ("fedavg-fixmatch", {}),
    "fedavg-fixmatch-vectorized": ("fedavg-fixmatch", {"engine": "vectorized"}),
    "fedavg-supervised": ("fedavg-supervised", {}),
    "partially-supervised": ("partially-supervised", {}),
    "fully-supervised": ("fully-supervised", {}),
}


def config(name):
    from semifl_core.config import profile
    algorithm, overrides = CASES[name]
    return profile("smoke", algorithm=algorithm, seed=5, rounds=3, **overrides)


def train(name, results_dir) -> pd.DataFrame:
    import torch
    from semifl_core.run import run
    torch.set_num_threads(2)   # the references were written with 2 threads (float sums depend on it)
    out = run(config(name), results_dir, device="cpu", progress=False)
    return pd.read_csv(Path(out["path"]) / "metrics.csv")


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df[sorted(c for c in df.columns if not c.startswith("time_"))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_metrics_equal_the_reference(name, tmp_path):
    got, want = comparable(train(name, tmp_path)), comparable(pd.read_csv(REFERENCE / f"{name}.csv"))
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


if __name__ == "__main__":   # write the references with the code on sys.path
    import tempfile
    REFERENCE.mkdir(exist_ok=True)
    for name in (sys.argv[1:] or sorted(CASES)):
        with tempfile.TemporaryDirectory() as tmp:
            train(name, tmp).to_csv(REFERENCE / f"{name}.csv", index=False)
            print("wrote", name)
