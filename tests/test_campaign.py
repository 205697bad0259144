"""Campaign queues: --match keeps exactly the runs a lane is given, and names the problem when it keeps none."""
from semifl_core import campaign


def test_match_keeps_only_the_runs_whose_label_contains_it_in_queue_order():
    every = campaign.queue(["horizon", "grid"])
    kept = campaign.queue(["horizon", "grid"], match=["R=300 | SemiFL", "table1: SemiFL | iid"])
    assert [label for label, _ in kept] == [label for label, _ in every
                                            if "R=300 | SemiFL" in label or "table1: SemiFL | iid" in label]
    assert {cfg.rounds for label, cfg in kept if label.startswith("horizon")} == {300}
    assert sorted(cfg.seed for label, cfg in kept if label.startswith("table1")) == [0, 1, 2]


def test_a_match_that_keeps_nothing_is_one_line_and_trains_nothing(tmp_path, capsys):
    assert campaign.main(["horizon", "--match", "R=301", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'R=301'" in err and "horizon" in err
    assert not any(tmp_path.iterdir())


def test_cbafed_own_queue_is_cbafeds_rows_in_its_codes_setting_seeds_0_to_2():
    """The four rows of CBAFed's table with the labeled client drawn as its code draws it, three seeds
    each, none of them a run of the `cbafed` queue (the balanced labeled client)."""
    own, balanced = campaign.queue(["cbafed_own"]), campaign.queue(["cbafed"])
    assert len(own) == 12 and {cfg.cbafed_labeled for _, cfg in own} == {"dirichlet"}
    runs = lambda q: sorted((cfg.algorithm, cfg.seed) for _, cfg in q)  # noqa: E731
    assert runs(own) == runs(balanced)
    assert not {cfg.key() for _, cfg in own} & {cfg.key() for _, cfg in balanced}


def test_part3_long_plan_is_what_the_gate_sends_on_and_what_the_campaign_trains(monkeypatch):
    """The fewer-steps remedies go to `long` at K=2 whatever their gate, a passed remedy at K=2 and Dir(0.1), a failed
    one nowhere, and IID after them a remedy held above Partially Supervised under K=2 at `long`; the campaign queues
    exactly the notebook's plan (so the notebook never waits on untrained runs)."""
    import pandas as pd
    from semifl_core.report import configs as C, label_skew
    gate = pd.DataFrame({"gate": {C.ONE_EPOCH: "failed", C.NO_GLOBAL_MOMENTUM: "passed (final)",
                                  C.FEDVLS: "passed (mechanism)", C.FROZEN_HEAD: "not run"}})
    plan = dict(label_skew.part3_long_plan(gate))
    assert plan == {C.ONE_EPOCH: (C.SKEW_PARTITION,), C.NO_GLOBAL_MOMENTUM: ("non-iid-l-2", "dir-0.1"),
                    C.FEDVLS: ("non-iid-l-2", "dir-0.1")}
    monkeypatch.setattr(label_skew, "committed_part3_gate", lambda *a, **k: gate)
    # at `long`, FedVLS's loss held above Partially Supervised under K=2: the rule sends it on to IID as well
    k2 = label_skew.PART3_NAMES[C.SKEW_PARTITION]
    long_table = pd.DataFrame([(C.FEDVLS, k2, "held", "within noise"), (C.ONE_EPOCH, k2, "within noise", "held")],
                              columns=["remedy", "partition", "vs Partially Supervised", "vs SemiFL"]
                              ).set_index(["remedy", "partition"])
    monkeypatch.setattr(label_skew, "committed_part3_long_table", lambda *a, **k: long_table)
    queued = {cfg.key() for _, cfg in campaign.queue(["label_skew_part3_long"])}
    # and the remedy the seed plan's reading sent to IID on 2026-11-29 keeps its IID runs (label_skew.PART3_IID_SENT)
    iid = [(r, ("iid",)) for r in (C.FEDVLS, *label_skew.PART3_IID_SENT)]
    asked = {cfg.replace(seed=s).key() for r, parts in [*plan.items(), *iid] for s in (0, 1, 2)
             for cfg in C.label_skew_long_configs("long", "fashionmnist", 100, r, parts).values()}
    assert queued == asked and len(queued) == 21
