"""How the notebooks' tables and figures show results: CBAFed's best round taken after the warm-up, no NaN in a table,
the gap closed in percent everywhere, one table style (text left, numbers right, display names), reference lines and
clipped bands in the figures, and a takeaway that says what the claims table says."""
import matplotlib
import numpy as np
import pandas as pd
import pytest

from semifl_core import report
from semifl_core.methods import (CBAFED, CBAFED_METHODS, FEDAVG_FIXMATCH, FULLY_SUPERVISED, PARTIALLY_SUPERVISED,
                                 SEMIFL)
from semifl_core.report.configs import label_of

from notebook_code import load

matplotlib.use("Agg")


def _run(tmp_path, name, accs):
    """A run's folder whose metrics.csv has test accuracy `accs` at rounds 1, 2, ..."""
    d = tmp_path / name
    d.mkdir()
    pd.DataFrame({"round": np.arange(1, len(accs) + 1), "test_acc": accs}).to_csv(d / "metrics.csv", index=False)
    return str(d)


def test_cbafed_best_round_is_taken_after_the_warm_up(tmp_path):
    """In the warm-up only the labeled client trains, the same for every row: a row whose accuracy peaks there must
    not report the warm-up's peak as its best (CBAFed and FedAvg + FixMatch both showed the warm-up's
    78.2)."""
    nb = load("cbafed_table1")
    cfgs = report.cbafed_configs("small", "fashionmnist", rounds=4)          # 2 warm-up + 2 federated rounds
    assert cfgs[label_of(CBAFED)].cbafed_warmup == 2
    rows = []
    for m in CBAFED_METHODS:
        for s in range(2):
            accs = [90.0 + s, 91.0 + s, 50.0 + s, 60.0 + s]     # the best of all rounds is in the warm-up
            rows.append(dict(label=label_of(m), seed=s, final_acc=accs[-1], best_acc=max(accs),
                             path=_run(tmp_path, f"{m}-{s}", accs)))
    t = nb["cbafed_table"](pd.DataFrame(rows), cfgs).set_index("method")
    assert (t[nb["CBAFED_BEST"]] == "60.5 (0.5) n=2").all()
    assert not t.index.str.contains("not run").any()          # the paper-only rows are a table of their own
    assert len(nb["cbafed_paper_only"]()) == 3 and "not run here" in nb["cbafed_paper_only"]().columns[-1]


def test_cbafed_tables_say_how_the_labeled_client_was_drawn(tmp_path):
    """CBAFed's rows in two settings. The table names the labeled client of each (ours balanced,
    theirs a Dirichlet share), and cbafed_labeled_clients counts what the split gives client 0: the balanced client
    client_labels of every class; the Dirichlet client one share of the whole training set (with the nine unlabeled
    shares it is every image once), skewed, and drawn again for every seed."""
    from semifl_core.data import load as load_data
    from semifl_core.partition import make_split
    nb = load("cbafed_table1")
    bal, own = report.cbafed_configs("smoke", "synthetic"), report.cbafed_own_setting_configs("smoke", "synthetic")
    empty = pd.DataFrame(columns=["label", "seed", "final_acc", "path"])
    assert "a balanced labeled client" in nb["cbafed_setting"](empty, bal)
    assert "Dirichlet(0.8)" in nb["cbafed_setting"](empty, own)
    assert nb["CBAFED_PAPER"] in nb["cbafed_table"](empty, bal)   # the paper's column, beside ours
    cfg = next(iter(bal.values()))
    b, o = nb["cbafed_labeled_clients"](bal, [0, 1]), nb["cbafed_labeled_clients"](own, [0, 1])
    classes = b.columns[3:]
    assert len(classes) == 10 and (b[classes] == cfg.client_labels).all().all() and (b["largest class (%)"] == 10).all()
    labels = load_data("synthetic").y_train.numpy()
    for s in (0, 1):
        split = make_split(next(iter(own.values())).replace(seed=s), labels)
        assert o.loc[s, "labeled images"] + sum(len(c) for c in split.clients) == len(labels)
        assert o.loc[s, classes].tolist() == np.bincount(labels[split.labeled[0]], minlength=10).tolist()
    assert (o["largest class (%)"] > 15).all() and o.loc[0, "labeled images"] != o.loc[1, "labeled images"]


