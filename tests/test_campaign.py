"""Campaign queues: a notebook's queue is exactly the runs it asks for that the store lacks (and finding them trains
nothing); --match keeps exactly the runs a lane is given, and names the problem when it keeps none."""
import pandas as pd
import pytest

from semifl_core import campaign
from semifl_core.config import ConfigError
from semifl_core.report import configs as C

from notebook_code import load


def test_a_notebooks_queue_is_the_runs_it_asks_for_that_the_store_lacks(tmp_path):
    asked = {cfg.replace(seed=s).key() for cfg in C.table3_configs("small", "fashionmnist", 100).values()
             for s in (0, 1, 2)}
    queued = campaign.queue(["table3"], results_dir=tmp_path)
    assert {cfg.key() for _, cfg in queued} == asked and len(queued) == len(asked)
    assert all(label.startswith("table3: sBN ") for label, _ in queued)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]      # asking trained nothing
    assert campaign.queue(["table3"]) == []                          # the committed store holds all of them


def test_an_unknown_queue_is_one_line_naming_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"queue 'tabel3': allowed are .*confirmation.*table3"):
        campaign.queue(["tabel3"])


def test_match_keeps_only_the_runs_whose_label_contains_it_in_queue_order():
    every = campaign.queue(["confirmation"])
    kept = campaign.queue(["confirmation"], match=["R=300", "(seed 100)"])
    assert [label for label, _ in kept] == [label for label, _ in every if "R=300" in label or "(seed 100)" in label]
    assert {cfg.rounds for label, cfg in kept if "(seed 100)" not in label} == {300}


def test_a_match_that_keeps_nothing_is_one_line_and_trains_nothing(tmp_path, capsys):
    assert campaign.main(["confirmation", "--match", "R=301", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'R=301'" in err and "confirmation" in err
    assert not any(tmp_path.iterdir())


def test_part3_long_plan_is_what_the_gate_sends_on():
    """The fewer-steps remedies go to `long` at K=2 whatever their gate, a passed remedy at K=2 and Dir(0.1), a failed
    one nowhere (the notebook asks for this plan, so its campaign queues it)."""
    gate = pd.DataFrame({"gate": {C.ONE_EPOCH: "failed", C.NO_GLOBAL_MOMENTUM: "passed (final)",
                                  C.FEDVLS: "passed (mechanism)", C.FROZEN_HEAD: "not run"}})
    assert dict(load("label_skew")["part3_long_plan"](gate)) == {
        C.ONE_EPOCH: (C.SKEW_PARTITION,), C.NO_GLOBAL_MOMENTUM: ("non-iid-l-2", "dir-0.1"),
        C.FEDVLS: ("non-iid-l-2", "dir-0.1")}
