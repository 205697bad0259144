"""The report's rules: verdicts by the seeds' spread, the gap closed seed by seed, the profile-sizing rule, and
rendering from the results store alone (SEMIFL_NO_TRAIN)."""
import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from semifl_core import report
from semifl_core.report import paper
from semifl_core.report.claims import INTERVAL
from semifl_core.config import TRAIN_SIZE, profile
from semifl_core.methods import METHODS, SEMIFL

from notebook_code import load


@pytest.mark.parametrize("a, b, want", [
    ([80, 81, 82], [70, 71, 72], "held"),            # Welch: 10 apart, interval about +/- 2.3
    ([70, 71, 72], [80, 81, 82], "not held"),
    ([80, 82, 84], [79, 80, 81], "within noise"),    # 2 apart, interval about +/- 5.6
    ([80, 82, 84], [76, 77, 78], "held"),            # 5 apart, interval about +/- 4.2
    ([80, 81], [70, 71], "fewer than three seeds: no verdict"),
    ([], [70, 71], "not run"),
])
def test_above_without_seeds_is_welch(a, b, want):
    v = report.above(a, b)
    assert v == want
    assert (v.test == "Welch t") == (want in ("held", "not held", "within noise"))


def test_at_least_and_every():
    assert report.at_least([0.6, 0.65, 0.7], 0.5) == "held"         # one-sample t: +0.15 [+0.03, +0.27]
    assert report.at_least([0.3, 0.35, 0.4], 0.5) == "not held"
    assert report.at_least([0.3, 0.5, 0.7], 0.5) == "within noise"
    assert report.every(["held", "held"]) == "held"
    assert report.every(["held", "not held", "not run"]) == "not held"
    assert report.every(["held", "not run"]) == "not all run"
    assert report.every(["held", "within noise"]) == "within noise"
    # the combined verdict shows the deciding case's interval: the weakest of the held ones
    strong, weak = report.above([80, 81, 82], [70, 71, 72]), report.above([80, 82, 84], [76, 77, 78])
    both = report.every([strong, weak])
    assert both == "held" and both.low == weak.low and "weakest of 2" in both.interval()


def test_mean_std_says_not_run_for_no_values_and_na_for_undefined():
    assert report.mean_std([]) == "not run"
    assert report.mean_std([float("nan")]) == "n/a"
    assert report.mean_std([70.0]) == "70.0 (n=1)"
    assert report.mean_std([70.0, 72.0]) == "71.0 (1.0) n=2"


def _rows(method, accs, partition="iid"):
    return [dict(method=method, dataset="fashionmnist", num_supervised=100, partition=partition, seed=s,
                 final_acc=a, best_acc=a) for s, a in accs.items()]


def test_gap_closed_pairs_each_seed_with_its_own_baselines():
    # SemiFL has seeds 0 and 2 only: seed 2 must meet seed 2's baselines, not seed 1's
    df = pd.DataFrame(_rows("SemiFL", {0: 80.0, 2: 85.0}) + _rows("Partially Supervised", {0: 70.0, 1: 0.0, 2: 75.0})
                      + _rows("Fully Supervised", {0: 90.0, 1: 50.0, 2: 95.0}))
    iid = report.gap_table(df, "fashionmnist", 100).set_index("partition").loc["IID"]
    assert iid["SemiFL - Partially, final round"] == "10.0 (0.0) n=2"
    assert iid["gap closed (%), final round"] == "50.0 (0.0) n=2"
    assert iid["SemiFL, final round"] == "82.5 (2.5) n=2"


