"""Several runs on one GPU: K = runs_per_gpu for run_all and sweeps, its bad values refused in one
line each (K < 1, K > 1 without a GPU, K runs that overfill the GPU's memory), the workers it gives on CUDA, and the
per-run memory estimate it is checked with. The GPU itself is faked here (this machine has none)."""
import os
import signal
from types import SimpleNamespace

import pytest
import torch

from semifl_core import workers
from semifl_core.config import ConfigError, profile
from semifl_core.report.runs import run_all
from semifl_core.workers import workers_for


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "2"])
def test_k_below_one_or_not_an_integer_is_one_line(k):
    with pytest.raises(ConfigError) as err:
        workers.runs_per_gpu(k, torch.device("cuda"))
    assert str(err.value) == f"runs_per_gpu={k!r}: must be an integer >= 1 (the runs trained at once on one GPU)"


def test_k_from_the_environment_is_checked_and_named_as_such(monkeypatch):
    monkeypatch.setenv("SEMIFL_RUNS_PER_GPU", "four")
    with pytest.raises(ConfigError, match=r"^SEMIFL_RUNS_PER_GPU='four': must be an integer >= 1"):
        workers.runs_per_gpu(None, torch.device("cuda"))
    monkeypatch.setenv("SEMIFL_RUNS_PER_GPU", "3")
    assert workers.runs_per_gpu(None, torch.device("cuda")) == 3
    monkeypatch.delenv("SEMIFL_RUNS_PER_GPU")
    assert workers.runs_per_gpu(None, torch.device("cpu")) == workers.RUNS_PER_GPU["cpu"] == 1


def test_k_above_one_on_a_cpu_is_refused_before_anything_trains(tmp_path, monkeypatch):
    monkeypatch.delenv("SEMIFL_RUNS_PER_GPU", raising=False)
    with pytest.raises(ConfigError) as err:
        run_all({"smoke": profile("smoke")}, [0], tmp_path, device="cpu", runs_per_gpu=2)
    line = str(err.value)
    assert "\n" not in line and line.startswith("runs_per_gpu=2: runs share a GPU, and ") and "leave it at 1" in line
    assert not any(tmp_path.iterdir())   # nothing was trained or written


def fake_gpus(monkeypatch, count=1, memory_gib=80.0):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: SimpleNamespace(total_memory=int(memory_gib * 2 ** 30), name="Fake GPU"))


def test_the_default_k_is_measured_on_a_gpu_lowered_to_what_fits_and_1_elsewhere(monkeypatch):
    """The default is never refused: RUNS_PER_GPU on a GPU (4, BENCHMARKS.md) unless fewer runs fit, 1 on a CPU; a
    sweep without a GPU here (a CPU head node) takes 1, one given 0.5 GPUs a run takes 2."""
    from semifl_core.sweep import _check_runs_per_gpu
    monkeypatch.delenv("SEMIFL_RUNS_PER_GPU", raising=False)
    paper = [profile("paper")]
    assert _check_runs_per_gpu(None, None, "cpu", paper) == 1 and _check_runs_per_gpu(None, 0.5, "auto", paper) == 2
    assert _check_runs_per_gpu(None, None, "auto", paper) == 1                  # this machine has no GPU
    fake_gpus(monkeypatch, memory_gib=80.0)
    assert workers.runs_per_gpu(None, torch.device("cuda"), paper) == workers.RUNS_PER_GPU["cuda"] == 4
    assert _check_runs_per_gpu(None, None, "auto", paper) == 4
    need = workers.run_memory(paper[0])
    fake_gpus(monkeypatch, memory_gib=2.5 * need / 0.9 / 2 ** 30)               # room for 2 runs and a half
    assert workers.runs_per_gpu(None, torch.device("cuda"), paper) == 2
    with pytest.raises(ConfigError, match=r"^runs_per_gpu=4: 4 runs of about"):   # asked for: refused, not lowered
        workers.runs_per_gpu(4, torch.device("cuda"), paper)


def test_on_cuda_run_all_trains_k_runs_a_gpu_on_every_gpu_it_sees(monkeypatch):
    fake_gpus(monkeypatch, count=2)
    assert workers_for("cuda", 20, 4) == 8 and workers_for("auto", 20, 4) == 8   # 4 on each of 2 GPUs
    assert workers_for("cuda:1", 20, 4) == 4                                     # the one GPU named
    assert workers_for("cuda", 3, 4) == 3 and workers_for("cuda", 20, 1) == 2    # never more than the runs


