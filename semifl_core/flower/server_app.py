"""The ServerApp: SemiFL's server as a Flower strategy (Message API), with the in-process harness's functions.

configure_train runs methods/semifl.begin_round (S_t, the global model's sBN statistics) and sends the global model to
S_t's nodes; aggregate_train runs methods/semifl.end_round on the client models in S_t's order (equal-weight Model
Averaging, global momentum, the server's fine-tune), then run.Experiment.close_round; stored as in-process runs are.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import Strategy

from .. import results
from ..methods.semifl import begin_round, end_round, record_fixmatch, record_labels, record_training
from ..run import Experiment, finish, get_data, keep_round, pick_device
from . import config_from_run_config, encode_config, flower_config


def model_arrays(model: torch.nn.Module) -> ArrayRecord:
    """The model's whole state (weights, sBN statistics) as Flower arrays."""
    return ArrayRecord({k: v.cpu() for k, v in model.state_dict().items()})


class SemiFLStrategy(Strategy):
    """SemiFL's round on Flower's Message API. Holds the run's Experiment (server data, test set, engines) and State
    (global model, global momentum, server momentum, metrics); `nodes` maps partition ids to node ids."""

    def __init__(self, exp: Experiment, st, nodes: dict[int, int], bar=None):
        self.exp, self.st, self.nodes, self.bar = exp, st, nodes, bar
        self.config_text = encode_config(exp.cfg)
        self.rnd, self.active, self.sent = None, [], 0.0

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        self.rnd = self.exp.start_round(server_round - 1)
        self.active = begin_round(self.exp, self.st, self.rnd)
        model = model_arrays(self.st.model)
        spec = ConfigRecord({"r": self.rnd.r, "lr": self.rnd.lr, "config": self.config_text})
        self.sent = time.perf_counter()
        return [Message(RecordDict({"model": model, "round": spec}), dst_node_id=self.nodes[c], message_type="train",
                        group_id=str(server_round)) for c in self.active]

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        exp, st, rnd, cfg = self.exp, self.st, self.rnd, self.exp.cfg
        rec = rnd.record
        rec.times["clients"] = time.perf_counter() - self.sent   # their whole round trip, transport included
        got = {}
        for m in replies:
            if m.has_error():
                raise RuntimeError(f"round {server_round}: the client on node {m.metadata.src_node_id} failed: "
                                   f"{m.error.reason}")
            got[int(m.content["result"]["partition-id"])] = m.content
        missing = [c for c in self.active if c not in got]
        if missing:
            raise RuntimeError(f"round {server_round}: no reply from clients {missing} (timed out)")
        if cfg.global_pseudo_labels:
            record_labels(rec, sum(np.array(got[c]["result"]["counts"], dtype=np.int64) for c in self.active))
        trained = [c for c in self.active if "model" in got[c]]
        rec.clients_trained = len(trained)
        stacked, stats = {}, torch.zeros(0, 1)
        if trained:
            models = [got[c]["model"].to_torch_state_dict() for c in trained]
            stacked = {k: torch.stack([m[k] for m in models]).to(exp.device) for k in models[0]}
            stats = torch.tensor([list(got[c]["result"]["stats"]) for c in trained], dtype=torch.float32)
        record_training(rec, sum(got[c]["result"]["samples"] for c in trained),
                        sum(got[c]["result"]["steps"] for c in trained), stats)
        if not cfg.global_pseudo_labels and trained:
            record_fixmatch(rec, stats)
        end_round(exp, st, rnd, stacked)
        row = keep_round(st, exp.close_round(st, rnd))
        if self.bar is not None:
            self.bar.update()
            if "test_acc" in row:
                self.bar.set_postfix(acc=f"{row['test_acc']:.1f}", best=f"{st.best['acc']:.1f}")
        metrics = MetricRecord({k: v for k, v in row.items() if isinstance(v, (int, float)) and np.isfinite(v)})
        return model_arrays(st.model), metrics

    def configure_evaluate(self, server_round, arrays, config, grid) -> Iterable[Message]:
        return []   # SemiFL evaluates the global model at the server (aggregate_train)

    def aggregate_evaluate(self, server_round, replies):
        return None

    def summary(self) -> None:
        cfg = self.exp.cfg
        print(f"SemiFLStrategy: {cfg.algorithm}, {cfg.num_clients} clients, {cfg.num_active} a round, "
              f"{cfg.rounds} rounds")


