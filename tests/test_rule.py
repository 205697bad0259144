"""The paired rule (report.rule): its intervals against scipy's on known cases, Holm's correction on a
textbook family, the pairing really used, no verdict for too few or unmatched seeds, and the seed-planning rule."""
import numpy as np
import pytest
from scipy import stats

from semifl_core.report import rule as R

# the committed `long` Non-IID K=2 finals (%), seeds 0-2: Partially Supervised and SemiFL with one local epoch
PSL = {0: 73.11, 1: 67.72, 2: 72.17}
E1 = {0: 74.98, 1: 71.33, 2: 74.36}


def test_paired_is_student_t_on_the_per_seed_differences():
    j = R.paired(E1, PSL)
    ref = stats.ttest_rel(list(E1.values()), list(PSL.values()))
    ci = ref.confidence_interval(0.95)
    assert j.test == "paired t" and j.n == 3 and j.seeds == (0, 1, 2)
    assert j.p == pytest.approx(ref.pvalue) and (j.low, j.high) == pytest.approx((ci.low, ci.high))
    assert j.diff == pytest.approx(np.mean([1.87, 3.61, 2.19]))
    assert j == "held" and j.span() == "+2.6 [+0.3, +4.9]"
    assert R.paired(PSL, E1) == "not held"


def test_the_pairing_is_used_shuffling_one_arms_seeds_changes_the_verdict():
    # the separation rule and Welch's interval (which ignore the pairing) call this claim within noise
    assert R.above(list(E1.values()), list(PSL.values())) == "within noise"
    assert R.welch(E1, PSL) == "within noise"
    shuffled = {0: E1[1], 1: E1[2], 2: E1[0]}
    assert R.paired(shuffled, PSL) == "within noise" and R.paired(E1, PSL) == "held"


def test_welch_and_one_sample_match_scipy():
    a, b = [70.1, 72.3, 71.0, 73.9], [68.0, 69.5, 67.1]
    j, ref = R.welch(a, b), stats.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert j.test == "Welch t" and j.p == pytest.approx(ref.pvalue)
    assert (j.low, j.high) == pytest.approx((ci.low, ci.high))
    j, ref = R.at_least(a, 70.0), stats.ttest_1samp(a, 70.0)
    ci = ref.confidence_interval(0.95)
    assert j.p == pytest.approx(ref.pvalue) and (j.low, j.high) == pytest.approx((ci.low - 70, ci.high - 70))


def test_too_few_or_unmatched_seeds_give_no_verdict_in_one_line():
    assert R.paired({0: 1.0, 1: 2.0}, {0: 0.0, 1: 0.5}) == "fewer than three seeds: no verdict"
    assert R.paired({}, PSL) == "not run"
    why = R.paired({**E1, 3: 74.0}, PSL, "E=1 above Partially Supervised")
    assert why.startswith("no verdict: E=1 above Partially Supervised") and "0, 1, 2, 3" in why and "\n" not in why
    assert not R.paired({**E1, 3: 74.0}, PSL).decided and R.paired({**E1, 3: 74.0}, PSL).interval() == "-"


def test_not_worse_never_reads_an_interval_that_holds_zero_as_held():
    # E=1 against Partially Supervised, read from each side: A held above B is 'A not worse' held and 'B not worse'
    # not held; the interval is A - B's (paired: the same seeds' differences, negated for the other side)
    assert R.not_worse(E1, PSL) == "held" and R.not_worse(PSL, E1) == "not held"
    assert R.not_worse(PSL, E1).interval() == "-2.6 [-4.9, -0.3], n=3, paired t"
    # a lower mean whose interval holds zero: within noise, its lower end the largest loss left open (never 'held',
    # which the package's rule before read it as)
    close = {0: 73.0, 1: 68.4, 2: 71.5}
    v = R.not_worse(close, PSL)
    assert v == "within noise" and v.low < 0 < v.high and v.diff < 0
    assert R.loss_ruled_out(v) == f"no loss was found, and a loss of more than {-v.low:.1f} points is ruled out"


def _with_p(p, df=1e6):
    """A judged claim whose two-sided p-value is p (a z-like statistic: se 1, huge df)."""
    return R.Verdict("", diff=float(stats.t.isf(p / 2, df)), n=10, test="test", p=p, se=1.0, df=df).at(0.95)


def test_holm_on_a_textbook_family():
    # p = 0.010, 0.040, 0.030, 0.005 (m = 4): sorted 0.005 < 0.0125 and 0.010 < 0.0167 are held; 0.030 > 0.025 stops
    fam = R.holm([_with_p(p) for p in (0.010, 0.040, 0.030, 0.005)])
    assert [str(j) for j in fam] == ["held", "within noise", "within noise", "held"]
    assert [round(j.level, 4) for j in fam] == [round(1 - 0.05 / 3, 4), round(1 - 0.05 / 2, 4),
                                                round(1 - 0.05 / 2, 4), round(1 - 0.05 / 4, 4)]
    # each verdict is what its interval says
    assert all((j.low > 0) == (j == "held") for j in fam)
    # a claim without a verdict does not count in m
    fam = R.holm([_with_p(0.02), R.Verdict("not run"), _with_p(0.04)])
    assert fam[1] == "not run" and fam[0].level == pytest.approx(1 - 0.05 / 2)
    assert [str(j) for j in fam] == ["held", "not run", "held"]


def test_the_exploration_reads_seeds_0_to_2_only_though_the_store_holds_more():
    """The seeds added after the exploration was seen (3 and above) are committed but decide nothing."""
    from semifl_core.report import confirmation as K
    from semifl_core.report.runs import final_accs
    cs = {c.name: c for c in K.exploration()}
    for name, _ in K.CANDIDATES:
        assert name in cs
    c = cs["SemiFL above Partially Supervised, R=300, IID"]
    assert set(final_accs(c.a, range(10))) > set(K.EXPLORED)   # seeds 3-5 are in the store
    for c in cs.values():
        assert set(c.values[0]) <= set(K.EXPLORED) and set(c.values[1]) <= set(K.EXPLORED)
