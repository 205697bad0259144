"""The ClientApp: one SemiFL client (its partition id, from the SuperNode's node config) per SuperNode.

On "query" it says its partition id (the ServerApp maps partition ids to nodes once per run). On "train" it runs
ClientUpdate on the global model as the harness does (methods/semifl.client_task, from the client's own streams, then
the engine) and replies with its model (none when its fix set is empty), per-step loss sums and label counts. Its SGD
momentum (client_momentum="keep") lives in the ClientApp's context state between its rounds.
"""
from __future__ import annotations

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ..methods.semifl import client_objective, client_task
from ..rounds import Round, RoundRecord, client_round
from ..run import Experiment, get_data, pick_device
from . import decode_config

app = ClientApp()
_CACHE: dict = {}   # this process's experiment and model for the run's config (a process may serve many nodes)


def _experiment(cfg, data_root):
    key = cfg.key()
    if key not in _CACHE:
        _CACHE.clear()
        device = pick_device("auto")
        exp = Experiment(cfg, get_data(cfg.dataset, data_root, device), device)
        _CACHE[key] = exp, exp.new_state().model
    return _CACHE[key]


def partition_id(context: Context) -> int:
    if "partition-id" not in context.node_config:
        raise ValueError("this SuperNode has no partition-id in its node config: start it with "
                         "--node-config 'partition-id=K' (K from 0 to num_clients - 1)")
    return int(context.node_config["partition-id"])


@app.query()
def query(msg: Message, context: Context) -> Message:
    return Message(RecordDict({"node": ConfigRecord({"partition-id": partition_id(context)})}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    spec = msg.content["round"]
    cfg, r, lr, c = decode_config(spec["config"]), int(spec["r"]), float(spec["lr"]), partition_id(context)
    exp, model = _experiment(cfg, context.node_config.get("data-root") or None)
    model.load_state_dict(msg.content["model"].to_torch_state_dict())
    rnd = Round(r, lr, None, None, exp.device, diagnose=False, last=False, record=RoundRecord(round=r + 1, lr=lr))
    task, counts = client_task(exp, model, client_round(rnd, cfg.seed, c), c)
    result, content = {"partition-id": c}, RecordDict()
    if counts is not None:
        result["counts"] = [int(v) for v in counts]
    if task is not None:
        keep = cfg.client_momentum == "keep"
        state = context.state["momentum"].to_torch_state_dict() if keep and "momentum" in context.state else None
        if state is not None:
            state = {k: v.to(exp.device) for k, v in state.items()}
        stacked, states, stats = exp.engine.train(model, [task], client_objective(cfg)[0], lr, [state])
        if keep and states[0]:
            context.state["momentum"] = ArrayRecord({k: v.cpu() for k, v in states[0].items()})
        content["model"] = ArrayRecord({k: v[0].cpu() for k, v in stacked.items()})
        result.update(stats=[float(v) for v in stats[0]], steps=task.steps, samples=int(task.size.sum()))
    content["result"] = ConfigRecord(result)
    return Message(content, reply_to=msg)