def test_the_sizing_rule_reproduces_the_small_profile():
    """docs/profiles.md: E_F = 10 epochs (batch 10) gives R = 30 rounds; N_S = the largest N_S whose
    Fully - Partially Supervised gap is at least 15 points."""
    scale = load("scale")
    cfg = report.make("small", "fashionmnist", 100)
    assert scale["rounds_rule"](cfg, 10, TRAIN_SIZE["fashionmnist"]) == 30 == cfg.rounds
    assert scale["rounds_rule"](cfg, 20, TRAIN_SIZE["fashionmnist"]) == 50
    fsl = pd.DataFrame({"label": ["N_S=100 | Fully Supervised"] * 2, "final_acc": [87.0, 87.6], "num_supervised": 100})
    psl = pd.DataFrame({"label": "x | Partially Supervised", "num_supervised": [40, 40, 100, 100, 250, 250],
                        "final_acc": [56.0, 56.2, 69.0, 70.4, 76.8, 77.0]})
    table, ns = scale["ns_rule"](pd.concat([fsl, psl], ignore_index=True))
    assert ns == 100 and list(table.gap) == [31.2, 17.6, 10.4]
    sizing = pd.DataFrame({"label": [f"batch 10, {e} epochs" for e in (5, 5, 10, 10, 20, 20)],
                           "final_acc": [86.84, 86.33, 87.36, 87.29, 88.03, 87.62]})
    plateau, epochs = scale["fsl_plateau"](sizing, 10)
    assert epochs == 10 and list(plateau["gain of doubling"].iloc[:2]) == [0.74, 0.5]


def test_without_training_missing_runs_are_left_out_and_named(tmp_path, monkeypatch, capsys):
    cfg = profile("smoke", rounds=1)
    report.run_all({"done": cfg}, [0], tmp_path, device="cpu", workers=1)          # trains one run
    assert "1 of 1 runs are not in" in capsys.readouterr().out                     # said before training
    monkeypatch.setenv("SEMIFL_NO_TRAIN", "1")
    df = report.run_all({"done": cfg, "missing": cfg.replace(local_epochs=2.0)}, [0, 1], tmp_path, device="cpu")
    assert list(zip(df.label, df.seed)) == [("done", 0)] and df.reused.all()
    out = capsys.readouterr().out
    assert "3 of 4 runs are not in" in out and "missing (seed 1)" in out and "done (seed 1)" in out
    empty = report.run_all({"missing": cfg.replace(local_epochs=2.0)}, [0], tmp_path, device="cpu")
    assert empty.empty and list(empty.columns) == report.COLUMNS
    # the store-only reader: the same table, and not a line printed (a plan read from the store)
    capsys.readouterr()
    quiet = report.stored_runs({"done": cfg, "missing": cfg.replace(local_epochs=2.0)}, [0, 1], tmp_path)
    assert capsys.readouterr().out == ""
    pd.testing.assert_frame_equal(quiet, df)
    assert report.stored_runs({"missing": cfg.replace(local_epochs=2.0)}, [0], tmp_path).columns.tolist() == \
        report.COLUMNS


def test_the_time_estimate_takes_the_closest_committed_rate_of_runs_of_the_same_size():
    """A run to train is priced at the store's minutes per round of runs of its size (results.SIZE_FIELDS): the same
    method and N_S, else the same method, else SemiFL; runs of another size (the small profile's for a smoke run), or
    an empty store, give no number, not a wrong one."""
    from semifl_core.results import SIZE_FIELDS
    size = tuple(getattr(profile("smoke"), f) for f in SIZE_FIELDS)
    other = tuple(getattr(profile("small"), f) for f in SIZE_FIELDS)
    per = {("semifl", 100, size): 0.5, ("semifl", 40, size): 0.2, ("fedavg-fixmatch", 100, size): 1.0,
           ("partially-supervised", 40, other): 9.0}
    cfgs = [profile("smoke", algorithm="semifl", num_supervised=40, rounds=10),                 # 0.2 x 10
            profile("smoke", algorithm="fedavg-fixmatch", num_supervised=250, rounds=4),        # 1.0 x 4
            profile("smoke", algorithm="partially-supervised", num_supervised=40, rounds=2)]    # SemiFL's 0.2 x 2
    assert report.estimate_minutes(cfgs, per) == pytest.approx(2 + 4 + 0.4)
    assert np.isnan(report.estimate_minutes(cfgs, {}))
    assert np.isnan(report.estimate_minutes([profile("small")], per))   # no run of its size: no number