def test_cbafed_probe_table_averages_the_right_models_over_seeds(tmp_path):
    """scripts/cbafed_probe.py's CSVs: the labeled client, the unlabeled clients (their mean within a seed, then over
    seeds) and the average are told apart by name; the upper bound trains on true labels (no pseudo-label columns)."""
    nb = load("cbafed_table1")
    for seed, shift in ((0, 0.0), (1, 2.0)):
        rows = [("labeled client", 80 + shift, 82 + shift), ("client 1", 60 + shift, 61), ("client 2", 70 + shift, 71),
                ("average (the global model)", 78 + shift, 79 + shift)]
        for key, ratio, right in (("upper", 1.0, 100.0), ("fixmatch", 0.5, 40.0 + shift)):
            pd.DataFrame([dict(round=21, model=m, weight=0.1, acc=a, acc_clean_bn=b, label_ratio=ratio,
                               pseudo_acc=right) for m, a, b in rows]).to_csv(
                tmp_path / f"cbafed_probe_{key}_seed{seed}.csv", index=False)
    probes = nb["cbafed_probes"](tmp_path)
    up, fm = (nb["cbafed_probe_table"](probes, key).set_index("round").loc[21] for key in ("upper", "fixmatch"))
    assert up["labeled client's model"] == "81.0 (1.0) n=2" and up["... clean BN"] == "83.0 (1.0) n=2"
    assert up["unlabeled clients' models"] == "66.0 (1.0) n=2"      # (60 + 70) / 2, then over seeds
    assert up["average (global model)"] == "79.0 (1.0) n=2" and up["average, clean BN"] == "80.0 (1.0) n=2"
    assert "images passing tau_h (%)" not in up                       # true labels: nothing to pass
    assert fm["images passing tau_h (%)"] == "50.0 (0.0) n=2" and fm["their labels right (%)"] == "41.0 (1.0) n=2"
    assert nb["cbafed_probe_table"](nb["cbafed_probes"](tmp_path / "none"), "upper").empty


def test_long_winners_table_compares_each_winner_with_its_own_partition():
    """The label-skew study's rows of Table 1 at `long`: every configured winner is a row (not run where no run is in),
    judged against Partially Supervised and against SemiFL at its own partition."""
    from semifl_core.report import configs as C
    nb = load("horizon")
    cfgs = C.long_winner_configs("long", "fashionmnist", 100)
    runs = lambda label, accs: [dict(label=label, seed=s, final_acc=a) for s, a in enumerate(accs)]  # noqa: E731
    winners = pd.DataFrame(runs("SemiFL, client-adaptive | iid", [80.0, 81.0, 80.5]))
    long_df = pd.DataFrame(runs(label_of(PARTIALLY_SUPERVISED), [70.0, 71.0, 70.5])
                           + runs("SemiFL | iid", [80.0, 81.0, 80.0])
                           + runs("SemiFL | non-iid-l-2", [60.0, 61.0, 60.0]))
    t = nb["long_winners_table"](winners, cfgs, long_df).set_index(["row", "partition"])
    assert len(t) == len(cfgs)
    ca = t.loc[("SemiFL, client-adaptive", "IID")]
    assert ca["final"] == "80.5 (0.4) n=3" and ca["beats Partially Supervised"] == "held"
    assert ca["beats SemiFL (fixed rule)"] == "within noise" and ca["SemiFL (fixed rule), same partition"] == \
        "80.3 (0.5) n=3"
    k2 = t.loc[("(FL)²", "Non-IID, K=2")]
    assert k2["final"] == "not run" and k2["beats Partially Supervised"] == "not run"
    assert k2["SemiFL (fixed rule), same partition"] == "60.3 (0.5) n=3"      # its own partition's SemiFL
    no_horizons = pd.DataFrame(columns=["R", "seed", "method", "final_acc", "path"])
    c = nb["horizon_claims"](no_horizons, (), winners=nb["long_winners_table"](winners, cfgs, long_df))
    c = c.set_index("claim").verdict                                          # the claims read the table's verdicts
    assert c["[long, IID] SemiFL, client-adaptive beats Partially Supervised"] == "held"
    assert c["[long, Non-IID, K=2] (FL)² beats Partially Supervised"] == "not run" and len(c) == len(cfgs)


