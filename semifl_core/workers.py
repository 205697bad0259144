"""run_all's pool (`train_all`: how many processes, on which GPUs) and its worker processes: one torch thread each;
they stop as one run stops (after its round, with a checkpoint) and die with the process that started them, however
it ends (SIGKILL included).

Parent gone: the worker gets SIGTERM, stops so and exits; one still alive ORPHAN_GRACE_S later is killed, losing the
rounds since its last checkpoint as a crash does (a bound rather than "the round", as an orphan holds its run's lock
unseen; a `small` round on a CPU can outlast it). On Linux the kernel sends the SIGTERM (PR_SET_PDEATHSIG, armed in
`init`); everywhere a thread watching os.getppid() sends it too. Ctrl-C or SIGTERM of the parent: `stop`.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import contextmanager

# K, the runs run_all and sweeps train at once on one GPU (one process each); 1 on a CPU. CUDA's: BENCHMARKS.md,
# "K runs at once", as are the peaks behind MEASURED_OVER_COUNTED.
RUNS_PER_GPU = {"cpu": 1, "cuda": 4}
CUDA_CONTEXT_BYTES = 768 * 2 ** 20   # one process's CUDA context with cuBLAS and cuDNN loaded (assumed, see run_memory)
GPU_MEMORY_SHARE = 0.9               # K runs' estimated peaks must fit in this share of the GPU's memory
# measured peak / run_memory's count (`paper`'s, the larger ratio): scales every estimate, so no default K overfills
MEASURED_OVER_COUNTED = 12.7 / 3.5
ORPHAN_GRACE_S = 5   # a worker whose parent died has this long to finish its round and checkpoint, then is killed
STOP_WAIT_S = 120    # run_all, stopped, waits this long at most for its workers to finish their round
_parent = None       # in a run_all worker: the pid of the process that started it (None elsewhere)
_busy = False        # in a worker: a run is in train
_stopped = False     # in a worker: a stop (SIGTERM/SIGINT) came; it starts no other run


def init(parent=None, gpus=None, slots=None):
    """This process as a run_all worker (module docstring) that dies with `parent` (PR_SET_PDEATHSIG fires when the
    thread that started it ends: run_all's, as the pool starts workers in submit); a stop outside the rounds: _on_stop.
    `gpus`, `slots` (CUDA device ids, a shared counter): the i-th worker started sees only gpus[i % len(gpus)]."""
    global _parent
    import threading

    if gpus:   # before CUDA starts
        with slots.get_lock():
            slot, slots.value = slots.value, slots.value + 1
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus[slot % len(gpus)])
    import torch
    torch.set_num_threads(1)   # two 1-thread processes beat one 2-thread process on a CPU (BENCHMARKS.md)
    if parent is None:
        return
    _parent = parent
    for sig in (signal.SIGINT, signal.SIGTERM):   # run.run installs its own for a run's rounds, then puts these back
        signal.signal(sig, _on_stop)
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass   # the watcher below does it
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="semifl-watch-parent").start()


def _watch_parent(parent: int) -> None:
    """In a worker: once `parent` is gone (the worker has another parent), SIGTERM, then exit after the grace."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)   # on Linux PR_SET_PDEATHSIG sent it already; a second is harmless
    time.sleep(ORPHAN_GRACE_S)
    os._exit(1)


def _on_stop(signum, frame):
    """SIGTERM/SIGINT outside a run's rounds (run.run handles those): no other run starts; a run being set up ends, one
    being written (run.finish) completes; an idle worker exits if its parent is gone, else the pool ends it."""
    global _stopped
    _stopped = True
    if _busy:
        from .run import finish
        while frame is not None and frame.f_code is not finish.__code__:
            frame = frame.f_back
        if frame is None:
            raise KeyboardInterrupt("stopped")
    elif os.getppid() != _parent:
        os._exit(1)


def train(cfg, results_dir, device, data_root) -> dict:
    """run.run without a progress bar; in run_all's workers, also: once stopped, the worker starts no other run (the
    pool may have handed it the next one already), and it exits after its run if its parent is gone."""
    global _busy, _stopped
    from .run import run
    if _parent is None:
        return run(cfg, results_dir, device=device, data_root=data_root, progress=False)
    if _stopped:
        raise KeyboardInterrupt("not started")
    _busy = True
    try:
        return run(cfg, results_dir, device=device, data_root=data_root, progress=False)
    except KeyboardInterrupt:   # stopped after its round, with its checkpoint (run.run)
        _stopped = True
        raise
    finally:
        _busy = False
        if _stopped and os.getppid() != _parent:
            os._exit(1)   # all is saved, and nobody waits for the result


@contextmanager
def sigterm_interrupts():
    """While the block runs, SIGTERM raises KeyboardInterrupt, so `timeout`, `kill` or a job scheduler stop run_all
    as Ctrl-C does. Only the main thread sets handlers: elsewhere SIGTERM keeps its action."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    try:
        old = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:   # not the main thread
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def stop(pool, futures, unfinished, results_dir) -> str:
    """Stop run_all's pool as one run stops (SIGTERM to every worker: each finishes its round and checkpoints, none
    starts), waiting STOP_WAIT_S at most; returns stopped_line's line."""
    workers = list(pool._processes.values())   # private, but the pool's only handle on its processes
    for f in futures:
        f.cancel()
    for w in workers:
        if w.is_alive():
            os.kill(w.pid, signal.SIGTERM)
    pool.shutdown(wait=False, cancel_futures=True)   # the workers exit once the runs they hold are back
    deadline = time.monotonic() + STOP_WAIT_S
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    return stopped_line(results_dir, unfinished, sum(w.is_alive() for w in workers))