def test_split_table_names_columns_by_split_and_needs_two_splits_for_a_range():
    splits = pd.DataFrame({"num_supervised": [40] * 3,
                           "label": ["SemiFL | split 3", "SemiFL | split 0", "Partially Supervised | split 1"],
                           "final_acc": [60.0, 50.0, 55.0]})
    t = load("diagnosis")["split_table"](splits).set_index("method")
    assert t.loc["SemiFL", "split 0"] == 50.0 and t.loc["SemiFL", "split 3"] == 60.0   # not by position
    assert t.loc["SemiFL", "range"] == 10.0
    assert t.loc["Partially Supervised", "range"] == "n/a"                             # one split: no spread


def test_feddure_length_table_and_claims_read_each_length_from_its_own_runs():
    cfgs = report.feddure_length_configs("small", "fashionmnist")
    assert {c.rounds for c in cfgs.values()} == {200}
    nb = load("feddure_table1")

    def frame(rounds, fd, star):
        return pd.DataFrame([{"row": row, "setting": "(DIR, DIR)", "seed": s, "rounds": rounds, "final_acc": v}
                             for row, vals in (("FedDure (paper)", fd), ("FedAvg* (labeled only)", star))
                             for s, v in enumerate(vals)])
    short, long = frame(50, [29, 30, 28], [50, 52, 48]), frame(200, [70, 71, 72], [60, 61, 62])
    t = nb["feddure_length_table"](short, long, cfgs).set_index("method")
    assert t.loc["FedDure (paper)", "50 rounds"].startswith("29.0") and t.loc["FedDure (paper)", "200 rounds"] \
        .startswith("71.0") and t.loc["FedAvg* (labeled only)", "200 rounds"].startswith("61.0")
    assert t.loc["FedDure (paper)", "F-reg steps per client, 200 rounds"] == "50"
    assert t.loc["FedAvg* (labeled only)", "F-reg steps per client, 200 rounds"] == "-"
    claims = nb["feddure_claims"](short, long=long).set_index("claim")
    assert claims.loc["FedDure beats FedAvg* under (DIR, DIR) at 200 rounds (4x the profile's)", "verdict"] == "held"
    assert claims.loc["(ours) FedAvg* (labeled only) under (DIR, DIR): 200 rounds above 50 rounds", "verdict"] == "held"
    none = nb["feddure_claims"](short, long=long.iloc[:0]).set_index("claim")
    assert (none.loc[none.index.str.contains("200 rounds"), "verdict"] == "not run").all()


def test_feddure_released_table_takes_each_seeds_last_round_and_leaves_out_rows_with_no_run():
    nb = load("feddure_table1")
    released = pd.DataFrame({"seed": [0, 0, 1, 1], "rounds": 200, "round": [200, 100, 100, 200],
                             "test_acc": [40.0, 99.0, 99.0, 50.0]})    # rows out of order: the last round counts
    long = pd.DataFrame([{"row": row, "setting": "(DIR, DIR)", "seed": s, "final_acc": v}
                         for row, vals in (("FedDure (paper)", [30, 32, 31]), ("FedAvg* (labeled only)", [60, 62]))
                         for s, v in enumerate(vals)])
    t = nb["feddure_released_table"](long, released).set_index("row")
    assert list(t.columns) == ["seed 0", "seed 1", "mean"]               # the released code's seeds only
    assert t.iloc[0]["seed 0"] == "40.0" and t.iloc[0]["mean"].startswith("45.0")
    assert t.loc["FedDure (paper), ours", "mean"].startswith("31.0")       # seeds 0-1 of ours, not seed 2
    assert not any("code" in r and r.endswith("ours") for r in t.index)   # no run of that row: no row

    short = long.assign(final_acc=long.final_acc - 20)
    by_length = nb["feddure_released_tables"](released, {50: short, 200: long})
    assert list(by_length) == [200]                                      # it ran at 200 rounds only: no 50-round table
    assert by_length[200].equals(nb["feddure_released_table"](long, released))


