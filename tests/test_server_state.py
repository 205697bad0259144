"""The server's step and state (methods/client_state.ServerState), run from docs/adding_a_method.md's section 4c as a
reader would write it: FedAdam (a server step) and SCAFFOLD (a client correction, both control variates), each equal
to SemiFL bit for bit when switched off, in both engines; switched on, each does what its paper's update says."""
import re
from pathlib import Path

import pytest
import torch

from semifl_core.config import profile
from semifl_core.data import synthetic
from semifl_core.methods import METHODS
from semifl_core.methods.client_state import KEY, SERVER_KEY
from semifl_core.run import Experiment

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_a_method.md"
DATA = synthetic()
NAMES = ("semifl-adam", "semifl-scaffold")


@pytest.fixture(scope="module", autouse=True)
def registered():
    for name in NAMES:
        METHODS.pop(name, None)
    text = DOC.read_text()
    section = text[text.index("## 4c."):text.index("## 5.")]
    block, = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    exec(compile(block, str(DOC), "exec"), {})
    yield
    for name in NAMES:
        METHODS.pop(name, None)


def _rounds(cfg, n=2):
    exp = Experiment(cfg, DATA, torch.device("cpu"))
    st = exp.new_state()
    for r in range(n):
        exp.round(st, r)
    return st


def _weights(st):
    return {k: v.detach().clone() for k, v in st.model.state_dict().items()}


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
@pytest.mark.parametrize("off", [dict(algorithm="semifl-adam", adam_lr=0.0),
                                 dict(algorithm="semifl-scaffold", scaffold=False)])
def test_switched_off_each_trains_semifls_runs_bit_for_bit(engine, off):
    base = dict(engine=engine, threshold=0.0, local_epochs=2.0)
    plain, variant = (_weights(_rounds(profile("smoke", **base, **extra))) for extra in ({}, off))
    assert plain.keys() == variant.keys() and all(torch.equal(plain[k], variant[k]) for k in plain)


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_fedadam_moves_the_global_model_by_its_own_step(engine):
    base = dict(engine=engine, threshold=0.0, local_epochs=2.0)
    plain = _weights(_rounds(profile("smoke", **base)))
    st = _rounds(profile("smoke", algorithm="semifl-adam", **base))
    s = st.method[SERVER_KEY]
    assert any(s[k].abs().sum() > 0 for k in s if k.startswith("m."))            # its moments were updated
    assert any(not torch.equal(plain[k], v) for k, v in _weights(st).items())   # and so is the model


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_scaffolds_server_variate_is_the_sum_of_the_clients_over_n(engine):
    """All control variates start at zero, so after the rounds c = (1/N) sum_i c_i over every client trained so far
    (each client's changes add up to its c_i), and a client's c_i is finite and non-zero once it has trained."""
    cfg = profile("smoke", algorithm="semifl-scaffold", engine=engine, threshold=0.0, local_epochs=2.0)
    st = _rounds(cfg, 3)
    c, clients = st.method[SERVER_KEY], st.method[KEY]
    assert clients and all(torch.isfinite(v).all() for ci in clients.values() for v in ci.values())
    for k, v in c.items():
        torch.testing.assert_close(v, sum(ci[k] for ci in clients.values()) / cfg.num_clients, rtol=1e-5, atol=1e-7)
    assert any(v.abs().sum() > 0 for v in c.values())
