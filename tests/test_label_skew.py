"""The label-skew study (its notebook's own code: its measures, tables, part 3's plan and claims): its tables are the
seeds' run means of the committed per-round measures, its verdicts follow the package's rule, and its written takeaway
cannot disagree with its claims."""
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from semifl_core import report
from semifl_core.report.claims import claims as make_claims
from semifl_core.report import configs
from semifl_core.report.configs import FEDVLS, ONE_EPOCH
from semifl_core.report.rule import above

from notebook_code import load

skew = SimpleNamespace(**load("label_skew"))   # the notebook's own code


@pytest.mark.parametrize("a, b, want", [
    ([80, 81, 82], [70, 71, 72], "held"),            # 10 points apart, spreads 0.8 each
    ([70, 71, 72], [80, 81, 82], "not held"),
    ([80, 82, 84], [79, 80, 81], "within noise"),    # 2 apart < spreads 1.63 + 0.82
    ([80, 82, 84], [76, 77, 78], "held"),            # 5 apart > 2.45
    ([80], [70, 71], "one seed: no verdict"),
    ([], [70, 71], "not run"),
])
def test_the_gates_separation_rule_compares_the_gap_with_both_seed_spreads(a, b, want):
    assert skew.separation(a, b) == want


def _runs(tmp_path, rows: dict) -> pd.DataFrame:
    """A run_all-like frame: {(label, seed): {column: per-round values}} written as metrics.csv files."""
    out = []
    for i, ((label, seed), cols) in enumerate(rows.items()):
        d = tmp_path / f"run{i}"
        d.mkdir(parents=True)
        n = len(next(iter(cols.values())))
        pd.DataFrame({"round": range(1, n + 1), **cols}).to_csv(d / "metrics.csv", index=False)
        out.append({"label": label, "seed": seed, "partition": label.split(" | ")[-1], "path": str(d),
                    "final_acc": cols.get("test_acc", [np.nan])[-1]})
    return pd.DataFrame(out)


CA = "SemiFL, client-adaptive | non-iid-l-2 (instrumented)"
FX = "SemiFL, fixed | non-iid-l-2 (instrumented)"


def _mech(tmp_path):
    rng = np.random.default_rng(0)
    rows = {}
    for label, tau_un, pass_un, dacc_un in ((CA, 0.1, 0.97, -30.0), (FX, 0.95, 0.2, -20.0)):
        for s in (0, 1, 2):
            rows[(label, s)] = {"skew_tau_held": 0.6 + 0.01 * rng.random(4),
                                "skew_tau_unheld": tau_un + 0.01 * rng.random(4),
                                "skew_pass_held": 0.75 + 0.01 * rng.random(4),
                                "skew_pass_unheld": pass_un + 0.01 * rng.random(4),
                                "skew_dacc_held": 8 + rng.random(4), "skew_dacc_unheld": dacc_un + rng.random(4)}
    return _runs(tmp_path, rows), rows


def test_the_mechanism_table_is_the_seeds_mean_of_each_runs_round_mean(tmp_path):
    mech, rows = _mech(tmp_path)
    table = skew.mechanism_table(mech)
    run_means = [rows[(CA, s)]["skew_pass_unheld"].mean() * 100 for s in (0, 1, 2)]
    want = f"{np.mean(run_means):.1f} ({np.std(run_means):.1f}) n=3"
    assert table.loc["pass rate, the other classes, %", "SemiFL, client-adaptive"] == want
    assert table.loc["threshold tau_c, the other classes, %", "SemiFL, fixed"].startswith("95.")


def test_claims_follow_the_rule_and_the_takeaway_states_exactly_the_held_ones(tmp_path):
    mech, rows = _mech(tmp_path)
    finals = {}
    for part in ("iid", "non-iid-l-2"):
        for rule, acc in (("global-adaptive", 72.0), ("client-adaptive", 65.0)):
            for s in (0, 1, 2):
                finals[(f"{rule} | SemiFL | {part}", s)] = {"test_acc": [acc + s * 0.1]}
    for s in (0, 1, 2):
        finals[("Partially Supervised", s)] = {"test_acc": [70.0 + s * 0.1]}
    fix = _runs(tmp_path / "fix", finals)
    table = skew.fix_table(fix)
    assert table.loc["Non-IID, K=2", "fix vs client-adaptive"] == "held"
    assert table.loc["IID", "fix vs Partially Supervised"] == above([72.0, 72.1, 72.2], [70.0, 70.1, 70.2])
    claims = skew.study_claims(mech, table)
    verdicts = dict(zip(claims.claim, claims.verdict))
    assert verdicts["SemiFL, client-adaptive passes more of those wrong labels than the fixed rule (tau 0.95)"] \
        == "held"
    assert verdicts["(FL)²: a client's threshold is lower for the other classes than for its classes"] \
        == "not run"
    text = str(report.takeaway(claims))
    held_part = text.partition("*Held:*")[2].split("\n\n")[0]
    for claim, verdict in verdicts.items():
        assert (claim in held_part) == (verdict == "held"), claim