def test_notebook_default_folders_are_the_repositorys_from_any_working_directory(tmp_path, monkeypatch):
    # papermill from the root or from notebooks/ must read and write the clone's results/
    for cwd in (tmp_path, report.REPO / "notebooks"):
        monkeypatch.chdir(cwd)
        assert report.repo_path("results") == report.REPO / "results"
        assert report.repo_path("figures") == report.REPO / "figures"
    assert report.repo_path("results", "elsewhere") == Path("elsewhere")


def test_run_labels_are_the_method_tables_labels():
    """A run labeled with a method's label runs that method (Table 1: 'method | partition'; scale: 'point | method')."""
    ds, n = report.grid("smoke")[0]
    for label, cfg in report.table1_configs("smoke", ds, n).items():
        assert label.split(" | ")[0] == METHODS[cfg.algorithm].label
    for label, cfg in report.scale_configs("smoke", ds, n).items():
        assert label.split(" | ")[1] == METHODS[cfg.algorithm].label


def test_paper_numbers_are_keyed_by_method_name():
    assert paper.table1(SEMIFL, "iid", "cifar10", 250) == "88.2(0.3)"


def test_report_modules_import_in_one_direction():
    """runs -> configs -> tables / figures -> claims / confirmation -> readme (paper and rule below all, and
    notebook_files, which imports none of them): no module imports one above it."""
    layer = {"paper": 0, "rule": 0, "notebook_files": 0, "runs": 1, "configs": 2, "tables": 3,
             "figures": 4, "claims": 4, "confirmation": 4, "readme": 5}
    folder = Path(report.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.py")) == sorted(["__init__", *layer])
    for name, level in layer.items():
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else [a.name for a in node.names]
                for target in targets:
                    assert layer[target] < level, f"{name} imports {target}"


def test_a_figure_saved_twice_is_byte_identical(tmp_path):
    """A re-render of unchanged results must not rewrite figures/ (a pdf carries no creation date)."""
    import time

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from semifl_core.report.figures import save_figure

    def draw(d):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3])
        save_figure(fig, d, "f")
        plt.close(fig)
        return {ext: (d / f"f.{ext}").read_bytes() for ext in ("png", "pdf")}
    first = draw(tmp_path / "a")
    time.sleep(1.1)   # a creation date has one-second resolution
    assert draw(tmp_path / "b") == first


def test_the_long_profile_claims_judge_each_partition_by_its_final_round():
    """The training-length study's Table 1 at `long`: per partition, SemiFL's final round against Partially
    Supervised's (a centralized baseline: one run for every partition); a partition without runs is 'not run'."""
    from semifl_core.methods import PARTIALLY_SUPERVISED, SEMIFL
    from semifl_core.report.configs import label_of, longer_profile
    assert longer_profile("small") == "long" and longer_profile("smoke") == "smoke"
    rows = []

    def add(method, part, finals, best):
        rows.extend(dict(label=label_of(method), method=label_of(method), dataset="fashionmnist", num_supervised=100,
                         partition=part, seed=s, final_acc=f, best_acc=best) for s, f in enumerate(finals))
    add(PARTIALLY_SUPERVISED, "iid", [70, 71, 72], 90)
    add(SEMIFL, "iid", [80, 81, 82], 60)            # above at the final round, below at the best: final decides
    add(SEMIFL, "non-iid-l-2", [60, 61, 62], 95)    # below
    add(SEMIFL, "dir-0.3", [71, 72, 73], 95)        # 1 point above, inside the two spreads
    no_horizons = pd.DataFrame(columns=["R", "seed", "method", "final_acc", "path"])
    horizon_claims = load("horizon")["horizon_claims"]
    c = horizon_claims(no_horizons, (), pd.DataFrame(rows), ("fashionmnist", 100)).set_index("claim").verdict
    assert c.to_dict() == {"[long, IID] SemiFL beats Partially Supervised": "held",
                           "[long, Non-IID, K=2] SemiFL beats Partially Supervised": "not held",
                           "[long, Non-IID, Dir(0.3)] SemiFL beats Partially Supervised": "within noise",
                           "[long, Non-IID, Dir(0.1)] SemiFL beats Partially Supervised": "not run"}


