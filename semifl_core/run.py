"""The harness: data, seeding, the round loop, checkpoints, the results store, progress. It holds no equation:
each round is the method's (methods.METHODS[cfg.algorithm].round), given a `Round` and returning a `RoundRecord`.

Randomness is derived per round from (seed, round): the client sample, the batch plans, mixup's lambdas and every
augmentation of round r come from generators seeded with (seed, r), so a resumed run needs only the round counter to
continue exactly as an uninterrupted one.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import __version__, results, sbn
from .config import Config, ConfigError, check_device
from .data import Dataset, load
from .engine import SequentialEngine, Speed, cosine_lr, make_engine
from .models import folded, load_weights, make_model, predict
from .partition import make_split
from .rounds import Round, RoundRecord


# Evaluation batches of a folded model (models.folded, equal up to float rounding): BENCHMARKS.md, "Inference" and
# "GPU evaluation". Pseudo-labeling keeps models.predict's defaults: training stays bit-identical to committed runs.
EVAL_BATCH = {"cpu": 64, "cuda": 1000}


class TrainingError(RuntimeError):
    """Training cannot go on (non-finite loss, out of memory); the message says where and what to change."""


def pick_device(device: str = "auto") -> torch.device:
    """auto: a CUDA GPU if torch sees one, else the CPU. A named device must exist here (ConfigError otherwise)."""
    name = check_device(device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"device={name!r}: torch sees no CUDA GPU here (torch {torch.__version__}, CUDA build: "
                              f"{torch.version.cuda or 'none'}); use --device cpu or auto")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device={name!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                              f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    return torch.device(name)


@dataclass
class State:
    """Everything a run carries from one round to the next (and what a checkpoint holds)."""
    model: torch.nn.Module
    global_opt: torch.optim.Optimizer                    # server SGD on the aggregate (lr 1, momentum beta_g)
    server_state: dict | None = None                     # server's SGD momentum buffers
    client_states: dict = field(default_factory=dict)    # client id -> its SGD momentum buffers
    round: int = 0                                       # rounds done
    metrics: list = field(default_factory=list)
    best: dict = field(default_factory=lambda: {"acc": -1.0, "round": None, "weights": None})
    labeling: dict = field(default_factory=dict)        # the pseudo-label rule's state (methods/pseudo_labels.py)
    method: dict = field(default_factory=dict)          # a method's own state across rounds (docs/adding_a_method.md)
    sbn_fresh: bool = False   # the model's sBN statistics belong to its current weights (not checkpointed)


class Experiment:
    """A run's fixed parts (config, data on the device, split, engines, its method's round), its measurements (sBN
    statistics, test accuracy) and its per-round step; `speed`: engine.Speed (None: the device's default)."""

    def __init__(self, cfg: Config, data: Dataset, device: torch.device, speed: Speed | None = None):
        data = cfg.method.prepare(cfg, data)   # a method's own input pipeline (CBAFed's code variant), if any
        self.cfg, self.data, self.device = cfg, data, device
        speed = Speed.default(device) if speed is None else speed
        if cfg.precision == "bf16":   # a run option (in the run key), carried to the engines as Speed.bf16
            speed = dataclasses.replace(speed, bf16=True)
        self.speed = speed.check(device)
        # on the device once, not copied there by every normalisation
        self.mean, self.std = (torch.as_tensor(v, dtype=torch.float32, device=device) for v in (data.mean, data.std))
        self.method_round = cfg.method.round_function()
        labels = data.y_train.cpu().numpy()
        server, clients, labeled = make_split(cfg, labels)
        if cfg.method.labels == "all":
            server = np.arange(len(labels))
        self.server_idx = torch.as_tensor(server, device=device)
        self.client_idx = [torch.as_tensor(c, device=device) for c in clients]
        self.labeled_idx = [torch.as_tensor(c, device=device) for c in labeled]   # labels at the clients
        self.sbn_idx = torch.as_tensor(sbn.source_indices(cfg, server, clients), device=device)
        self.engine = make_engine(cfg, self.mean, self.std, device.type, self.speed)
        self.server_engine = SequentialEngine(cfg, self.mean, self.std, self.speed)
        # diagnostics: client models get sBN statistics from at most 2500 images of the sBN source (a fixed draw)
        keep = torch.randperm(len(self.sbn_idx), generator=torch.Generator().manual_seed(cfg.seed))[:2500]
        self.diag_sbn_idx = self.sbn_idx[keep.to(device)]

    def new_state(self) -> State:
        torch.manual_seed(self.cfg.seed)
        model = make_model(self.cfg, self.data.shape[0]).to(self.device)
        if self.device.type == "cpu" and self.cfg.model.startswith("cnn"):
            # channels_last: faster on a CPU, slower on a GPU (BENCHMARKS.md, "Engines and threads", "The client step")
            model = model.to(memory_format=torch.channels_last)
        return State(model, torch.optim.SGD(model.parameters(), lr=1.0, momentum=self.cfg.global_momentum))

    # ------------------------------------------------------------------ pieces of a round
    def refresh_sbn(self, model, idx=None):
        idx = self.sbn_idx if idx is None else idx
        sbn.compute_statistics(model, self.data.x_train[idx], self.mean, self.std, one_pass=self.speed.sbn_one_pass,
                               wide=self.speed.wide_passes)

    def evaluate(self, model, per_class: dict | None = None, prefix: str = "") -> float:
        """Test accuracy (%); with per_class, also adds each class's accuracy as per_class[f"{prefix}acc_c{k}"]."""
        net, x = folded(model), self.data.x_test
        if self.speed.wide_passes:
            net, x = net.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
        batch = sbn.WIDE_IMAGES if self.speed.wide_passes else EVAL_BATCH.get(self.device.type, EVAL_BATCH["cpu"])
        right = predict(net, x, self.mean, self.std, batch).argmax(1) == self.data.y_test
        if per_class is not None:
            for k in range(self.cfg.num_classes):
                per_class[f"{prefix}acc_c{k}"] = 100 * right[self.data.y_test == k].float().mean().item()
        return right.float().mean().item() * 100

    def diagnostic_accuracy(self, model, weights: dict | None = None, per_class: dict | None = None,
                            prefix: str = "") -> float:
        """Test accuracy of model (or of a scratch copy holding weights) with sBN statistics for those weights."""
        if weights is not None:
            if getattr(self, "_scratch", None) is None:
                self._scratch = copy.deepcopy(model)
            model = self._scratch
            load_weights(model, weights)
        self.refresh_sbn(model, self.diag_sbn_idx if weights is not None else None)
        return self.evaluate(model, per_class, prefix)

    # ------------------------------------------------------------------ rounds
    def evaluating(self, r: int) -> bool:
        return (r + 1) % self.cfg.eval_every == 0 or r + 1 == self.cfg.rounds

    def start_round(self, r: int) -> Round:
        """Round r (0-based): its learning rate, its randomness (from (seed, r)) and an empty record."""
        cfg, lr = self.cfg, cosine_lr(self.cfg, r)
        return Round(r, lr, np.random.default_rng([cfg.seed, r]),
                     torch.Generator(self.device).manual_seed(cfg.seed * 1_000_003 + r), self.device,
                     diagnose=cfg.diagnostics and self.evaluating(r), last=r + 1 == cfg.rounds,
                     record=RoundRecord(round=r + 1, lr=lr))

    def close_round(self, st: State, rnd: Round) -> dict:
        """After the method's round: the evaluation (on evaluated rounds); returns the round's metrics.csv row."""
        rec = rnd.record
        st.sbn_fresh = False
        if self.evaluating(rnd.r):
            with rnd.timed("eval"):
                self.refresh_sbn(st.model)
                st.sbn_fresh = True
                rec.test_acc = self.evaluate(st.model, rec.diagnostics if self.cfg.diagnostics else None)
        return rec.row()

    def round(self, st: State, r: int) -> dict:
        """Round r (0-based) of the method, then the evaluation; returns the round's metrics.csv row."""
        rnd = self.start_round(r)
        self.method_round(self, st, rnd)
        return self.close_round(st, rnd)


# ---------------------------------------------------------------------- the whole run
_DATA_CACHE: dict = {}


def get_data(name: str, data_root, device) -> Dataset:
    """Each dataset is loaded once per process and device."""
    key = (name, str(data_root), str(device))
    if key not in _DATA_CACHE:
        _DATA_CACHE[key] = load(name, data_root, device)
    return _DATA_CACHE[key]


def run(cfg: Config, results_dir="results", device="auto", data_root=None, progress=True,
        checkpoint_every: int = 10, data: Dataset | None = None, speed: Speed | None = None) -> dict:
    """Run cfg to the end, reuse its complete results, or resume it from its last checkpoint. While it trains, this
    process holds the run directory (results.hold): a second process on the same run waits, then reuses the result.
    `speed`: engine.Speed (None: the device's default; bf16 refused: use Config.precision). Returns its summary."""
    cfg = cfg.validate()
    if speed is not None and speed.bf16:
        raise ConfigError("bf16=True: changes results, which the results store keys by the config alone; allowed in "
                          "a run: False (a bf16 run: precision='bf16' in its config)")
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ConfigError(f"checkpoint_every={checkpoint_every!r}: must be an integer >= 1 (rounds between "
                          "checkpoints)")
    device = pick_device(device)
    info = results.open_run(results_dir, cfg)
    if info.state != "complete":   # a complete run is never changed again: reusing it needs no lock
        with disk_errors(cfg, lambda: "nothing was trained"):
            results.check_writable(results_dir)   # read-only or full: one line now, before any training
        with results.hold(info.path):
            info = results.open_run(results_dir, cfg)   # again: another process may have finished it meanwhile
            if info.state != "complete":
                return _train(cfg, info.path, device, data if data is not None else
                              get_data(cfg.dataset, data_root, device), progress, checkpoint_every, speed)
    # possibly trained by the other engine: equal up to float rounding (engine.py)
    ran = info.summary.get("engine") or (info.config or {}).get("config", {}).get("engine")
    return {**info.summary, "engine": ran, "path": str(info.path), "reused": True}


def _train(cfg: Config, path: Path, device, data: Dataset, progress: bool, checkpoint_every: int,
           speed: Speed | None = None) -> dict:
    exp = Experiment(cfg, data, device, speed)
    st = exp.new_state()
    ckpt = path / "checkpoint.pt"
    saved = None   # the round of the checkpoint on disk
    writer = CheckpointWriter()

    def on_disk():   # what a failed run leaves (a write in flight finished first): say it as it is
        kept = writer.finished() or saved
        return (f"the last good checkpoint (round {kept}) is kept in {path}" if kept is not None else
                f"no checkpoint was written yet (one every {checkpoint_every} rounds), nothing to resume")
    if ckpt.exists():
        try:
            ck = torch.load(ckpt, map_location=device, weights_only=False)
        except Exception as err:  # unpickling a damaged file can raise almost anything
            why = str(err).splitlines()[0][:200] if str(err) else ""
            raise results.ResultsError(
                f"{ckpt}: corrupt checkpoint ({type(err).__name__}{': ' + why if why else ''}); delete {path} to "
                f"start that run over, or run `semifl runs --clean --results-dir {path.parent}`") from None
        if why := checkpoint_mismatch(ck, cfg):   # a checkpoint copied from another run resumes nothing
            raise results.ResultsError(f"{ckpt}: corrupt checkpoint ({why}); delete {path} to start that run over, "
                                       f"or run `semifl runs --clean --results-dir {path.parent}`")
        restore(st, ck)
        saved = st.round
    else:
        with disk_errors(cfg, on_disk):
            results.atomic_write(path / "config.json", json.dumps(results.config_record(cfg), indent=1).encode())
    stop = []
    handlers = _install_stop_handlers(stop)
    start = time.perf_counter()
    bar = _progress(range(st.round, cfg.rounds), st.round, cfg, progress)

    def written():   # the write in flight, done: its round is the one on disk (a disk error surfaces here)
        nonlocal saved
        with disk_errors(cfg, on_disk):
            saved = writer.wait() or saved
    try:
        for r in bar:
            m = keep_round(st, exp.round(st, r), on_disk)
            if hasattr(bar, "set_postfix") and "test_acc" in m:
                bar.set_postfix(acc=f"{m['test_acc']:.1f}", best=f"{st.best['acc']:.1f}")
            if writer.busy() is False:
                written()
            if st.round % checkpoint_every == 0 or stop:
                written()
                writer.submit(ckpt, st, cfg.key())   # the next round trains while it is written
            if stop:
                written()
                raise KeyboardInterrupt(f"stopped after round {st.round}; checkpoint saved, run again to resume")
        written()
    except torch.cuda.OutOfMemoryError:
        raise TrainingError(f"out of GPU memory in round {st.round + 1} ({on_disk()}); lower client_batch or "
                            "server_batch, use a smaller model, or set engine=sequential") from None
    except RuntimeError as err:
        if not overflowed(err):
            raise
        raise TrainingError(f"round {st.round + 1}: a step overflowed float32 ({err}); stopped, {on_disk()}; "
                            "lower lr or weight_decay") from None
    finally:
        writer.join()   # a write in flight completes (or fails) before the run returns or raises
        for sig, h in handlers.items():
            signal.signal(sig, h)
    with disk_errors(cfg, on_disk):
        return finish(exp, st, path, time.perf_counter() - start)


@contextmanager
def disk_errors(cfg: Config, kept):
    """A results directory that is full or refuses writes (results.DISK_ERRNOS) as one line, results.DiskError: the
    file, about the space a run of cfg needs (disk_need), what is kept (`kept()`)."""
    try:
        yield
    except OSError as err:
        if err.errno not in results.DISK_ERRNOS:
            raise
        raise results.disk_error(err, disk_need(cfg), kept()) from None


def disk_need(cfg: Config) -> int:
    """About the most bytes a run of cfg holds in its directory at once: two checkpoints (while one replaces the other),
    each the weights and the best round's, the global optimizer's and the server's momentum, a momentum buffer per
    client (client_momentum=keep) and the metrics (model.pt at the end is less)."""
    from .config import IMAGE_SHAPE
    with torch.random.fork_rng(devices=[]):   # building a model draws from torch's generator: leave it as it was
        model = make_model(cfg, IMAGE_SHAPE[cfg.dataset][0])
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    clients = cfg.num_clients if cfg.client_momentum == "keep" else 0
    return 2 * (2 * weights + (2 + clients) * params + 1024 * cfg.rounds)


def overflowed(err: BaseException) -> bool:
    """Whether err is torch refusing a Python number that overflows float32 (an optimizer's step: Adam's first step
    is 10 lr, over float32's largest value from lr ~3.4e37; Config.validate refuses the fields themselves above it)."""
    return isinstance(err, RuntimeError) and "without overflow" in str(err)


def keep_round(st: State, m: dict, on_disk=lambda: "nothing was saved") -> dict:
    """Add round m (a metrics.csv row) to the run's state: metrics, round counter, best model so far. A non-finite loss,
    or weights overflowed after a finite last loss, stops the run (TrainingError; on_disk(): what is kept)."""
    r = m["round"]
    for key in ("client_loss", "server_loss"):
        if key in m and not np.isfinite(m[key]):
            raise TrainingError(f"round {r}: {key.replace('_', ' ')} is {m[key]}; stopped, {on_disk()}; "
                                "lower lr or check the data")
    weights = {k: v for k, v in st.model.state_dict().items() if v.is_floating_point()}
    if weights and not torch.stack([torch.isfinite(v).all() for v in weights.values()]).all():   # one sync
        name = next(k for k, v in weights.items() if not torch.isfinite(v).all())
        raise TrainingError(f"round {r}: the model's weights overflowed (non-finite values in {name}); stopped, "
                            f"{on_disk()}; lower lr or weight_decay")
    st.metrics.append(m)
    st.round = r
    if m.get("test_acc", -1) > st.best["acc"]:
        st.best = {"acc": m["test_acc"], "round": r,
                   "weights": {k: v.detach().cpu().clone() for k, v in st.model.state_dict().items()}}
    return m


def finish(exp: Experiment, st: State, path: Path, wall: float, **extra) -> dict:
    """Write model.pt, metrics.csv, then summary.json (last, sealed, checksums, `extra`); drop the checkpoint."""
    best_model = copy.deepcopy(st.model)
    best_model.load_state_dict(st.best["weights"])
    exp.refresh_sbn(best_model, torch.arange(len(exp.data.x_train), device=exp.device))
    import pandas as pd
    metrics = pd.DataFrame(st.metrics)
    results.atomic_write(path / "metrics.csv", metrics.to_csv(index=False).encode())
    results.save_torch(path / "model.pt", {"final": st.model.state_dict(), "best": st.best["weights"],
                                          "best_round": st.best["round"]})
    summary = results.seal({
        **results.summarize(results.load_metrics(path)),
        "best_acc_train_sbn": exp.evaluate(best_model),
        "note": "final_acc: last round. best_acc: best round chosen on the test set (as the paper reports). "
                "best_acc_train_sbn: that model re-evaluated with sBN statistics from the whole training set.",
        "wall_time_s": wall,
        "device": str(exp.device),
        "engine": exp.engine.name,
        "version": __version__,
        **extra,
        "checksums": {name: results.sha256(path / name) for name in ("metrics.csv", "model.pt")},
    })
    results.atomic_write(path / "summary.json", json.dumps(summary, indent=1).encode())
    (path / "checkpoint.pt").unlink(missing_ok=True)
    return {**summary, "path": str(path), "reused": False}


def checkpoint_of(st: State, key: str) -> dict:
    """The run's state after round st.round, with the run key it belongs to (checked on resume), copied to the host:
    training may change st while the copy is written."""
    state = {"key": key, "model": st.model.state_dict(), "global_opt": st.global_opt.state_dict(),
             "server_state": st.server_state, "client_states": st.client_states, "round": st.round,
             "metrics": st.metrics, "best": st.best, "labeling": st.labeling, "method": st.method}
    return copy.deepcopy(torch.utils._pytree.tree_map(
        lambda v: v.detach().to("cpu", copy=True) if torch.is_tensor(v) else v, state))


def write_checkpoint(path: Path, ck: dict) -> None:
    """A checkpoint (checkpoint_of) and the metrics so far, each written whole or not at all (results.atomic_write)."""
    import pandas as pd
    results.save_torch(path, ck)
    results.atomic_write(path.parent / "metrics.csv", pd.DataFrame(ck["metrics"]).to_csv(index=False).encode())


class CheckpointWriter:
    """Writes a run's checkpoints in a background thread, one at a time: `submit` copies the state to the host (the only
    part the training waits for) and starts the write; `wait` joins it, re-raising its error (a full disk), and returns
    the round it wrote. A kill or a full disk mid-write leaves the previous checkpoint whole (write_checkpoint)."""

    def __init__(self):
        self.thread, self.error, self.round = None, None, None

    def submit(self, path: Path, st: State, key: str) -> None:
        self.wait()
        ck = checkpoint_of(st, key)

        def work():
            try:
                write_checkpoint(path, ck)
            except BaseException as err:   # handed to the training thread by wait()
                self.error = err
        self.round = ck["round"]
        self.thread = threading.Thread(target=work, name="checkpoint-writer")
        self.thread.start()

    def busy(self) -> bool | None:
        """True while a write runs, False when one has finished and was not waited for, None with none submitted."""
        return None if self.thread is None else self.thread.is_alive()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def finished(self) -> int | None:
        """The round of the write in flight once it is done, if it succeeded (None otherwise)."""
        self.join()
        return self.round if self.thread is not None and self.error is None else None

    def wait(self) -> int | None:
        if self.thread is None:
            return None
        self.join()
        self.thread, error, self.error = None, self.error, None
        if error is not None:
            raise error
        return self.round


def checkpoint_mismatch(ck, cfg: Config) -> str:
    """Why checkpoint ck cannot resume cfg's run ("" when it can)."""
    if not isinstance(ck, dict) or "round" not in ck or "metrics" not in ck:
        return "not a checkpoint of this package"
    if ck.get("key") != cfg.key():
        return (f"it belongs to run key {ck.get('key') or '(none: written by an older version)'}, this run's key is "
                f"{cfg.key()}")
    r = ck["round"]
    if not isinstance(r, int) or not 0 < r <= cfg.rounds or len(ck["metrics"]) != r:
        return f"its round {r!r} does not fit this run ({cfg.rounds} rounds, {len(ck['metrics'])} metric rows)"
    return ""


def restore(st: State, ck: dict) -> None:
    st.model.load_state_dict(ck["model"])
    st.global_opt.load_state_dict(ck["global_opt"])
    st.server_state, st.client_states = ck["server_state"], ck["client_states"]
    st.round, st.metrics, st.best = ck["round"], ck["metrics"], ck["best"]
    st.labeling = ck.get("labeling", {})
    st.method = ck.get("method", {})


def _install_stop_handlers(stop: list):
    """First Ctrl-C / SIGTERM: finish the round, checkpoint, stop. A second Ctrl-C stops at once."""
    def handler(signum, frame):
        if stop and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.append(signum)
    old = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    return old


def _progress(rounds, done, cfg, show):
    if not show:
        return rounds
    from tqdm import tqdm
    return tqdm(rounds, initial=done, total=cfg.rounds, desc=f"{cfg.algorithm} {cfg.dataset} {cfg.partition}",
                unit="round", leave=False)