def test_the_second_fix_is_judged_against_partially_supervised_and_plain_softmax(tmp_path):
    """FedRS's table and claims: its rows by partition, its verdicts by the rule, and its instrumented runs judged on
    the drop of the other classes against the fixed rule's (here 10 against 20 points: held)."""
    mech, rows = _mech(tmp_path)
    rs = {("FedRS, alpha 0.5 | SemiFL | non-iid-l-2 (instrumented)", s): {
        **rows[(FX, s)], "skew_dacc_unheld": -10.0 + np.arange(4) * 0.1} for s in (0, 1, 2)}
    mech = pd.concat([mech, _runs(tmp_path / "rs", rs)], ignore_index=True)
    finals = {(f"{row} | SemiFL | {part}", s): {"test_acc": [acc + s * 0.1]}
              for part, accs in (("iid", (74.0, 73.0)), ("non-iid-l-2", (66.0, 72.0)))
              for row, acc in zip(("FedRS, alpha 0.5", "fixed"), accs) for s in (0, 1, 2)}
    finals.update({("Partially Supervised", s): {"test_acc": [70.0 + s * 0.1]} for s in (0, 1, 2)})
    table = skew.fedrs_table(_runs(tmp_path / "plain", finals))
    assert table.loc["Non-IID, K=2", "FedRS vs SemiFL"] == "not held"
    assert table.loc["IID", "FedRS vs Partially Supervised"] == "held"
    assert table.loc["IID", "SemiFL + FedRS"] == "74.1 (0.1) n=3"
    verdicts = dict(zip(*skew.study_claims(mech, skew.fix_table(mech.iloc[:0]), table)[["claim", "verdict"]].T.values))
    assert verdicts["SemiFL + FedRS: a client's update lowers the other classes less than the fixed rule's "
                    "with plain softmax"] == "held"
    assert verdicts["Non-IID, K=2: SemiFL + FedRS beats SemiFL (fixed rule, plain softmax)"] == "not held"
    assert "FedRS, alpha 0.5" in skew.mechanism_table(mech).columns


def test_an_empty_store_gives_not_run_everywhere(tmp_path):
    empty = pd.DataFrame(columns=["label", "seed", "partition", "path", "final_acc"])
    table = skew.fix_table(empty)
    assert (table[["Partially Supervised", "global-adaptive (the fix)"]] == "not run").all().all()
    claims = skew.study_claims(empty, table)
    assert set(claims.verdict) == {"not run"} and skew.mechanism_table(empty).empty
    assert "*Held:*" not in report.takeaway(claims)


@pytest.mark.parametrize("rule", ["global-adaptive"])
def test_the_fix_rule_is_refused_where_there_are_no_global_pseudo_labels(rule):
    from semifl_core.config import ConfigError, profile
    with pytest.raises(ConfigError) as err:
        profile("smoke", algorithm="fedavg-fixmatch", pseudo_label_rule=rule)
    assert f"pseudo_label_rule='{rule}'" in str(err.value) and "\n" not in str(err.value)


def _long_frames(finals: dict, psl, fixed):
    """long and judges frames as run_all gives them: {remedy: K=2 finals per seed}, Partially Supervised's and the
    fixed rule's K=2 finals."""
    from semifl_core.methods import PARTIALLY_SUPERVISED, SEMIFL
    from semifl_core.report.tables import label_of
    rows = lambda label, vals: [{"label": label, "seed": s, "final_acc": v} for s, v in enumerate(vals)]  # noqa: E731
    long = pd.DataFrame([r for rem, vals in finals.items()
                         for r in rows(f"{rem} | {label_of(SEMIFL)} | {skew.SKEW_PARTITION}", vals)])
    judges = pd.DataFrame(rows(label_of(PARTIALLY_SUPERVISED), psl)
                          + rows(f"{label_of(SEMIFL)} | {skew.SKEW_PARTITION}", fixed))
    return long, judges


@pytest.mark.parametrize("finals, over_psl, over_fixed, final", [
    # FedVLS held above the fixed rule only (3.0, 3.1, 2.9 points over it, seed by seed); all n=3
    ({ONE_EPOCH: [75.0, 71.3, 74.4], FEDVLS: [73.0, 74.4, 76.1]}, [], [FEDVLS], True),
    # a remedy far above both, another with two seeds (no verdict: not final)
    ({ONE_EPOCH: [80.0, 80.2, 80.1], FEDVLS: [73.2, 73.1]}, [ONE_EPOCH], [ONE_EPOCH], False),
])
def test_the_advice_names_exactly_the_remedies_held_at_long(finals, over_psl, over_fixed, final):
    table = skew.part3_long_table(*_long_frames(finals, psl=[71.4, 68.0, 73.6], fixed=[70.0, 71.3, 73.2]))
    text = str(skew.advice(make_claims(skew.part3_long_claims(table))))
    lead, _, listed = text.partition(" The `long` claims, final round:")
    assert bool(re.search(r"SemiFL with .+ is held above Partially Supervised", lead)) == bool(over_psl)
    assert all(f"SemiFL with {r}" in lead for r in over_psl + over_fixed)
    assert ("Against SemiFL's fixed rule, SemiFL with " in lead) == bool(over_fixed)
    named = {r for r in finals if f"SemiFL with {r}" in lead or f"with {r} or" in lead}
    assert named == set(over_psl + over_fixed)
    assert ("not final" in text) != final and ("so far" in lead) == (not final and not over_psl)
    assert listed.count("\n- ") == listed.count(" (difference ") == 2 * len(finals)   # every K=2 `long` claim, a bullet


