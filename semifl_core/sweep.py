"""Sweeps on Ray: many independent runs (a notebook's grid, `semifl sweep GRID`) handed to Ray, one task per run.

    from semifl_core.sweep import sweep
    result = sweep([profile("smoke", seed=s) for s in range(4)], "results")        # a local Ray instance
    result = sweep(configs, "/shared/results", address="ray://head:10001", num_gpus=0.5)   # a cluster, 2 runs a GPU

* The store is the only record: each task calls run.run, which writes the run's directory as `semifl run` does.
  Complete runs are reused and never reach Ray (nor start it); the others resume from their checkpoints, so a sweep
  that dies is resumed by sweeping again.
* One process per run: a task claims its directory with results.try_hold (run.run's flock, without waiting). A run
  another process holds (a second sweep, a `semifl run`, a notebook) is deferred: its task returns at once, and once
  every other run is done it goes to Ray again, waiting for the holder, then reuses its result or resumes from its
  checkpoint. Two sweeps over one grid thus share it out, and no run is trained twice (run.run looks at the store
  again once it holds the directory).
* Resources: one CPU (one torch thread) a task, and `num_gpus` where the cluster has GPUs. K runs' memory is checked
  against this machine's GPU if it has one (the usual head node of a one-machine cluster): Ray knows no GPU's memory.
* Stopping (Ctrl-C, SIGTERM) is run_all's: no run starts, each running one checkpoints after its round; after
  STOP_WAIT_S at most, the driver raises KeyboardInterrupt with one line saying what is left.
* Ray is imported only here (the default install has no ray). A sweep uses this process's Ray instance, else
  ray.init(address): None follows Ray's rule (RAY_ADDRESS, else a cluster `ray start` began on this machine, else a new
  local instance); "ray://HOST:10001" or "HOST:6379" names a cluster. Ray stays up for the process's next sweep (a
  notebook's grids pay the start-up once). On a cluster every node needs this package and the results directory at the
  same absolute path, on a file system where flock works across machines (NFSv4, Lustre, CephFS).
* Failures: a failed run stops no other; its one-line error is printed after the progress bar (on stderr), and
  SweepResult.check() (report.run_all calls it) raises SweepError naming them.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import results
from .config import Config, ConfigError, check_device
from .workers import STOP_WAIT_S, runs_per_gpu as check_runs_per_gpu, sigterm_interrupts, stopped_line

NEEDS_RAY = "sweep needs the [distributed] extra: pip install -e '.[distributed]'"
DONE, HELD, FAILED = "done", "held", "failed"
POLL_S = 0.5   # the longest the driver waits for a result before it looks at the runs again


class SweepError(RuntimeError):
    """Some runs of a sweep failed; the message has one line per failed run."""


@dataclass
class SweepResult:
    """Per config in the order given: the run's summary (run.run's, with "path" and "reused"), or None with its
    one-line error in `failures`."""
    names: list
    summaries: list
    failures: dict = field(default_factory=dict)   # index -> one-line error

    @property
    def trained(self) -> int:
        return sum(1 for s in self.summaries if s is not None and not s["reused"])

    @property
    def reused(self) -> int:
        return sum(1 for s in self.summaries if s is not None and s["reused"])

    def failure_lines(self) -> list[str]:
        return [f"{self.names[i]}: {why}" for i, why in sorted(self.failures.items())]

    def check(self) -> "SweepResult":
        """self, or SweepError if any run failed."""
        if self.failures:
            raise SweepError(f"{len(self.failures)} of {len(self.summaries)} runs failed: "
                             + "; ".join(self.failure_lines()))
        return self


def require_ray():
    """The ray module, or ImportError with the one line that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError(NEEDS_RAY) from None
    return ray