def test_run_alls_workers_on_several_gpus_each_see_their_own_in_turn(monkeypatch):
    import multiprocessing
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots, seen = multiprocessing.get_context("spawn").Value("i", 0), []
    for _ in range(3):   # as three workers started one after another
        workers.init(None, gpus=[3, 5], slots=slots)
        seen.append(os.environ["CUDA_VISIBLE_DEVICES"])
    assert seen == ["3", "5", "3"]


def test_k_runs_that_would_overfill_the_gpu_are_refused_with_the_most_that_fit(monkeypatch):
    fake_gpus(monkeypatch, memory_gib=40.0)
    paper = profile("paper")
    need = workers.run_memory(paper)
    most = int(workers.GPU_MEMORY_SHARE * 40 * 2 ** 30 // need)
    assert 1 <= most < 8
    assert workers.runs_per_gpu(most, torch.device("cuda"), [paper]) == most
    with pytest.raises(ConfigError) as err:
        workers.runs_per_gpu(most + 1, torch.device("cuda"), [paper, profile("small")])
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"runs_per_gpu={most + 1}: {most + 1} runs of about ")
    assert "wrn28x2 on cifar10" in line and "Fake GPU" in line and line.endswith(f"at most {most} here")


def test_the_memory_estimate_grows_with_the_model_the_clients_and_the_batch():
    small, paper = profile("small"), profile("paper")
    assert workers.run_memory(small) > workers.CUDA_CONTEXT_BYTES
    assert workers.run_memory(paper) > workers.run_memory(small)
    assert workers.run_memory(paper.replace(model="wrn28x8")) > workers.run_memory(paper)
    assert workers.run_memory(paper.replace(client_batch=64)) > workers.run_memory(paper)
    assert workers.run_memory(paper.replace(active_rate=0.5)) > workers.run_memory(paper)


def test_a_ray_sweep_refuses_k_on_a_cpu_and_k_that_disagrees_with_gpus_per_run(tmp_path):
    from semifl_core.sweep import sweep
    cfgs = [profile("smoke")]
    with pytest.raises(ConfigError, match=r"^runs_per_gpu=2 with device cpu: runs share a GPU"):
        sweep(cfgs, tmp_path, device="cpu", runs_per_gpu=2)
    with pytest.raises(ConfigError, match=r"^GPUs per run 0.5 and runs_per_gpu=4 disagree \(4 runs a GPU is 0.25 GPUs"):
        sweep(cfgs, tmp_path, num_gpus=0.5, runs_per_gpu=4)
    with pytest.raises(ConfigError, match=r"^runs_per_gpu=0: must be an integer >= 1"):
        sweep(cfgs, tmp_path, runs_per_gpu=0)
    assert not any(tmp_path.iterdir())


def test_a_worker_stopped_while_it_sets_a_run_up_ends_that_run(monkeypatch):
    # SIGTERM in a run_all worker outside a run's rounds: KeyboardInterrupt (no round done), as workers.init says
    monkeypatch.setattr(workers, "_busy", True)
    monkeypatch.setattr(workers, "_stopped", False)
    with pytest.raises(KeyboardInterrupt, match="stopped"):
        workers._on_stop(signal.SIGTERM, None)
    assert workers._stopped


def test_the_workers_from_the_environment_are_checked_and_used(monkeypatch):
    """SEMIFL_WORKERS (how a notebook run by papermill trains one run at a time) sets the processes, a bad value is one
    line; an explicit `workers` wins."""
    cfgs = [profile("smoke")] * 5
    monkeypatch.setenv("SEMIFL_WORKERS", "two")
    with pytest.raises(ConfigError, match=r"^SEMIFL_WORKERS='two': must be an integer >= 1"):
        workers.pool_size("cpu", cfgs)
    monkeypatch.setenv("SEMIFL_WORKERS", "1")
    assert workers.pool_size("cpu", cfgs) == (1, None) and workers.pool_size("cpu", cfgs, workers=3)[0] == 3


def test_on_a_cpu_run_all_trains_one_run_per_core_this_process_may_use(monkeypatch):
    """`taskset -c 0` (or a container's cpuset) leaves one core: the runs then train in the calling process, not in
    workers that would share that core; never more workers than runs."""
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity on this platform")
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert workers_for("cpu", 5) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3, 5})
    assert workers_for("cpu", 5) == 3 and workers_for("cpu", 2) == 2