def test_table1_keeps_the_paper_only_rows_apart_and_prints_paper_cells_as_ours():
    df = pd.DataFrame(columns=["dataset", "num_supervised", "method", "partition", "seed", "best_acc", "final_acc"])
    ours, only = report.table1(df, "fashionmnist", 100), load("table1")["table1_paper_only"]("fashionmnist", 100)
    assert not ours.method.str.contains("paper only").any() and "Pi-Model" not in set(ours.method)
    assert {"Pi-Model", "FedMatch", "FedRGD"} <= set(only.method)
    paper_col = next(c for c in ours.columns if c.startswith("paper"))
    assert ours.set_index("method").loc[label_of(FULLY_SUPERVISED), paper_col] == "95.3 (0.1) n=4"
    assert ours.set_index("method").loc[label_of(FEDAVG_FIXMATCH), paper_col].eq("-").all()   # no paper row: '-'
    assert "nan" not in report.table_html(ours).lower()
    assert not ours.map(lambda v: "fedavg-" in str(v) or "non-iid" in str(v)).any().any()


def _fig2_rows():
    rows = []
    for s in range(3):
        rows += [dict(pair="Fashion-MNIST, N_S=100", method=label_of(m), partition="iid", seed=s, best_acc=80.0 + s)
                 for m in (FULLY_SUPERVISED, PARTIALLY_SUPERVISED)]     # baselines: one run, no partition of theirs
        rows += [dict(pair="Fashion-MNIST, N_S=100", method=label_of(FEDAVG_FIXMATCH), partition=p, seed=s,
                      best_acc=60.0 + s) for p in ("iid", "non-iid-l-2")]
    return pd.DataFrame(rows)


def test_no_table_shows_nan():
    """figure2's table printed NaN for the baselines under Non-IID K=2 (they have one run, under no partition); a
    missing float anywhere shows as '-' in both the HTML and the text form."""
    t = load("figure2")["figure2_table"](_fig2_rows())
    assert list(t.columns) == ["method", "Non-IID, K=2", "IID"]
    assert not t.isna().any().any() and "nan" not in t.to_string().lower()
    assert (t.set_index("method").loc[label_of(FULLY_SUPERVISED)] == "81.0 (0.8) n=3").all()
    plateau = pd.DataFrame({"epochs": [5, 10], "gain of doubling": [0.74, np.nan]})   # fsl_plateau's last row
    html = report.table_html(plateau)
    assert "nan" not in html.lower() and ">-</td>" in html


def test_gap_closed_is_a_percentage_everywhere():
    assert report.tables.gap_closed(80.0, 70.0, 90.0) == 50.0
    pts = report.tables.paper_gap_points()
    iid = pts.query("dataset == 'CIFAR-10' and num_supervised == 250 and partition == 'iid'").closed.iloc[0]
    assert 80 < iid < 100                                   # the paper's 87 %, not 0.87
    horizon = load("horizon")                               # the training-length study's columns
    assert horizon["GAP_FINAL"].startswith("gap closed (%)") and horizon["GAP_LATE"].startswith("gap closed (%)")
    rows = [dict(label=f"N_S=100 | {label_of(m)}", seed=s, final_acc=a) for s in range(3)
            for m, a in ((SEMIFL, 85.0), (PARTIALLY_SUPERVISED, 70.0), (FULLY_SUPERVISED, 90.0))]
    scale = load("scale")                                   # the scale study's table and claims
    t = scale["scale_table"](pd.DataFrame(rows))
    assert t["gap closed (%)"].iloc[0] == "75.0 (0.0) n=3" and list(t["_closed"].iloc[0]) == [75.0] * 3
    claims = scale["scale_claims"](t.assign(point="N_S=100"), report.profile("small", "fashionmnist"))
    assert claims.verdict.iloc[1] == "held"                    # 75 % is above half of the gap (50, in percent)


def test_one_table_style_text_left_numbers_right_display_names_one_line():
    df = pd.DataFrame({"method": ["fedavg-supervised", "SemiFL"], "partition": ["non-iid-l-2", "iid"],
                       "accuracy": ["87.2 (0.2) n=3", "not run"], "paper": ["95.3 (0.1)", "-"], "n": [3, 0]})
    html = report.table_html(df)
    for code in ("fedavg-supervised", "non-iid-l-2", ">iid<"):
        assert code not in html
    assert "Non-IID, K=2" in html and label_of("fedavg-supervised") in html
    cells = html.split("<td ")[1:6]
    align = [c.split("text-align: ")[1].split(";")[0] for c in cells]
    assert align == ["left", "left", "right", "right", "right"]
    assert all("white-space: nowrap" in c for c in cells)
    heads = html.split("<th ")[1:]                                     # headers wrap: a long name keeps columns narrow
    assert heads and all("white-space: normal" in h for h in heads)
    assert "<th" in html and ">0<" not in html.split("<tbody>")[0]     # no pandas row numbers
    assert report.table_html(df) == html                                 # deterministic (nbval compares it)


