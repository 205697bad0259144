"""SemiFL as a Flower app (semifl_core/flower) against the in-process harness, and the per-client random streams
it rests on. The tests marked `distributed` need the [distributed] extra (`make test-distributed`); the others
run in the default suite."""
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from semifl_core.config import ConfigError, profile
from semifl_core.flower import config_from_run_config, flower_config
from semifl_core.methods import semifl
from semifl_core.rounds import client_round
from semifl_core.run import Experiment, get_data, run

ROOT = Path(__file__).resolve().parents[1]
# 10 clients, 6 a round: two rounds' samples overlap (6 + 6 > 10), so some client resumes its kept momentum; tau 0.2:
# from round 2 on the clients' fix sets are not empty
EQUAL_CFG = dict(rounds=3, threshold=0.2, num_clients=10, active_rate=0.6)


def _metrics(path):
    m = pd.read_csv(Path(path) / "metrics.csv")
    return m[[c for c in m.columns if not c.startswith("time_")]]


# ---------------------------------------------------------------------- per-client streams (default suite)
def _task(exp, model, rnd, c):
    task, counts = semifl.client_task(exp, model, client_round(rnd, exp.cfg.seed, c), c)
    return task, counts


def test_a_clients_draws_do_not_depend_on_the_other_clients():
    """rng_streams=client: client c's pseudo-labels, fix/mix sets, batch plan and augmentations in round r are the
    same whichever clients are drawn beside it and in whatever order (what lets it draw them in its own process)."""
    cfg = profile("smoke", threshold=0.0, rng_streams="client")
    exp = Experiment(cfg, get_data(cfg.dataset, None, torch.device("cpu")), torch.device("cpu"))
    model = exp.new_state().model
    exp.refresh_sbn(model)
    rnd = exp.start_round(4)
    alone = _task(exp, model, rnd, 3)
    for c in (5, 1):   # other clients drawn first, from the same round
        _task(exp, model, rnd, c)
    beside = _task(exp, model, rnd, 3)
    assert np.array_equal(alone[1], beside[1])
    assert np.array_equal(alone[0].size, beside[0].size)
    for k, v in alone[0].views.items():
        assert torch.equal(v, beside[0].views[k]), k
    other = _task(exp, model, exp.start_round(5), 3)   # another round: other draws
    assert not torch.equal(other[0].views["x"], alone[0].views["x"])


def test_the_default_streams_keep_every_committed_run_key():
    cfg = profile("smoke")
    assert cfg.rng_streams == "round" and cfg.key() == cfg.replace(rng_streams="round").key()
    assert cfg.replace(rng_streams="client").key() != cfg.key()


def test_flower_and_client_streams_are_refused_where_they_do_not_apply():
    with pytest.raises(ConfigError, match=r"^rng_streams='client': .*feddure draws one stream per round"):
        profile("smoke", algorithm="feddure", rng_streams="client")
    with pytest.raises(ConfigError, match=r"^rng_streams='each': allowed are round, client"):
        profile("smoke", rng_streams="each")
    with pytest.raises(ConfigError, match=r"^algorithm='partially-supervised': the Flower app runs semifl and"):
        flower_config(profile("smoke", algorithm="partially-supervised"))
    with pytest.raises(ConfigError, match=r"^diagnostics=True: the Flower app does not evaluate the client models"):
        flower_config(profile("smoke", diagnostics=True))
    assert flower_config(profile("smoke")).rng_streams == "client"


def test_run_config_of_flwr_run_builds_the_profile_with_overrides():
    cfg = config_from_run_config({"profile": "smoke", "dataset": "", "set": "rounds=4 threshold=0.3"})
    assert (cfg.rounds, cfg.threshold, cfg.dataset, cfg.rng_streams) == (4, 0.3, "synthetic", "client")
    with pytest.raises(ConfigError, match=r"^unknown config field 'round'"):
        config_from_run_config({"profile": "smoke", "set": "round=4"})


