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