def sweep(configs, results_dir="results", *, names=None, address=None, num_gpus=None, device="auto", data_root=None,
          progress=True, checkpoint_every=10, init=None, runs_per_gpu=None) -> SweepResult:
    """Train every Config in `configs` to the end on Ray, one task a run (module docstring). `names`: how messages call
    each run (default: its directory's name). `num_gpus`: GPUs a run (None: 1/runs_per_gpu where the cluster has a GPU
    and device is not "cpu", else 0). `runs_per_gpu` (K): default $SEMIFL_RUNS_PER_GPU, else 1/num_gpus when given, else
    workers.RUNS_PER_GPU lowered to what fits on this machine's GPU (1 without one). `device`: auto, cpu or cuda (the
    GPU Ray gives the task). `init`: ray.init's keyword arguments, used only if this sweep starts Ray."""
    configs = [c.validate() if isinstance(c, Config) else _not_a_config(c) for c in configs]
    names = [results.run_dir("", c).name for c in configs] if names is None else [str(n) for n in names]
    if len(names) != len(configs):
        raise ConfigError(f"names: {len(names)} given for {len(configs)} configs")
    device = check_device(device)
    _check_gpus(num_gpus, device)
    k = _check_runs_per_gpu(runs_per_gpu, num_gpus, device, configs)
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ConfigError(f"checkpoint_every={checkpoint_every!r}: must be an integer >= 1 (rounds between "
                          "checkpoints)")
    results_dir = Path(results_dir).resolve()   # tasks may run in another working directory (or on another node)
    from .data import data_root as default_root
    data_root = str(default_root(data_root).resolve())

    out = SweepResult(names, [None] * len(configs))
    first = {}     # run directory -> index of the first config that names it (the same run twice trains once)
    todo = []      # indices to hand to Ray
    for i, cfg in enumerate(configs):
        info = results.open_run(results_dir, cfg)   # a corrupt run: ResultsError now, before anything starts
        if info.state == "complete":
            out.summaries[i] = {**info.summary, "path": str(info.path), "reused": True}
        elif info.path not in first:
            first[info.path] = i
            todo.append(i)
    if todo:
        ray = _connect(address, init)
        gpus = _gpus_per_run(ray, num_gpus, device, k)
        remote = ray.remote(_task).options(num_cpus=1, num_gpus=gpus, max_retries=1)   # retried once if its worker dies
        args = dict(results_dir=str(results_dir), device="cpu" if gpus == 0 else "cuda",   # cuda: the task's own GPU
                    data_root=data_root, checkpoint_every=checkpoint_every, threads=1 if gpus == 0 else None)
        with sigterm_interrupts():   # SIGTERM stops the sweep as Ctrl-C does (ray.init's own handler would exit)
            _drive(ray, remote, args, configs, todo, out, progress)
    for i, cfg in enumerate(configs):   # a run named twice: the copy reuses the first one's result
        j = first.get(results.run_dir(results_dir, cfg), i)
        if j != i and out.summaries[i] is None:
            if j in out.failures:
                out.failures[i] = out.failures[j]
            elif out.summaries[j] is not None:
                out.summaries[i] = {**out.summaries[j], "reused": True}
    if out.failures and progress:
        print(f"semifl: sweep: {len(out.failures)} of {len(configs)} runs failed:", *out.failure_lines(), sep="\n  ",
              file=sys.stderr, flush=True)
    return out


def _not_a_config(c):
    raise ConfigError(f"sweep: expected Config objects, got {type(c).__name__}")


def _check_gpus(num_gpus, device: str) -> None:
    if num_gpus is None:
        return
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, (int, float)) or not num_gpus >= 0 \
            or (num_gpus > 1 and num_gpus != int(num_gpus)):
        raise ConfigError(f"GPUs per run {num_gpus!r}: must be 0, a fraction below 1 (e.g. 0.5: two runs share a "
                          "GPU) or a whole number")
    if num_gpus > 0 and device == "cpu":
        raise ConfigError(f"GPUs per run {num_gpus!r} with device cpu: give one (device auto uses the GPU)")
    if num_gpus == 0 and device.startswith("cuda"):
        raise ConfigError(f"device {device!r} with 0 GPUs per run: a task must reserve its GPU (--gpus-per-run)")