def test_the_default_install_needs_neither_flower_nor_ray():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = lambda deps: {d.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip() for d in deps}
    assert not names(meta["dependencies"]) & {"flwr", "ray"}
    assert {"flwr", "ray"} <= names(meta["optional-dependencies"]["distributed"])
    code = ("import sys, semifl_core.cli, semifl_core.run, semifl_core.flower, semifl_core.report; "
            "print(sorted(m for m in ('flwr', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- Flower (the [distributed] extra)
@pytest.mark.distributed
def test_flower_simulation_equals_the_in_process_harness(tmp_path):
    """10 SuperNodes, 3 rounds of the smoke profile: per round, every metric of the Flower simulation equals the
    in-process run's (same config, per-client streams) to float rounding, and so do the final weights."""
    pytest.importorskip("flwr")
    from semifl_core.flower.simulation import simulate
    cfg = profile("smoke", **EQUAL_CFG)
    here = run(flower_config(cfg), tmp_path / "in-process", progress=False)
    there = simulate(cfg, tmp_path / "flower", progress=False)
    assert there["runtime"] == "flower" and there["supernodes"] == 10 and not there["reused"]
    mh, mt = _metrics(here["path"]), _metrics(there["path"])
    assert list(mh.columns) == list(mt.columns)
    assert mt.clients_trained.iloc[1:].min() > 0   # the clients trained (the comparison is not vacuous)
    pd.testing.assert_frame_equal(mh, mt, rtol=1e-5, atol=1e-6)
    wh = torch.load(Path(here["path"]) / "model.pt")["final"]
    wt = torch.load(Path(there["path"]) / "model.pt")["final"]
    for k in wh:
        torch.testing.assert_close(wh[k], wt[k], rtol=1e-5, atol=1e-6)
    # a second simulation of the same config reuses the complete run (no Ray, no training)
    assert simulate(cfg, tmp_path / "flower", progress=False)["reused"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listens(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start(cmd, log: Path, env: dict) -> subprocess.Popen:
    with log.open("w") as out:   # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _deploy(overrides: dict, supernodes: int, work: Path) -> None:
    """The steps docs/gpu.md gives for a deployment: a SuperLink, one SuperNode per client, `flwr run` of the app;
    the run lands in work/deployed."""
    bin_dir = Path(sys.executable).parent
    home, port = work / "flwr-home", _free_port()
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'[superlink]\ndefault = "semifl-deploy"\n\n[superlink.semifl-deploy]\n'
                                      f'address = "127.0.0.1:{port}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    procs = [_start([str(bin_dir / "flower-superlink"), "--insecure", "--port", str(port), "--database",
                     str(work / "superlink.db")], work / "superlink.log", env)]
    try:
        deadline = time.monotonic() + 60
        while not _listens(port):
            assert procs[0].poll() is None and time.monotonic() < deadline, (work / "superlink.log").read_text()
            time.sleep(0.3)
        node = [str(bin_dir / "flower-supernode"), "--insecure", "--superlink", f"127.0.0.1:{port}", "--node-config"]
        procs += [_start([*node, f"partition-id={i} num-partitions={supernodes}", "--port", str(_free_port())],
                         work / f"supernode-{i}.log", env) for i in range(supernodes)]
        sets = " ".join(f"{k}={v}" for k, v in overrides.items())
        done = subprocess.run([str(bin_dir / "flwr"), "run", str(ROOT / "semifl_core/flower/app"), "semifl-deploy",
                               "--run-config", f"set={sets!r} results-dir={str(work / 'deployed')!r}", "--stream"],
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finally:
        for p in procs:   # all stopped at once, then waited for
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


@pytest.mark.distributed
def test_a_three_supernode_deployment_equals_the_simulation(tmp_path):
    """The deployment runtime (a SuperLink and 3 SuperNodes as separate processes, `flwr run`): the run completes
    and its metrics per round equal the simulation's of the same config."""
    pytest.importorskip("flwr")
    from semifl_core.flower.simulation import simulate
    from semifl_core.results import open_run
    overrides = dict(rounds=2, threshold=0.2, num_clients=3, active_rate=0.8)   # 2 clients a round
    cfg = flower_config(profile("smoke", **overrides))
    _deploy(overrides, 3, tmp_path)
    deployed = open_run(tmp_path / "deployed", cfg)
    assert deployed.state == "complete"
    assert deployed.summary["runtime"] == "flower" and deployed.summary["supernodes"] == 3
    simulated = simulate(cfg, tmp_path / "simulated", progress=False)
    m = _metrics(deployed.path)
    assert m.clients_trained.iloc[1:].min() > 0   # the clients trained (the comparison is not vacuous)
    pd.testing.assert_frame_equal(m, _metrics(simulated["path"]), rtol=1e-5, atol=1e-6)