def test_table2_shows_each_variants_final_round_beside_its_best_and_judges_the_final_round():
    """What the paper's best-round Table 2 hides: each variant's final round read from final_acc (not best_acc) beside
    its best, per partition; its claims are judged at the final round (the best is picked on the test set), and none
    holds by construction (no 'final below best')."""
    from semifl_core.report.configs import TABLE2_VARIANTS
    table2 = load("table2")
    ft_only = TABLE2_VARIANTS[(True, False)]
    rows = []
    for name in TABLE2_VARIANTS.values():
        for part in ("iid", "non-iid-l-2"):
            collapse = name == ft_only and part == "non-iid-l-2"
            rows += [dict(method=name, dataset="fashionmnist", num_supervised=100, partition=part, seed=s,
                          best_acc=70.0 + s, final_acc=(10.0 + s) if collapse else 69.0 + s) for s in range(3)]
    df = pd.DataFrame(rows)
    t = table2["table2_ends"](df, "fashionmnist", 100).set_index("method")
    assert t.loc[ft_only, "Non-IID, K=2: best round"] == "71.0 (0.8) n=3"
    assert t.loc[ft_only, "Non-IID, K=2: final round"] == "11.0 (0.8) n=3"
    assert t.loc[ft_only, "IID: final round"] == "70.0 (0.8) n=3"
    c = table2["table2_claims"](df, [("fashionmnist", 100)]).set_index("claim").verdict
    assert c["Non-IID, K=2: fine-tuning alone beats global pseudo-labels alone (final round)"] == "not held"
    assert c["IID: fine-tuning alone beats global pseudo-labels alone (final round)"] == "within noise"  # equal finals
    assert not any("best round" in claim for claim in c.index)


def test_table3_judges_server_only_statistics_paired_by_seed_and_never_holds_an_interval_through_zero():
    """Table 3's 'server only not worse than server and clients': both arms share each seed's labeled set, so the
    claim is paired (the seeds' spread cancels); an interval that holds zero reads within noise (rule.not_worse)."""
    def runs(server, all_):
        return pd.DataFrame([dict(dataset="fashionmnist", num_supervised=100, partition=part, sbn_source=src, seed=s,
                                  final_acc=v, best_acc=90 - v, draw="d") for part in ("iid", "non-iid-l-2")
                             for src, vals in (("server", server), ("all", all_)) for s, v in enumerate(vals)])
    table3_claims = load("table3")["table3_claims"]
    claim = "IID: sBN statistics from the server only are not worse than from server and clients (final round)"
    # a seed-wide spread of 4 points, server 0.9-1.1 points below all at every seed: paired, that is a loss
    c = table3_claims(runs([66.0, 70.1, 74.0], [67.0, 71.0, 75.1]), [("fashionmnist", 100)]).set_index("claim")
    assert c.loc[claim, "verdict"] == "not held" and "paired t" in c.loc[claim, INTERVAL]
    # server 0.5 below at one seed, 0.6 above at another: no loss found, within noise (never 'held')
    c = table3_claims(runs([66.5, 71.6, 75.0], [67.0, 71.0, 75.1]), [("fashionmnist", 100)]).set_index("claim")
    assert c.loc[claim, "verdict"] == "within noise"


# per seed: a spread of about 10 points that both arms share (the seed's labeled set), and a steady lead of 1.0
SHARED, LEAD = [60.0, 70.0, 80.0], [1.0, 1.1, 0.9]


