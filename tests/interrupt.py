"""A run stopped midway, for the tests of checkpoints and resuming (imported by test modules; not itself a test)."""
import pytest

from semifl_core import results
from semifl_core import run as run_mod
from semifl_core.run import Experiment


def interrupted(cfg, root, after: int = 1, data=None):
    """cfg's run in root, killed (KeyboardInterrupt) in round after + 1 with a checkpoint of round `after`; returns
    its directory."""
    real = Experiment.round

    def stop(self, st, r):
        if r == after:
            raise KeyboardInterrupt("killed")
        return real(self, st, r)
    Experiment.round = stop
    try:
        with pytest.raises(KeyboardInterrupt):
            run_mod.run(cfg, root, device="cpu", progress=False, data=data, checkpoint_every=1)
    finally:
        Experiment.round = real
    return results.run_dir(root, cfg)