def _check_runs_per_gpu(runs_per_gpu, num_gpus, device: str, configs) -> int:
    """K (workers.runs_per_gpu), checked against num_gpus, the device, and this machine's GPU memory if it has one."""
    if runs_per_gpu is None and not os.environ.get("SEMIFL_RUNS_PER_GPU", "").strip():   # the default: from these
        if device == "cpu" or num_gpus is not None:
            return max(1, round(1 / num_gpus)) if num_gpus and num_gpus < 1 else 1
        import torch   # a GPU here: its default, lowered to what fits; none here (a CPU head node): 1
        return check_runs_per_gpu(None, torch.device("cuda"), configs) if torch.cuda.is_available() else 1
    k = check_runs_per_gpu(runs_per_gpu)
    if k > 1 and device == "cpu":
        raise ConfigError(f"runs_per_gpu={k} with device cpu: runs share a GPU; leave it at 1 on a CPU")
    if k > 1 and num_gpus is not None and abs(num_gpus - 1 / k) > 1e-9:
        raise ConfigError(f"GPUs per run {num_gpus!r} and runs_per_gpu={k} disagree ({k} runs a GPU is "
                          f"{1 / k:.4g} GPUs a run): give one")
    if k > 1:
        import torch
        if torch.cuda.is_available():
            check_runs_per_gpu(k, torch.device(device if device.startswith("cuda") else "cuda"), configs)
    return k


def _connect(address, init):
    """The ray module, connected to a Ray instance (started or joined here if this process has none)."""
    ray = require_ray()
    if ray.is_initialized():
        here = _current_address(ray)   # a host may be named in several ways; another port is another instance
        if address not in (None, "auto") and not str(address).startswith("ray://") and here \
                and here.rpartition(":")[2] != str(address).rpartition(":")[2]:
            raise ConfigError(f"address {address!r}: this process is connected to the Ray instance at {here}; "
                              "call ray.shutdown() first to sweep on another")
        return ray
    _answers(address)
    options = dict(address=address, log_to_driver=False, logging_level="WARNING", **(init or {}))
    if address is None or not str(address).startswith("ray://"):
        options.setdefault("include_dashboard", False)
    with warnings.catch_warnings():   # its notice about GPUs hidden from 0-GPU tasks: a CPU task gets device="cpu"
        warnings.simplefilter("ignore", FutureWarning)
        try:
            ray.init(**options)
        except (ConnectionError, ValueError) as err:   # an unreachable or malformed address, or bad `init`
            raise ConfigError(f"could not start or join Ray (address {address!r}): "
                              f"{type(err).__name__}: {' '.join(str(err).split())[:300]}") from None
    return ray


def _current_address(ray) -> str:
    try:
        return ray.get_runtime_context().gcs_address or ""
    except Exception:   # a Ray client connection (ray://) has no GCS address to show
        return ""


def _answers(address) -> None:
    """ConfigError unless something accepts a connection at a HOST:PORT address (Ray itself retries an address where
    nothing listens for minutes, silently)."""
    host, sep, port = str(address or "").removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return   # None, "auto", "local" or a form Ray will judge
    import socket
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as err:
        raise ConfigError(f"address {address!r}: nothing answers there ({err.strerror or err}); start the cluster's "
                          "head (`ray start --head`) or give its address") from None


def _gpus_per_run(ray, num_gpus, device: str, k: int = 1) -> float:
    have = ray.cluster_resources().get("GPU", 0)
    if num_gpus is None and k > 1 and have == 0:
        raise ConfigError(f"runs_per_gpu={k}: the Ray cluster has no GPU (its resources: "
                          f"{int(ray.cluster_resources().get('CPU', 0))} CPUs); leave it at 1")
    if num_gpus is None:
        return 1 / k if have > 0 and device != "cpu" else 0
    if num_gpus > 0 and have == 0:
        raise ConfigError(f"GPUs per run {num_gpus!r}: the Ray cluster has no GPU (its resources: "
                          f"{int(ray.cluster_resources().get('CPU', 0))} CPUs); use 0")
    return num_gpus