def test_scale_pairs_the_gains_at_one_n_s_and_not_across_two():
    """Scale's 'the gain grows with more rounds': both points train on the seed's labeled set (one N_S), so the gains
    are paired (a lead of 1.0 each seed is held; Welch's interval, which ignores the seed, holds zero); 'more labels'
    compares two N_S (two labeled sets): Welch."""
    from semifl_core.report.configs import SCALE_NS
    from semifl_core.methods import FULLY_SUPERVISED, PARTIALLY_SUPERVISED
    from semifl_core.report.tables import label_of
    psl = [62.0, 71.0, 79.0]                              # gains at the profile: -2, -1, +1
    rows = []
    for point, semi in (("N_S=100", SHARED), ("rounds=150", [x + d for x, d in zip(SHARED, LEAD)]),
                        (f"N_S={SCALE_NS[0]}", SHARED), (f"N_S={SCALE_NS[-1]}", [x + d for x, d in zip(SHARED, LEAD)])):
        rows += [dict(label=f"{point} | {label_of(m)}", seed=s, final_acc=v[s]) for s in range(3)
                 for m, v in ((SEMIFL, semi), (PARTIALLY_SUPERVISED, psl), (FULLY_SUPERVISED, [90.0] * 3))]
    scale = load("scale")
    t = scale["scale_table"](pd.DataFrame(rows))
    c = scale["scale_claims"](t, report.profile("small", "fashionmnist")).set_index("claim")
    rounds = c.loc["The gain SemiFL - Partially Supervised grows with more rounds (150 vs 30)"]
    assert rounds.verdict == "held" and "paired t" in rounds[INTERVAL]
    labels = c.loc[[k for k in c.index if "more labels" in k][0]]
    assert labels.verdict == "within noise" and "Welch t" in labels[INTERVAL]
    assert "paired t" in c.loc["At the profile (N_S=100, IID) SemiFL is above Partially Supervised", INTERVAL]


def test_learning_curves_pair_a_runs_last_round_with_its_first():
    """'SemiFL's accuracy rises over training': the last and first rounds of the same runs, paired by seed."""
    from semifl_core.methods import PARTIALLY_SUPERVISED
    from semifl_core.report.tables import label_of
    base = dict(dataset="fashionmnist", num_supervised=100)
    c = pd.DataFrame([dict(base, method=label_of(SEMIFL), partition=p, seed=s, round=r,
                           test_acc=SHARED[s] + LEAD[s] * (r == 30))
                      for p in paper.PARTITIONS for s in range(3) for r in (1, 30)])
    df = pd.DataFrame([dict(base, method=m, partition=p, seed=s, final_acc=SHARED[s], best_acc=SHARED[s])
                       for m in (label_of(SEMIFL), label_of(PARTIALLY_SUPERVISED)) for p in paper.PARTITIONS
                       for s in range(3)])
    learning_curve_claims = load("learning_curves")["learning_curve_claims"]
    claims = learning_curve_claims(df, c, [("fashionmnist", 100)]).set_index("claim")
    rises = claims.loc["IID: SemiFL's accuracy rises over training (last round above first)"]
    assert rises.verdict == "held" and "paired t" in rises[INTERVAL]


def test_the_label_skew_mechanism_pairs_two_rows_at_one_seed_and_draw():
    """A remedy's drop against the fixed rule's: the same seeds and labeled set, so paired (a steady 1-point smaller
    drop is held); without a known draw the rule falls back to Welch (within noise here)."""
    from types import SimpleNamespace

    from notebook_code import load
    skew = SimpleNamespace(**load("label_skew"))
    means = pd.DataFrame([dict(row=row, seed=s, draw="d", skew_dacc_unheld=-(SHARED[s] - 50) + d)
                          for row, shift in ((skew.SEMIFL_FIXED, 0.0), ("remedy", 1.0)) for s in range(3)
                          for d in [shift * LEAD[s]]])
    fx, rem = (skew.measure_values(means, r, "skew_dacc_unheld", -1.0) for r in (skew.SEMIFL_FIXED, "remedy"))
    assert report.rule.above(fx, rem) == "held" and report.rule.above(fx, rem).test == "paired t"
    no_draw = means.drop(columns="draw")
    fx, rem = (skew.measure_values(no_draw, r, "skew_dacc_unheld", -1.0) for r in (skew.SEMIFL_FIXED, "remedy"))
    assert report.rule.above(fx, rem) == "within noise" and report.rule.above(fx, rem).test == "Welch t"


