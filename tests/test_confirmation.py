"""The confirmation on fresh seeds (semifl_core/report/confirmation.py, docs/verdicts.md "The confirmation")."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from semifl_core.report import confirmation as K

ROOT = Path(__file__).resolve().parents[1]


def _arms_by_key(plan: dict) -> dict:
    """The plan with each claim's arms as their run keys: a stored plan keeps the config dicts it was written with
    (a field that later moved into its method's own fields is still there, at its default), the key does not change."""
    from semifl_core.config import Config
    return {**plan, "claims": [{**r, "a": Config.from_dict(r["a"]).key(), "b": Config.from_dict(r["b"]).key()}
                               for r in plan["claims"]]}


def test_the_committed_plan_recomputes_from_the_runs_and_is_the_one_docs_show():
    plan = K.load_plan()
    assert _arms_by_key(K.compute_plan()) == _arms_by_key(plan), \
        "results/confirmation_plan.json is not what the committed runs give"
    assert K.table() in (ROOT / "docs" / "verdicts.md").read_text(), "docs/verdicts.md's confirmation table is stale"
    fam = [r for r in plan["claims"] if r["seeds"]["a"]]
    assert len(fam) == plan["m"] >= 1
    for r in fam:
        assert r["seeds"]["a"] == r["seeds"]["b"] and not set(r["seeds"]["a"]) & set(r["explored"])
        assert set(r["seeds"]["a"]) <= set(K.FRESH) and len(r["seeds"]["a"]) <= K.CAP
        assert r["power"] >= K.POWER
    assert K._long_runs(fam, [len(r["seeds"]["a"]) for r in fam]) <= K.LONG_CAP


def test_power_is_the_chance_a_simulated_paired_interval_lies_above_zero():
    # 20,000 simulated claims: the binomial standard error of the share is at most 0.0036, so 4 of them bound it
    rng = np.random.default_rng(0)
    from scipy import stats
    for n, effect, sd, m in ((6, 2.0, 1.5, 3), (8, 1.0, 1.0, 1)):
        d = rng.normal(effect, sd, size=(20000, n))
        half = stats.t.ppf(1 - K.ALPHA / m / 2, n - 1) * d.std(axis=1, ddof=1) / np.sqrt(n)
        share = float(np.mean(d.mean(axis=1) - half > 0))
        assert abs(share - K.power(n, effect, sd, m)) < 4 * 0.0036


def test_the_effect_sized_for_is_below_the_explorations_mean():
    d = [2.5, 7.5, 4.0, 1.1, 5.2, 5.1]
    effect, sd, n = K.sized(d, 3)
    assert effect < np.mean(d) and sd == pytest.approx(np.std(d, ddof=1))
    assert n is None or K.power(n, effect, sd, 3) >= K.POWER > K.power(n - 1, effect, sd, 3)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A results folder with the committed plan and fake finals: {cfg key: {seed: acc}} set by each test."""
    (tmp_path / "results").mkdir()
    shutil.copy(K.plan_file(), tmp_path / "results" / K.plan_file().name)
    finals = {}

    def fake(cfg, seeds, results_dir=None):
        got = finals.get(cfg.replace(seed=0).key(), {})
        return {s: got[s] for s in seeds if s in got}
    monkeypatch.setattr(K, "final_accs", fake)
    return tmp_path / "results", finals


def _fill(finals, row, lead, seeds=None, noise=0.3):
    a, b = K.arms(row)
    rng = np.random.default_rng(1)
    for s in seeds or row["seeds"]["a"]:
        base = 70 + rng.normal(0, 2)
        finals.setdefault(a.key(), {})[s] = base + row["side"] * (lead + rng.normal(0, noise))
        finals.setdefault(b.key(), {})[s] = base


def test_a_clear_lead_on_fresh_seeds_is_confirmed_and_none_is_not(store):
    results, finals = store
    K.mark_started(results)
    fam = [r for r in K.load_plan(results)["claims"] if r["seeds"]["a"]]
    _fill(finals, fam[0], 3.0)
    _fill(finals, fam[1], 0.0)
    got = {c.claim: c for c in K.verdicts(results)}
    assert got[fam[0]["claim"]].verdict == "confirmed"        # early: Holm confirms it whatever the rest read
    assert got[fam[1]["claim"]].verdict == "not confirmed"    # its 95 % interval holds zero
    assert "fresh seeds (100-" in got[fam[0]["claim"]].text()
    for r in fam[2:]:
        assert got[r["claim"]].verdict == "running"
    for r in K.load_plan(results)["claims"]:
        if not r["seeds"]["a"]:
            assert got[r["claim"]].verdict == "not confirmed" and "not run" in got[r["claim"]].text()


def test_the_plan_changed_after_its_first_run_started_gives_no_verdict(store):
    results, finals = store
    K.mark_started(results)
    plan = K.load_plan(results)
    plan["claims"][0]["seeds"]["a"] = plan["claims"][0]["seeds"]["b"] = plan["fresh"][:3]
    K.plan_file(results).write_text(json.dumps(plan))
    row = plan["claims"][0]
    _fill(finals, row, 3.0)
    c = K.verdicts(results)[0]
    assert c.verdict.startswith("no verdict") and "edited after its first run started" in c.verdict
    assert row["claim"] in c.verdict and "[100, 101, 102]" in c.verdict and "\n" not in c.verdict
    with pytest.raises(SystemExit, match="fixed"):
        K.write_plan(results)


def test_arms_at_different_fresh_seeds_or_a_seed_run_before_give_no_verdict(store):
    results, finals = store
    plan = K.load_plan(results)
    row = plan["claims"][0]
    row["seeds"]["b"] = row["seeds"]["b"][:-1]
    plan["claims"][1]["seeds"]["a"] = plan["claims"][1]["seeds"]["b"] = [2, *plan["claims"][1]["seeds"]["a"][1:]]
    K.plan_file(results).write_text(json.dumps(plan))
    K.mark_started(results)
    got = K.verdicts(results)
    assert "do not share every fresh seed" in got[0].verdict and row["claim"] in got[0].verdict
    assert "seeds [2] were already run for it" in got[1].verdict


def test_the_campaign_queues_each_claim_whole_before_the_next():
    q = K.queue()
    claims = [label.split(" (seed")[0] for label, _ in q]
    assert claims == sorted(claims, key=[f"confirmation: {c}" for c in K.load_plan()["order"]].index)
    plan = {r["claim"]: r for r in K.load_plan()["claims"]}
    for name in K.load_plan()["order"]:
        assert sum(1 for c in claims if c == f"confirmation: {name}") == 2 * len(plan[name]["seeds"]["a"])


def test_a_claims_row_with_a_final_word_reads_it_and_so_does_the_takeaway():
    """A notebook's claims table reads the final word of each comparison the final-words table decides (confirmed on
    fresh seeds where seeds 0-2 read within noise), with the interval it rests on; other rows stay as judged."""
    import pandas as pd
    from semifl_core.report import claims as C
    from semifl_core.report.rule import Verdict
    table = C.claims([("[R=300] SemiFL beats Partially Supervised", Verdict("within noise"), "75.7 vs 71.0"),
                      ("[R=30] FixMatch beats Partially Supervised", Verdict("held"), "74.1 vs 69.7")])
    words = pd.DataFrame({"exploration: seeds 0-2": ["within noise: +4.6 [-8.3, +17.6], n=3"],
                          "confirmation: fresh seeds alone": ["confirmed: +4.1 [+1.5, +6.6] at 97.5 %, n=8 fresh seeds "
                                                              "(100-107), paired t, Holm over 3"],
                          "final word": ["confirmed"]}, index=["SemiFL above Partially Supervised, R=300, IID"])
    out = K.decided(table, words, {"[R=300] SemiFL beats Partially Supervised":
                                   "SemiFL above Partially Supervised, R=300, IID"})
    assert list(out.verdict.map(str)) == ["confirmed", "held"]
    assert out[C.INTERVAL][0].startswith("+4.1 [+1.5, +6.6] at 97.5 %, n=8 fresh seeds")
    assert out[C.INTERVAL][1] == table[C.INTERVAL][1] and out.evidence[0].startswith("seeds 0-2: 75.7 vs 71.0")
    said = C.takeaway(out)
    assert "1 confirmed on fresh seeds, 1 held" in said and "*Confirmed on fresh seeds:*\n- [R=300]" in said
