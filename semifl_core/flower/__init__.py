"""SemiFL as a Flower app (the [distributed] extra): real server and client processes, in simulation or deployed.

- server_app.py: the ServerApp. Its strategy (SemiFLStrategy) runs SemiFL's round with the functions of
  methods/semifl.py: begin_round (sampling S_t, the global model's sBN statistics), then, after the clients,
  end_round (equal-weight averaging + global momentum, the server's fine-tune), and the harness's evaluation.
- simulation.py: `simulate(cfg)`, a Flower simulation from Python (one virtual SuperNode per client, on Ray).
- deploy.py: a SuperLink and N SuperNodes as processes, `flwr run`, checked against the simulation.
- app/pyproject.toml: the app that `flwr run` submits (its components are this package's).
- client_app.py: the ClientApp. Client c (its partition id) pseudo-labels, builds its fix and mix sets and trains
  with methods/semifl.client_task and the engine, as the in-process harness does; the SGD momentum it keeps between
  rounds (client_momentum="keep") lives in the ClientApp's context state.
- Client sampling: S_t is drawn by the harness's seeded generator over partition ids 0..M-1 (Flower's own sampling is
  unseeded and over node ids); each node says its partition id once, at the start of a run.
- Randomness: the Flower app needs every client to draw from its own stream (Config.rng_streams="client", set by
  `flower_config`), so that a client in its own process draws what the in-process harness draws for it. A Flower
  run then equals the in-process run of the same config to float rounding (tests/test_flower.py).

Two things a deployment must know: the server loads the dataset too (its labeled share, the test set, and with
sbn_source="all" the clients' images for the sBN statistics, as the authors' code does: use sbn_source="server" for
a server that never reads client data); and a Flower run does not resume from a checkpoint (the clients' momentum
lives in their processes): a run that dies starts again from round 1.

Nothing here is imported by the rest of the package: `import semifl_core` never imports flwr or ray.
"""
from __future__ import annotations

import json

from ..config import Config, profile


def flower_config(cfg: Config) -> Config:
    """The config a Flower run trains: cfg with per-client random streams; refused (ConfigError, one line) for what
    the Flower app does not run."""
    from ..config import ConfigError
    from ..methods import FEDAVG_FIXMATCH, SEMIFL
    if cfg.algorithm not in (SEMIFL, FEDAVG_FIXMATCH):
        raise ConfigError(f"algorithm={cfg.algorithm!r}: the Flower app runs {SEMIFL} and {FEDAVG_FIXMATCH} "
                          "(the methods of methods/semifl.py); run the others in-process")
    if cfg.diagnostics:
        raise ConfigError("diagnostics=True: the Flower app does not evaluate the client models (they stay in "
                          "their processes); run diagnostics in-process")
    return cfg.replace(rng_streams="client").validate()


def config_from_run_config(run_config: dict) -> Config:
    """The Config of a `flwr run`: run_config's `profile`, `dataset` (empty: the profile's) and `set` (space-separated
    field=value pairs, as `semifl run --set`)."""
    from ..argv import parse_sets
    overrides = parse_sets(str(run_config.get("set", "")).split())
    return flower_config(profile(str(run_config.get("profile", "smoke")), run_config.get("dataset") or None,
                                 **overrides))


def encode_config(cfg: Config) -> str:
    return json.dumps(cfg.to_dict(), sort_keys=True)


def decode_config(text: str) -> Config:
    return Config.from_dict(json.loads(text))
