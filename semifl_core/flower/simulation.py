"""A Flower simulation from Python: the ServerApp and one virtual SuperNode per client on a local Ray instance."""
from __future__ import annotations

from ..config import Config
from . import flower_config


def simulate(cfg: Config, results_dir="results-flower", data_root=None, num_cpus_per_client: float = 1,
             num_gpus_per_client: float = 0.0, progress: bool = True) -> dict:
    """Run cfg as a Flower simulation (flwr.simulation.run_simulation) into results_dir; returns run.run's summary."""
    from flwr.simulation import run_simulation

    from .client_app import app as client_app
    from .server_app import make_server_app
    cfg = flower_config(cfg)
    out: dict = {}
    backend = {"client_resources": {"num_cpus": num_cpus_per_client, "num_gpus": num_gpus_per_client},
               "init_args": {"include_dashboard": False, "log_to_driver": True}}
    run_simulation(make_server_app(cfg, results_dir, data_root, progress, out), client_app,
                   num_supernodes=cfg.num_clients, backend_config=backend)
    if "summary" not in out:
        raise RuntimeError(f"the Flower simulation ended without a result: {out.get('error', 'see its log above')}")
    return out["summary"]