def partition_nodes(grid: Grid, num_clients: int, wait_s: float = 300.0) -> dict[int, int]:
    """Wait for num_clients SuperNodes, ask each its partition id; {partition id: node id} covering 0..M-1."""
    deadline = time.monotonic() + wait_s
    while len(nodes := list(grid.get_node_ids())) < num_clients:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(nodes)} of the {num_clients} SuperNodes this run needs connected within "
                               f"{wait_s:.0f} s (one per client: num_clients={num_clients})")
        time.sleep(0.5)
    replies = grid.send_and_receive([Message(RecordDict(), dst_node_id=n, message_type="query") for n in nodes])
    found: dict[int, int] = {}
    for m in replies:
        if m.has_error():
            raise RuntimeError(f"node {m.metadata.src_node_id}: {m.error.reason}")
        pid = int(m.content["node"]["partition-id"])
        if pid in found:
            raise RuntimeError(f"nodes {found[pid]} and {m.metadata.src_node_id} both say partition-id={pid}")
        found[pid] = m.metadata.src_node_id
    if sorted(found) != list(range(num_clients)):
        raise RuntimeError(f"the SuperNodes' partition ids are {sorted(found)}; this run needs 0..{num_clients - 1}")
    return found


def serve(grid: Grid, cfg, results_dir="results-flower", data_root=None, progress=True, out: dict | None = None):
    """The ServerApp's work: reuse cfg's complete run from the store, or train it with the SuperNodes."""
    out = {} if out is None else out
    cfg = flower_config(cfg)
    info = results.open_run(results_dir, cfg)
    if info.state == "complete":
        out["summary"] = {**info.summary, "path": str(info.path), "reused": True}
        return out["summary"]
    device = pick_device("auto")
    with results.hold(info.path):
        results.atomic_write(info.path / "config.json", json.dumps(results.config_record(cfg), indent=1).encode())
        exp = Experiment(cfg, get_data(cfg.dataset, data_root, device), device)
        st = exp.new_state()
        nodes = partition_nodes(grid, cfg.num_clients)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=cfg.rounds, desc=f"flower {cfg.algorithm} {cfg.dataset} {cfg.partition}", unit="round",
                       leave=False)
        start = time.perf_counter()
        try:
            SemiFLStrategy(exp, st, nodes, bar).start(grid, model_arrays(st.model), num_rounds=cfg.rounds)
        finally:
            if bar is not None:
                bar.close()
        out["summary"] = finish(exp, st, info.path, time.perf_counter() - start, runtime="flower",
                                supernodes=len(nodes))
    return out["summary"]


def make_server_app(cfg, results_dir="results-flower", data_root=None, progress=True, out: dict | None = None):
    """A ServerApp that trains cfg (the Python API: flower.simulate)."""
    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        try:
            serve(grid, cfg, results_dir, data_root, progress, out)
        except Exception as err:
            if out is not None:
                out["error"] = f"{type(err).__name__}: {err}"
            raise

    return server


# `flwr run`: the config from the run config (flower/app/pyproject.toml: profile, dataset, set, results-dir, data-root)
app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    summary = serve(grid, config_from_run_config(rc), str(rc.get("results-dir", "results-flower")),
                    rc.get("data-root") or None)
    print(f"semifl flower: final_acc {summary['final_acc']:.2f}, best_acc {summary['best_acc']:.2f}, "
          f"{summary['path']}")
