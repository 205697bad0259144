"""engine.Speed: how the engines run (not what they compute). Its switches are checked against the device with one
ConfigError line, and none of them can reach a run's key."""
import dataclasses

import pytest
import torch

from semifl_core.config import ConfigError, profile
from semifl_core.engine import Speed


def test_baseline_is_all_off_and_default_turns_on_every_exact_change():
    assert not any(dataclasses.asdict(Speed.baseline()).values())
    cpu = Speed.default("cpu")
    assert cpu.sync_free and cpu.flat_sgd and cpu.sbn_one_pass
    assert not cpu.cuda_graphs and not cpu.bf16
    gpu = Speed.default(torch.device("cuda"))
    assert gpu.cuda_graphs and not gpu.bf16                       # fp32 stays the default
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpu.flat_sgd = False


@pytest.mark.parametrize("field", ["cuda_graphs", "bf16"])
def test_gpu_only_switches_are_refused_on_a_cpu_in_one_line(field):
    with pytest.raises(ConfigError) as err:
        Speed(**{field: True}).check("cpu")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{field}=True") and "allowed" in msg


def test_a_run_refuses_bf16_because_it_changes_results(tmp_path):
    from semifl_core.run import run
    with pytest.raises(ConfigError, match=r"^bf16=True: .*allowed in a run: False"):
        run(profile("smoke", rounds=1), tmp_path, device="cpu", progress=False, speed=Speed(bf16=True))
    assert not any(tmp_path.iterdir())                             # refused before anything is written