def test_takeaway_says_what_the_claims_table_says():
    cl = report.claims.claims([("A beats B", "held", ""), ("C beats D", "not held", ""), ("E", "within noise", ""),
                               ("F", True, "")])
    text = report.takeaway(cl)
    assert "2 held, 1 not held, 1 within noise" in text
    held, rest = text.split("*Not held:*")
    assert "- A beats B" in held and "- F" in held and "- C beats D" in rest.split("*Within")[0]


def _curves():
    rows = []
    for s in range(3):
        for r in range(1, 31):
            rows.append(dict(round=r, seed=s, method=label_of(SEMIFL), partition="iid", test_acc=98.0 + 2 * s))
            if r in (5, 10):    # Fully Supervised: trained 10 epochs, evaluated at 5 and 10
                rows.append(dict(round=r, seed=s, method=label_of(FULLY_SUPERVISED), partition="iid",
                                 test_acc=85.0 + s))
    return pd.DataFrame(rows)


def test_fully_supervised_is_a_reference_line_and_bands_stay_in_bounds():
    import matplotlib.pyplot as plt
    fig = report.lineplot_grid(_curves(), "test_acc", hue="method", col="partition",
                               refs=(label_of(FULLY_SUPERVISED),), ylabel="test accuracy (%)")
    ax = fig.axes[0]
    ref = [ln for ln in ax.lines if ln.get_label().startswith(label_of(FULLY_SUPERVISED))]
    assert len(ref) == 1 and set(ref[0].get_ydata()) == {86.0}                # the final value, all across
    assert list(ref[0].get_xdata()) == [0, 1] and ref[0].get_transform() != ax.transData   # axhline: full width
    assert ax.get_title() == "IID"                                            # display name, not 'iid'
    top = max(p.vertices[:, 1].max() for coll in ax.collections for p in coll.get_paths())
    assert top <= 100.0                                                       # the band 98 +- 1.6 is clipped
    plt.close(fig)


def test_a_dashed_series_is_drawn_dashed_and_on_top_of_the_line_it_lies_on():
    import matplotlib.pyplot as plt
    rows = [dict(round=r, seed=s, method=m, partition="iid", test_acc=90.0)
            for r in range(1, 6) for s in range(2) for m in ("SemiFL, fixed", "FedRS, alpha 0.5")]
    fig = report.lineplot_grid(pd.DataFrame(rows), "test_acc", hue="method", col="partition",
                               hue_order=["FedRS, alpha 0.5", "SemiFL, fixed"], dashed=["FedRS, alpha 0.5"])
    lines = fig.axes[0].lines
    assert [ln.get_label() for ln in lines] == ["SemiFL, fixed", "FedRS, alpha 0.5"]   # dashed last: on top
    assert [ln.get_linestyle() for ln in lines] == ["-", "--"]
    plt.close(fig)


def test_figure6_label_ratio_is_a_fraction_and_titles_do_not_overlap():
    import matplotlib.pyplot as plt
    rows = [dict(round=r, seed=s, method=m, partition=p, metric=metric, value=v * (0.9 + 0.1 * s))
            for r in range(1, 11) for s in range(3) for m in ("SemiFL: fine-tune only", "FedAvg + FixMatch")
            for p in ("non-iid-l-2", "iid")
            for metric, v in (("Pseudo Accuracy", 80.0), ("Threshold Accuracy", 95.0), ("Label Ratio", 0.98))]
    figure6 = load("figure6")
    fig = report.lineplot_grid(pd.DataFrame(rows), "value", hue="method", col="metric", row="partition",
                               ylabel=figure6["PSEUDO_UNITS"], bounds=figure6["PSEUDO_BOUNDS"])
    fig.canvas.draw()
    ratio = [ax for ax in fig.axes if "Label Ratio" in ax.get_title()]
    assert ratio and all("%" not in ax.get_ylabel() and "fraction" in ax.get_ylabel() for ax in ratio)
    assert all(p.vertices[:, 1].max() <= 1.0 for ax in ratio for coll in ax.collections for p in coll.get_paths())
    boxes = [ax.title.get_window_extent() for ax in fig.axes]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    plt.close(fig)


@pytest.mark.parametrize("n", [3, 6])
def test_series_get_distinct_colours(n):
    assert len(set(report.figures.colors(n))) == n
