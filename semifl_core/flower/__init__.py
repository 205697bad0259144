"""SemiFL as a Flower app (the [distributed] extra): real server and client processes, in simulation or deployed.

server_app.py and client_app.py run SemiFL's round with methods/semifl.py's functions, as the in-process harness does;
simulation.py runs a Flower simulation from Python (one virtual SuperNode per client, on Ray); tests/test_flower.py
checks a deployment (a SuperLink, N SuperNodes, `flwr run` of app/pyproject.toml) against the simulation.

S_t is drawn by the harness's seeded generator over partition ids 0..M-1 (Flower's own sampling is unseeded and over
node ids). Every client draws from its own stream (rng_streams="client", set by `flower_config`), so a Flower run
equals the in-process run of the same config to float rounding (tests/test_flower.py).

A deployment must know: the server loads the dataset too (its labeled share, the test set, and with sbn_source="all"
the clients' images for the sBN statistics, as the authors' code does; sbn_source="server" never reads client data);
and a Flower run does not resume from a checkpoint (the clients' momentum lives in their processes): a run that dies
starts again from round 1.

Nothing here is imported by the rest of the package: `import semifl_core` never imports flwr or ray.
"""
from __future__ import annotations

import json

from ..config import Config, profile


def flower_config(cfg: Config) -> Config:
    """cfg with per-client random streams, as a Flower run trains it; ConfigError for what the Flower app cannot run."""
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