def test_say_wraps_printed_lines_at_separators_and_spaces(capsys):
    """report.say keeps a printed line inside JupyterLab's output area without breaking a word: at ' | ' first."""
    line = ("profile='small' | data: Fashion-MNIST N_S=100 | model=cnn, M=100, C=0.1, T=30, E=5.0 | device: cpu "
            "(x86_64) | seeds: [0, 1, 2]")
    report.say(line + "\n" + "word " * 40)
    out = capsys.readouterr().out.rstrip("\n").split("\n")
    assert out[:2] == [line[:line.index(" | device")] + " |", "device: cpu (x86_64) | seeds: [0, 1, 2]"]
    assert all(len(x) <= report.runs.PRINT_WIDTH for x in out) and set(" ".join(out[2:]).split()) == {"word"}


def test_a_run_that_is_not_the_committed_study_leaves_the_committed_figures_and_claims(tmp_path, capsys, monkeypatch):
    """papermill -p seed 2 (or another profile, rounds, results_dir): the study changed, so a figure is shown but not
    saved over figures/, and the README's claims file is not rewritten; figures_dir and device keep the study."""
    import matplotlib.pyplot as plt
    from semifl_core.report import confirmation, figures
    from semifl_core.report.runs import INJECTED, check_injected, study_changes
    cell = "profile = 'small'\nseed = None\nseeds = [0, 1, 2]\nfigures_dir = None\ndevice = 'auto'\n"
    check_injected(["", cell, f"{INJECTED}seeds = [0, 1, 2]\nfigures_dir = '/tmp/x'\ndevice = 'cpu'\n"])
    assert study_changes() == []                       # the same values, or where it draws and runs: the same study
    check_injected(["", cell, f"{INJECTED}seed = 2\nprofile = 'small'\n"])
    assert study_changes() == ["seed=2"]
    # the repository's folders, here in tmp_path: a guard that failed would write there
    monkeypatch.setattr(figures, "repo_path", lambda kind, given=None: Path(given) if given else tmp_path / kind)
    monkeypatch.setattr(confirmation, "claims_file", lambda name, given=None: tmp_path / "claims" / f"{name}.csv")
    confirmation.frame(["SemiFL above Partially Supervised, R=30, IID"], save_as="table1")
    report.save_figure(plt.figure(), None, "figure2")
    out = capsys.readouterr().out
    assert "results/claims/table1.csv: kept as committed" in out and "figure2: shown, not saved" in out
    assert not (tmp_path / "figures").exists() and not (tmp_path / "claims").exists()
    report.save_figure(plt.figure(), tmp_path / "mine", "figure2")   # figures_dir given: saved there
    assert (tmp_path / "mine" / "figure2.png").exists()
    check_injected([""])
    assert study_changes() == []


def test_the_runs_summary_names_federated_runs_whose_clients_never_trained(tmp_path):
    """A 3-round run at tau 0.95 may pass no client image: its clients trained on nothing, and the summary says so;
    a centralized run (no clients) and a run whose clients trained in some round are not named."""
    rows = []
    for name, algorithm, trained in (("idle", "semifl", [0, 0, 0]), ("busy", "semifl", [0, 3, 5]),
                                     ("central", "partially-supervised", [0, 0, 0])):
        (tmp_path / name).mkdir()
        pd.DataFrame({"round": [1, 2, 3], "clients_trained": trained}).to_csv(tmp_path / name / "metrics.csv")
        rows.append(dict(label=name, seed=7, algorithm=algorithm, path=str(tmp_path / name), reused=True))
    text = report.runs_summary(pd.DataFrame(rows))
    assert text == ("3 runs: 0 new, 3 reused from the results store\n1 federated runs in which no client trained in "
                    "any round (no image passed the threshold): idle (seed 7)")
