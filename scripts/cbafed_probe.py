"""Why CBAFed's Table 1 rows end where they do on Fashion-MNIST: a probe of the first federated rounds.

Trains one row of notebooks/cbafed_table1 (`small` variant) for its 20 warm-up rounds and `--federated` federated
rounds; after each federated round it tests every model the server averages and the average, twice: with the BN running
statistics they arrived with, and recomputed on the labeled client's clean images (clean_bn), to answer:
- the upper bound (`--row upper`): does averaging the labeled client's model with the nine Dirichlet-skewed clients'
  one-epoch models cost accuracy against the labeled client's own model (the lower bound's global model)?
- FedAvg + FixMatch (`--row fixmatch`): is its fall to 26 % in the weights, or in the BN statistics the clients gathered
  on their strongly augmented views?

    python scripts/cbafed_probe.py --row fixmatch --seed 0 --federated 5 \
        --out notebooks/probes/cbafed_probe_fixmatch_seed0.csv

One process, one thread: a 5-round probe takes about 4 minutes on our 2-core VM. Writes one CSV, in no run's results.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from semifl_core.augment import normalize  # noqa: E402
from semifl_core.methods import cbafed  # noqa: E402
from semifl_core.report import configs as C  # noqa: E402
from semifl_core.run import Experiment, get_data  # noqa: E402

ROWS = {"upper": "Upper bound (FedAvg, all labeled)", "fixmatch": "FedAvg + FixMatch (CBAFed's schedule)",
        "lower": "Lower bound (labeled client alone)", "cbafed": "CBAFed"}


def clean_bn(model, images, mean, std, batch: int = 500):
    """A copy of model whose BN running statistics are recomputed on `images` (uint8), weights unchanged."""
    m = copy.deepcopy(model)
    for mod in m.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.reset_running_stats()
            mod.momentum = None   # the cumulative average over every batch
    m.train()
    with torch.no_grad():
        for a in range(0, len(images), batch):
            m(normalize(images[a:a + batch], mean, std))
    return m.eval()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--row", choices=sorted(ROWS), required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--federated", type=int, default=5, help="federated rounds after the warm-up (default 5)")
    p.add_argument("--data-root", default=None)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    cfg = C.cbafed_configs("small", "fashionmnist")[ROWS[args.row]].replace(seed=args.seed)
    dev = torch.device("cpu")
    exp = Experiment(cfg, get_data(cfg.dataset, args.data_root, dev), dev)
    st = exp.new_state()
    captured = []
    average = cbafed.fedavg

    def capture(states, weights):
        captured.append((states, weights))
        return average(states, weights)
    cbafed.fedavg = capture
    labeled = exp.data.x_train[exp.labeled_idx[cbafed.LABELED]]
    scratch, rows = copy.deepcopy(st.model), []
    for r in range(cfg.cbafed_warmup + args.federated):
        rec = exp.round(st, r)
        if r < cfg.cbafed_warmup:
            continue
        states, weights = captured[-1]
        w = torch.tensor(weights, dtype=torch.float64)
        w = (w / w.sum()).tolist()
        for i, state in enumerate(states + [None]):
            if state is None:
                model, who = st.model, "average (the global model)"
            else:
                scratch.load_state_dict(state)
                model, who = scratch, "labeled client" if i == 0 else f"client {i}"
            rows.append(dict(round=r + 1, model=who, weight=w[i] if state is not None else 1.0,
                             acc=exp.evaluate(model), acc_clean_bn=exp.evaluate(clean_bn(model, labeled, exp.mean,
                                                                                         exp.std)),
                             label_ratio=rec.get("label_ratio"), pseudo_acc=rec.get("pseudo_acc")))
        last = [x for x in rows if x["round"] == r + 1]
        print(f"round {r + 1}: " + "; ".join(f"{x['model']} {x['acc']:.1f} / clean BN {x['acc_clean_bn']:.1f}"
                                              for x in last if not x["model"].startswith("client")), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.4g")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
