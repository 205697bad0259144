"""docs/adding_a_method.md, run: its first Python block is written to a module on PYTHONPATH and named in
SEMIFL_METHODS (as the page tells a reader to), the others run in order in one namespace, on the smoke profile instead
of `small` (the one line that names the profile is swapped, and must be there). So the page cannot go stale: the
method it builds registers, trains in both engines and gets its row in Table 1."""
import re
import sys
from pathlib import Path

import pytest

from semifl_core.methods import METHODS

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_a_method.md"
SETTING = 'PROFILE, DATASET, SEEDS, RESULTS = "small", "fashionmnist", [0, 1, 2], None'


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """The page's module on the path and in SEMIFL_METHODS (for the workers a grid starts too); unregistered after."""
    (tmp_path / "semifl_prox.py").write_text(blocks()[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[1]}")
    monkeypatch.setenv("SEMIFL_METHODS", "semifl_prox")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    METHODS.pop("semifl-prox", None)
    for name in ("semifl-dyn", "semifl-adam", "semifl-scaffold"):
        METHODS.pop(name, None)
    sys.modules.pop("semifl_prox", None)


def test_the_page_builds_trains_and_tabulates_semifl_prox(plugin_dir, monkeypatch, capsys):
    from semifl_core.methods import load_plugins
    load_plugins()
    assert "semifl-prox" in METHODS
    code = "\n".join(blocks()[1:])
    assert SETTING in code
    code = code.replace(SETTING, f'PROFILE, DATASET, SEEDS, RESULTS = "smoke", "synthetic", [0], "{plugin_dir}/res"')
    monkeypatch.setenv("SEMIFL_NO_TRAIN", "1")   # the page sets it in step 5: recorded here, so it is undone after
    monkeypatch.delenv("SEMIFL_NO_TRAIN")
    exec(compile(code, str(DOC), "exec"), {})
    monkeypatch.delenv("SEMIFL_NO_TRAIN", raising=False)
    out = capsys.readouterr().out
    assert "prox_mu=0.1: a field of semifl-prox; semifl declares fedrs_alpha, frozen_head, ntd_beta" in out
    assert "sequential final test accuracy" in out and "vectorized final test accuracy" in out
    assert "SemiFL-Dyn sequential final test accuracy" in out and "SemiFL-Dyn vectorized final test accuracy" in out
    row = [ln for ln in out.splitlines() if "SemiFL-Prox" in ln]
    assert len(row) == 4 and all(re.search(r"\d+\.\d \(", ln) for ln in row)   # its four partitions, each a mean
    # the proximal term reached the clients' steps: the same run without it (SemiFL, mu's effect gone) differs
    import pandas as pd
    from semifl_core.config import profile
    from semifl_core.run import run
    cfg = profile("smoke", "synthetic", algorithm="semifl-prox", prox_mu=0.1, engine="sequential")
    prox = pd.read_csv(Path(run(cfg, "results-sequential", device="cpu", progress=False)["path"]) / "metrics.csv")
    plain = pd.read_csv(Path(run(cfg.replace(algorithm="semifl"), "plain", device="cpu", progress=False)["path"])
                        / "metrics.csv")
    assert (prox.client_samples > 0).all() and prox.client_loss.iloc[-1] != plain.client_loss.iloc[-1]


SWITCHES = [dict(frozen_head=True), dict(pseudo_label_rule="client-adaptive"), dict(pseudo_label_rule="aligned"),
            dict(fedrs_alpha=0.5), dict(ntd_beta=1.0), dict(vls_lambda=1.0), dict(rng_streams="client")]


def test_the_pages_variant_keeps_every_semifl_switch(plugin_dir):
    """The page's SemiFL-Prox at mu = 0 is SemiFL's loss: with each SemiFL switch on, two of its rounds train exactly
    SemiFL's two rounds with that switch (the switch acted on the variant as on SemiFL), and not its rounds without
    the switch (the switch took effect)."""
    import torch

    from semifl_core.config import profile
    from semifl_core.data import synthetic
    from semifl_core.methods import load_plugins
    from semifl_core.run import Experiment
    load_plugins()
    data = synthetic()

    def two_rounds(**kw):
        exp = Experiment(profile("smoke", **kw), data, torch.device("cpu"))
        st = exp.new_state()
        rows = [exp.round(st, r) for r in range(2)]
        return {k: v.detach().clone() for k, v in st.model.state_dict().items()}, rows

    def same(a, b):
        return a[0].keys() == b[0].keys() and all(torch.equal(a[0][k], b[0][k]) for k in a[0])

    plain = two_rounds(algorithm="semifl-prox", prox_mu=0.0)
    for switch in SWITCHES:
        variant = two_rounds(algorithm="semifl-prox", prox_mu=0.0, **switch)
        assert same(variant, two_rounds(algorithm="semifl", **switch)), switch
        assert not same(variant, plain), switch