def stopped_line(results_dir, unfinished, busy: int = 0) -> str:
    """What a stop leaves of the `unfinished` configs, in one line; `busy`: workers still finishing their round."""
    from .results import open_run
    left = [info.path for info in (open_run(results_dir, cfg) for cfg in unfinished) if info.state != "complete"]
    saved = sum((p / "checkpoint.pt").exists() for p in left)
    return (f"stopped: {saved} runs unfinished (checkpointed), {len(left) - saved} not started"
            + (f", {busy} workers still finishing their round" if busy else "")
            + "; run the same cell/command again to resume")


def usable_cores() -> list[int]:
    """The CPU cores this process may run on (its affinity: `taskset -c 0` or a cpuset leaves fewer); else all cores."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def workers_for(device: str, jobs: int, runs_per_gpu: int = 1) -> int:
    """Parallel training processes, at most `jobs`: on a CPU one per usable core (one thread each), on CUDA
    `runs_per_gpu` per GPU of gpu_ids."""
    from .run import pick_device
    dev = pick_device(device)
    if dev.type == "cpu":
        return max(1, min(len(usable_cores()), jobs))
    return max(1, min(runs_per_gpu * len(gpu_ids(dev)), jobs))


def gpu_ids(dev) -> list[int]:
    """The CUDA devices run_all spreads its runs over: all that torch sees for device cuda, the one named by cuda:N."""
    import torch
    return [dev.index] if dev.index is not None else list(range(torch.cuda.device_count()))


def pool_size(device, cfgs, workers=None, k=None) -> tuple[int, list | None]:
    """(processes, the GPU ids to spread them over or None) for training cfgs: `workers`, else $SEMIFL_WORKERS (so
    papermill gives a notebook's grids one), else workers_for with K runs a GPU (runs_per_gpu: one line where K is
    refused)."""
    from .run import pick_device
    text = os.environ.get("SEMIFL_WORKERS", "").strip()
    if workers is None and text:
        if not text.isdigit() or int(text) < 1:
            from .config import ConfigError
            raise ConfigError(f"SEMIFL_WORKERS={text!r}: must be an integer >= 1 (the runs trained at once)")
        workers = int(text)
    dev = pick_device(device)
    n = workers or workers_for(device, len(cfgs), runs_per_gpu(k, dev, cfgs))
    return n, (gpu_ids(dev) if dev.type == "cuda" and n > 1 and len(gpu_ids(dev)) > 1 else None)


def train_all(cfgs, results_dir, device, data_root, processes: int, gpus, on_done) -> None:
    """Train every cfg, in this process (processes=1) or in `processes` spawned workers (`gpus`: spread over them),
    calling on_done(index, summary) as each completes. Ctrl-C or SIGTERM stops the workers as it stops one run
    (`stop`), then raises KeyboardInterrupt with its line; a failed run lets the others finish, then raises."""
    if processes == 1:
        for i, cfg in enumerate(cfgs):
            on_done(i, train(cfg, results_dir, device, data_root))
        return
    if not cfgs:
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context
    ctx = get_context("spawn")
    pool = ProcessPoolExecutor(processes, mp_context=ctx, initializer=init,
                               initargs=(os.getpid(), gpus, ctx.Value("i", 0) if gpus else None))
    futures, finished = {}, set()
    try:
        with sigterm_interrupts():
            for i, cfg in enumerate(cfgs):
                futures[pool.submit(train, cfg, results_dir, device, data_root)] = i
            for f in as_completed(futures):
                summary = f.result()
                finished.add(futures[f])
                on_done(futures[f], summary)
    except KeyboardInterrupt:
        unfinished = [cfg for i, cfg in enumerate(cfgs) if i not in finished]
        raise KeyboardInterrupt(stop(pool, futures, unfinished, results_dir)) from None
    except BaseException:
        pool.shutdown()   # a run failed: the others finish first
        raise
    pool.shutdown()


# ---------------------------------------------------------------------- several runs on one GPU
def runs_per_gpu(value, device=None, configs=()) -> int:
    """K, the runs trained at once on one GPU: `value`, else $SEMIFL_RUNS_PER_GPU, else RUNS_PER_GPU for the device (a
    torch.device; None: not known here, a Ray cluster's GPUs) lowered to the runs of `configs` that fit. ConfigError
    for a K asked for that is < 1, > 1 off a GPU, or whose runs of `configs` overfill GPU_MEMORY_SHARE (run_memory)."""
    from .config import ConfigError
    name = "runs_per_gpu"
    if value is None and os.environ.get("SEMIFL_RUNS_PER_GPU", "").strip():
        name, value = "SEMIFL_RUNS_PER_GPU", os.environ["SEMIFL_RUNS_PER_GPU"].strip()
        value = int(value) if value.lstrip("-").isdigit() else value
    if value is None:   # the default, not a request: 1 off a GPU, and no more runs than fit (estimated)
        k = RUNS_PER_GPU.get("cuda" if device is None else device.type, 1)
        if device is not None and device.type == "cuda" and configs and k > 1:
            k = min(k, _fit(device, configs)[0])
        return k
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name}={value!r}: must be an integer >= 1 (the runs trained at once on one GPU)")
    if device is None:
        return value
    if value > 1 and device.type != "cuda":
        import torch
        raise ConfigError(f"{name}={value}: runs share a GPU, and " + ("device is cpu" if torch.cuda.is_available()
                          else "this machine has no CUDA GPU") + "; on a CPU run_all trains one run per core (one "
                          "thread each): leave it at 1")
    if value > 1 and configs:
        from .config import _size
        most, need, cfg, props = _fit(device, configs)
        if value * need > GPU_MEMORY_SHARE * props.total_memory:
            raise ConfigError(
                f"{name}={value}: {value} runs of about {_size(need)} each (estimated for {cfg.model} on "
                f"{cfg.dataset}, {cfg.num_active} clients x batch {cfg.client_batch}) need {_size(value * need)}, "
                f"more than {GPU_MEMORY_SHARE:.0%} of the {_size(props.total_memory)} of the {props.name}: at most "
                f"{most} here")
    return value


def _fit(device, configs) -> tuple:
    """(runs of the largest of `configs` that fit in GPU_MEMORY_SHARE, at least 1; its run_memory; its config; the
    GPU's properties)."""
    import torch
    need, cfg = max(((run_memory(c), c) for c in set(configs)), key=lambda x: x[0])
    props = torch.cuda.get_device_properties(device)
    return max(1, int(GPU_MEMORY_SHARE * props.total_memory // need)), need, cfg, props


def run_memory(cfg) -> int:
    """Estimated peak GPU memory of one run of cfg, in bytes (not measured: the GPU bench prints measured peaks beside
    it). The sum of: CUDA_CONTEXT_BYTES; the dataset on the device and a round's augmented uint8 views (3 per step:
    strong, weak, mix); every active client's weights, gradients, momentum and updated weights (vectorized engine) and
    the server's; the activations autograd keeps for one step of all active clients (fix and mix batch), counted per
    image with saved_tensors_hooks on a CPU forward; an evaluation batch of 1000 without autograd (3 of the largest
    layer output per image); times 1.3 for the caching allocator's slack; all times MEASURED_OVER_COUNTED."""
    import torch
    from .config import IMAGE_BYTES, IMAGE_SHAPE, TRAIN_SIZE
    from .models import make_model
    model = make_model(cfg, IMAGE_SHAPE[cfg.dataset][0]).train()
    saved, largest = [0], [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    def widest(module, inputs, out):
        if isinstance(out, torch.Tensor):
            largest[0] = max(largest[0], out[0].numel() * out.element_size())
    hooks = [m.register_forward_hook(widest) for m in model.modules()]
    per_batch = []
    for n in (1, 3):   # the difference leaves out what a forward saves once (the weights)
        saved[0] = 0
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(torch.randn(n, *IMAGE_SHAPE[cfg.dataset]))
        per_batch.append(saved[0])
    for h in hooks:
        h.remove()
    per_image = (per_batch[1] - per_batch[0]) / 2
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    share = TRAIN_SIZE[cfg.dataset] / cfg.num_clients
    steps = cfg.local_epochs * share / cfg.client_batch + 1
    data = (TRAIN_SIZE[cfg.dataset] + 10000) * IMAGE_BYTES[cfg.dataset]
    views = 3 * cfg.num_active * steps * cfg.client_batch * IMAGE_BYTES[cfg.dataset]
    weights = (4 * cfg.num_active + 8) * params
    active = 2 * cfg.num_active * cfg.client_batch * per_image + 3 * 1000 * largest[0]
    return int(MEASURED_OVER_COUNTED * (CUDA_CONTEXT_BYTES + 1.3 * (data + views + weights + active)))
