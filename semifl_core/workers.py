"""run_all's worker processes: one torch thread each; they stop as one run stops (after its round, with a checkpoint)
and die with the process that started them, however it ends (SIGKILL included).

Parent gone: the worker gets SIGTERM, so its run stops after its round, with a checkpoint, and the worker exits; one
still alive ORPHAN_GRACE_S later is killed, losing the rounds since its last checkpoint as a crash does (a bound
rather than "the round": a small-profile round takes 20 s on a CPU, and an orphan is a process nobody sees, holding
its run's lock). On Linux the kernel sends the SIGTERM (PR_SET_PDEATHSIG, armed in `init`); everywhere a thread
watching os.getppid() sends it too. Ctrl-C or SIGTERM of the parent: `stop` sends each worker SIGTERM, cancels what
has not started, and says what is left.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import contextmanager

ORPHAN_GRACE_S = 5   # a worker whose parent died has this long to finish its round and checkpoint, then is killed
STOP_WAIT_S = 120    # run_all, stopped, waits this long at most for its workers to finish their round
_parent = None       # in a run_all worker: the pid of the process that started it (None elsewhere)
_busy = False        # in a worker: a run is in train
_stopped = False     # in a worker: a stop (SIGTERM/SIGINT) came; it starts no other run


def init(parent=None):
    """A run_all worker: one torch thread; a stop (SIGTERM/SIGINT) ends its run as it ends one run (after the round,
    with a checkpoint; outside the rounds see _on_stop) and it starts no other run; it dies with `parent`, the
    process that started it, however that one ends (SIGKILL included).

    Parent gone: the worker gets SIGTERM, stops so and exits; one still alive ORPHAN_GRACE_S later ends anyway,
    losing the rounds since its last checkpoint, as a crash does. A bound rather than "the round": a small-profile
    round can take 20 s on a CPU, and an orphan is a process nobody sees, holding its run's lock; smoke and GPU
    rounds fit in the grace. On Linux the kernel sends that SIGTERM (PR_SET_PDEATHSIG, which fires when the parent's
    thread that started the worker ends: run_all's, as the pool starts its workers in submit); everywhere, a thread
    watching os.getppid() sends it too and ends the worker after the grace."""
    global _parent
    import threading

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
    """A worker's SIGTERM/SIGINT outside a run's rounds (run.run handles it within them): the worker starts no other
    run; a run being set up ends (KeyboardInterrupt: no round done), one being written (run.finish) completes; an
    idle worker exits if its parent is gone, else waits for the pool to end it."""
    global _stopped
    _stopped = True
    if _busy:
        from ..run import finish
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
    """Stop run_all's pool as one run stops: no run starts any more, each running one finishes its round and writes
    its checkpoint (SIGTERM to every worker, see init); wait STOP_WAIT_S at most for the workers to exit.
    Returns the line that says what is left (of the `unfinished` configs) and how to resume."""
    from .results import open_run
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
    left = [info.path for info in (open_run(results_dir, cfg) for cfg in unfinished) if info.state != "complete"]
    saved, busy = sum((p / "checkpoint.pt").exists() for p in left), sum(w.is_alive() for w in workers)
    return (f"stopped: {saved} runs unfinished (checkpointed), {len(left) - saved} not started"
            + (f", {busy} workers still finishing their round" if busy else "")
            + "; run the same cell/command again to resume")