def _task(cfg: Config, claim: bool, results_dir: str, device: str, data_root: str, checkpoint_every: int,
          threads):
    """One run, in a Ray worker: (DONE, summary), (HELD, holder) when claim and another process holds the run, or
    (FAILED, one-line error)."""
    try:
        import torch
        if threads:
            torch.set_num_threads(threads)
        from .run import run

        def train():
            return run(cfg, results_dir, device=device, data_root=data_root, progress=False,
                       checkpoint_every=checkpoint_every)
        if not claim:
            return DONE, train()   # run.run's hold waits for the holder, then reuses or resumes
        path = results.run_dir(results_dir, cfg)
        with results.try_hold(path) as mine:
            if not mine:
                return HELD, results.held_by(path) or "another process"
            return DONE, train()
    except Exception as err:   # the run's own failure, as a line; the sweep goes on with the others
        return FAILED, one_line(err)


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:400]}" if text else type(err).__name__


def _drive(ray, remote, args: dict, configs, todo: list, out: SweepResult, progress: bool) -> None:
    """Submit `todo`, collect the results into `out`, defer the runs held elsewhere and wait for them at the end."""
    from tqdm import tqdm

    total, reused = len(todo) + out.reused, out.reused
    bar = tqdm(total=total, initial=reused, unit="run", disable=not progress,
               desc=f"sweep on Ray ({len(todo)} to run, {reused} reused)")
    deferred = []
    pending = {remote.remote(configs[i], True, **args): i for i in todo}
    waiting = {}   # the second pass: deferred runs, waited for
    paths = {i: results.run_dir(args["results_dir"], configs[i]) for i in todo}
    last_look = 0.0
    try:
        while pending or waiting or deferred:
            if not pending and deferred and not waiting:   # every other run is done: wait for the held ones now
                waiting = {remote.remote(configs[i], False, **args): i for i in deferred}
                deferred = []
            refs = list(pending) + list(waiting)
            ready, rest = ray.wait(refs, num_returns=1, timeout=POLL_S)   # back at the first result
            if ready and rest:   # and every other result that is in as well
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            finished = 0
            for ref in ready:
                i = pending.pop(ref) if ref in pending else waiting.pop(ref)
                try:
                    status, value = ray.get(ref)
                except Exception as err:   # the worker died (killed, out of memory) or Ray failed the task
                    first = next((line for line in str(err).splitlines() if line.strip()), "")
                    status, value = FAILED, f"{type(err).__name__}: {first.strip()[:400]}"
                if status == HELD:
                    deferred.append(i)
                    continue
                if status == DONE:
                    out.summaries[i] = value
                else:
                    out.failures[i] = value
                finished += 1
            if progress and (ready or time.monotonic() - last_look > 2):
                last_look = time.monotonic()
                running = sum(1 for i in pending.values() if results.held_by(paths[i]))
                bar.set_postfix(done=sum(s is not None for s in out.summaries) - reused, running=running,
                                queued=len(pending) - running, waiting=len(deferred) + len(waiting),
                                failed=len(out.failures), refresh=False)
                bar.update(finished) if finished else bar.refresh()
    except KeyboardInterrupt:   # Ctrl-C or SIGTERM: each running run finishes its round and checkpoints, none starts
        refs = [*pending, *waiting]
        for ref in refs:
            ray.cancel(ref)   # queued: dropped; running: KeyboardInterrupt in the task, i.e. run.run's SIGINT handler
        _, busy = ray.wait(refs, num_returns=len(refs), timeout=STOP_WAIT_S) if refs else ([], [])
        unfinished = [configs[i] for i in [*pending.values(), *waiting.values(), *deferred]]
        bar.close()
        raise KeyboardInterrupt(stopped_line(args["results_dir"], unfinished, len(busy))) from None
    except BaseException:   # the driver failed: stop the tasks (a run checkpoints after its round) and go
        for ref in [*pending, *waiting]:
            ray.cancel(ref)
        raise
    finally:
        bar.close()

