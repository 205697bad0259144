"""A deployment of the Flower app on this machine, and its check against the simulation.

Starts a SuperLink and N SuperNodes as processes, submits a smoke-profile run with `flwr run`, runs the same config
as a Flower simulation and compares the metrics per round: exit status 0 when they are equal to float rounding.

    python -m semifl_core.flower.deploy                       # 3 SuperNodes, the smoke profile, 3 rounds
    python -m semifl_core.flower.deploy --supernodes 3 --set rounds=5 --work /tmp/semifl-deploy

Logs, the Flower configuration (FLWR_HOME) and both runs' results go under --work. docs/gpu.md gives the same steps
as commands to type.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

APP = Path(__file__).parent / "app"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} (its log: {log})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:.0f} s")


def _start(cmd: list[str], log: Path, env: dict) -> subprocess.Popen:
    with log.open("w") as out:   # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def deploy(supernodes: int, sets: list[str], work: Path, timeout: float = 900.0) -> dict:
    """Run the deployment and the simulation of the same config; returns {"deployed", "simulated"} summaries and the
    per-round metrics compared ("equal": bool, "max_abs_diff")."""
    from ..argv import parse_sets
    from ..config import profile
    from . import flower_config
    from .simulation import simulate
    bin_dir = Path(sys.executable).parent
    overrides = {"rounds": 3, "threshold": 0.2, **parse_sets(sets), "num_clients": supernodes}
    overrides.setdefault("active_rate", min(1.0, 2.5 / supernodes))   # 2 clients a round
    cfg = flower_config(profile("smoke", **overrides))
    work.mkdir(parents=True, exist_ok=True)
    home, link_port = work / "flwr-home", free_port()
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(f'[superlink]\ndefault = "semifl-deploy"\n\n[superlink.semifl-deploy]\n'
                                      f'address = "127.0.0.1:{link_port}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    procs = []
    try:
        link = _start([str(bin_dir / "flower-superlink"), "--insecure", "--port", str(link_port), "--database",
                       str(work / "superlink.db")], work / "superlink.log", env)
        procs.append(link)
        wait_for_port(link_port, link, "the SuperLink", work / "superlink.log")
        for i in range(supernodes):
            procs.append(_start([str(bin_dir / "flower-supernode"), "--insecure", "--superlink",
                                 f"127.0.0.1:{link_port}", "--port", str(free_port()), "--node-config",
                                 f"partition-id={i} num-partitions={supernodes}"], work / f"supernode-{i}.log", env))
        set_text = " ".join(f"{k}={v}" for k, v in overrides.items())
        run_config = f"set={set_text!r} results-dir={str(work / 'deployed')!r}"
        submit = [str(bin_dir / "flwr"), "run", str(APP), "semifl-deploy", "--run-config", run_config, "--stream"]
        print("$", shlex.join(submit), flush=True)
        with (work / "flwr-run.log").open("w") as log:
            done = subprocess.run(submit, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"flwr run exited with status {done.returncode} (its log: {work / 'flwr-run.log'})")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    from ..results import open_run
    info = open_run(work / "deployed", cfg)
    if info.state != "complete":
        raise RuntimeError(f"the deployed run is {info.state} in {info.path} (logs in {work})")
    simulated = simulate(cfg, work / "simulated", progress=False)
    metrics = [pd.read_csv(Path(p) / "metrics.csv") for p in (info.path, simulated["path"])]
    cols = [c for c in metrics[0].columns if not c.startswith("time_")]
    a, b = (m[cols] for m in metrics)
    equal = list(a.columns) == list(b.columns) and bool(np.isclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True).all())
    return {"deployed": {**info.summary, "path": str(info.path)}, "simulated": simulated, "equal": equal,
            "max_abs_diff": float((a - b).abs().max().max()), "metrics": a}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m semifl_core.flower.deploy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--supernodes", type=int, default=3, help="SuperNodes (= clients of the run), default 3")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="smoke-profile overrides")
    ap.add_argument("--work", type=Path, default=None, help="where processes, logs and results go (default: a "
                                                            "new temporary directory)")
    args = ap.parse_args(argv)
    if args.supernodes < 2:
        print(f"--supernodes {args.supernodes}: a federation needs at least 2", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="semifl-deploy-"))
    start = time.perf_counter()
    out = deploy(args.supernodes, args.set, work)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(out["metrics"].to_string(index=False))
    print(f"deployment ({args.supernodes} SuperNodes, {out['deployed']['path']}) vs simulation "
          f"({out['simulated']['path']}): {'equal' if out['equal'] else 'DIFFERENT'} metrics per round (largest "
          f"difference {out['max_abs_diff']:.3g}); {time.perf_counter() - start:.0f} s; logs in {work}")
    return 0 if out["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