def test_a_long_claim_whose_rival_lacks_a_seed_gives_no_verdict_and_each_evidence_shows_both_arms():
    """Judged at seeds 0-5 with Partially Supervised's run at seed 5 missing: that claim names the seeds and gives no
    verdict; the claim against the fixed rule is judged on all six, its evidence both arms there."""
    from semifl_core.report.tables import mean_std
    e1 = [75.0, 71.3, 74.4, 70.1, 72.0, 72.7]
    psl, fixed = [71.4, 68.0, 73.6, 69.9, 70.2], [70.0, 71.3, 73.2, 64.9, 71.5, 71.4]
    table = skew.part3_long_table(*_long_frames({ONE_EPOCH: e1}, psl=psl, fixed=fixed), tuple(range(6)))
    row = table.iloc[0]
    assert row[skew.FINAL] == mean_std(e1)
    vs_psl, vs_fixed = row["vs Partially Supervised"], row["vs SemiFL"]
    assert str(vs_psl).startswith("no verdict") and "A: 0, 1, 2, 3, 4, 5; B: 0, 1, 2, 3, 4" in str(vs_psl)
    assert vs_psl.evidence.startswith(f"{mean_std(e1)} vs {mean_std(psl)}")
    assert vs_fixed.n == 6 and vs_fixed.evidence.startswith(f"{mean_std(e1)} vs {mean_std(fixed)}")
    evidence = [e for _, _, e in skew.part3_long_claims(table)]
    assert evidence == [vs_psl.evidence, vs_fixed.evidence]


def test_only_a_remedy_held_above_partially_supervised_under_k2_goes_on_to_iid():
    """The rule fixed before part 3's runs: IID at `long` for a remedy held above Partially Supervised under Non-IID
    K=2 there; held only against the fixed rule, or only under Dir(0.1), is not enough."""
    k2, dir01 = skew.PART3_NAMES[skew.SKEW_PARTITION], skew.PART3_NAMES["dir-0.1"]
    table = pd.DataFrame([(ONE_EPOCH, k2, "within noise", "held"), (FEDVLS, k2, "held", "within noise"),
                          (ONE_EPOCH, dir01, "held", "held")],
                         columns=["remedy", "partition", "vs Partially Supervised", "vs SemiFL"]
                         ).set_index(["remedy", "partition"])
    assert skew.part3_iid_plan(table) == [r for r in configs.PART3_REMEDIES if r in (FEDVLS, *skew.PART3_IID_SENT)]
    assert ONE_EPOCH not in skew.part3_iid_plan(table)   # the remedy the old reading sent keeps its check; no other


@pytest.mark.parametrize("own, verdict", [
    ([72.0, 71.0, 73.0], "not held"),          # 3.0, 3.2, 2.9 below the fixed rule, seed by seed: worse
    ([75.5, 74.0, 75.9], "within noise"),      # no loss found, none ruled out below the interval's lower end
    ([77.0, 76.4, 77.5], "held"),              # 2.0, 2.2, 1.6 above the fixed rule, seed by seed
    ([75.5], "fewer than three seeds: no verdict"),   # one seed in: the fixed rule at that seed only
    ([], "not run"),
])
def test_the_iid_check_is_not_held_when_the_fixed_rule_is_held_above_the_remedy_and_held_only_above_it(own, verdict):
    from semifl_core.methods import SEMIFL
    from semifl_core.report.tables import label_of
    rows = lambda label, vals: [{"label": label, "seed": s, "final_acc": v} for s, v in enumerate(vals)]  # noqa: E731
    iid = pd.DataFrame(rows(f"{FEDVLS} | {label_of(SEMIFL)} | iid", own), columns=["label", "seed", "final_acc"])
    judges = pd.DataFrame(rows(f"{label_of(SEMIFL)} | iid", [75.0, 74.2, 75.9]))
    table = skew.part3_iid_table(iid, judges, [FEDVLS])
    assert str(table.loc[FEDVLS, "not worse than SemiFL"]) == verdict
    [(claim, v, evidence)] = skew.part3_iid_claims(table)
    assert "not worse than SemiFL's fixed rule under IID" in claim and str(v) == verdict
    text = str(skew.advice(make_claims(skew.part3_iid_claims(table) + [
        (f"SemiFL + {FEDVLS} beats Partially Supervised under Non-IID, K=2 at 300 rounds", "held", "x")])))
    judged = verdict in ("held", "not held", "within noise")
    assert ("IID check" in text) and (("is not in yet" in text) == (not judged))
    assert ("is ruled out" in text) == (verdict == "within noise")
