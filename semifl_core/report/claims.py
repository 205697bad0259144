"""The claims each notebook ends with: per paper item, what the paper states, its verdict on our runs by RULE and the
evidence (the `*_claims` functions), and the diagnosis' findings."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import profile
from ..methods import FEDAVG_FIXMATCH, FEDAVG_SUPERVISED, FULLY_SUPERVISED, PARTIALLY_SUPERVISED, SEMIFL
from . import paper
from .configs import (INSTRUMENTED, SCALE_NS, SUSPECTS, TABLE2_VARIANTS, label_of,
                      table5_label, table5_rows)
from .paper import ABLATION_PARTITIONS, IID, NON_IID_K2, PARTITIONS
from .rule import Verdict, above, at_least, every, flip, not_worse
from .tables import (STAGE_STEPS, TABLE4_FIELDS, accuracy, mean_std, paper_table4, profile_table4,
                     same_value, seeded, select, split_table, stage_change, stage_halves, stage_table,
                     suspects_table)


INTERVAL = "A - B [95 % interval], n, test"   # rule.Verdict.interval()
FINAL = "final_acc"                          # every claim is judged at the final round (the best one is picked on test)
CLAIM_COLUMNS = ["claim", "verdict", INTERVAL, "evidence"]


def claims(items: list) -> pd.DataFrame:
    """items: (claim, verdict, evidence); a verdict is a rule.Verdict (its interval and the separation rule's verdict
    fill their columns), another RULE string, or a bool for exact claims (held / not held: no interval)."""
    rows = []
    for c, h, e in items:
        if isinstance(h, (bool, np.bool_)):
            h = "held" if h else "not held"
        judged = isinstance(h, Verdict)
        rows.append({"claim": c, "verdict": str(h), INTERVAL: h.interval() if judged else "exact" if h in (
            "held", "not held") else "-", "evidence": e})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


class Takeaway(str):
    """Markdown text that a notebook shows as rendered markdown (and as itself anywhere else)."""

    def _repr_markdown_(self):
        return str(self)


# verdicts in the order a takeaway lists them; anything else (a finding's value) is listed under "found"
VERDICT_ORDER = [("held", "Held"), ("not held", "Not held"), ("within noise", "Within noise"),
                 ("fewer than three seeds: no verdict", "Fewer than three seeds: no verdict"),
                 ("not all run", "Not all run yet"), ("not run", "Not run yet")]


def takeaway(table: pd.DataFrame) -> Takeaway:
    """The written takeaway of a claims table (claims(...) or diagnosis_findings(...)), generated from it so that it
    cannot disagree: how many claims held, then each claim under its verdict."""
    claim, verdict = table.columns[0], table.columns[1]
    groups: dict[str, list[str]] = {}
    for c, v in zip(table[claim], table[verdict]):
        name = dict(VERDICT_ORDER).get(str(v))
        groups.setdefault(name or "Found", []).append(c if name else f"{c}: **{v}**")
    order = list(dict.fromkeys([name for _, name in VERDICT_ORDER] + ["Found"]))
    word = lambda g: "with fewer than three seeds (no verdict)" if g.startswith("Fewer") else g.lower()  # noqa: E731
    counts = ", ".join(f"{len(groups[g])} {word(g)}" for g in order if g in groups and g != "Found")
    lines = [f"**Takeaway** ({len(table)} {claim}s; by the package's rule, from the table below): {counts or 'none judged'}."]
    for g in order:
        if g in groups:
            lines += ["", f"*{g}:*", *(f"- {c}" for c in groups[g])]
    return Takeaway("\n".join(lines))


def _prefix(pairs, ds, n):
    """'[dataset, N_S=n] ' before a claim when the notebook shows several (dataset, N_S) pairs."""
    return f"[{paper.DATASET_NAMES.get(ds, ds)}, N_S={n}] " if len(pairs) > 1 else ""


def table1_claims(df, pairs, methods=()) -> pd.DataFrame:
    """Table 1's claims, judged at the final round as the README's headline is (each claim says so; the table shows
    the best round too, as the paper reports it); `methods`: for each method added, that it beats Partially Supervised
    and SemiFL (under every partition, if federated)."""
    from ..methods import METHODS
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        acc = lambda m, p=None: accuracy(df, ds, n, m, p, "final_acc")
        semi, fix, het = ({p: acc(label_of(m), p) for p in PARTITIONS} for m in (SEMIFL, FEDAVG_FIXMATCH,
                                                                                 FEDAVG_SUPERVISED))
        part, full = acc(label_of(PARTIALLY_SUPERVISED)), acc(label_of(FULLY_SUPERVISED))
        ev = lambda d: ", ".join(f"{paper.PARTITION_NAMES[k]}: {v[1]}" for k, v in d.items())
        items += [
            (pre + "SemiFL beats Partially Supervised under every partition (final round)",
             every(above(semi[p][2], part[2]) for p in PARTITIONS),
             f"SemiFL {ev(semi)}; Partially Supervised {part[1]}"),
            (pre + "SemiFL beats FedAvg + FixMatch (vanilla SSFL) under every partition (final round)",
             every(above(semi[p][2], fix[p][2]) for p in PARTITIONS), f"SemiFL {ev(semi)}; FedAvg+FixMatch {ev(fix)}"),
            (pre + "FedAvg + FixMatch stays below Partially Supervised under every partition (final round)",
             every(above(part[2], fix[p][2]) for p in PARTITIONS),
             f"FedAvg+FixMatch {ev(fix)}; Partially Supervised {part[1]}"),
            (pre + "Fully Supervised stays above SemiFL under every partition (final round)",
             every(above(full[2], semi[p][2]) for p in PARTITIONS), f"Fully Supervised {full[1]}; SemiFL {ev(semi)}"),
            (pre + "SemiFL beats supervised FL (HeteroFL row) under Non-IID, K=2 (final round)",
             above(semi[NON_IID_K2][2], het[NON_IID_K2][2]),
             f"SemiFL {semi[NON_IID_K2][1]} vs HeteroFL {het[NON_IID_K2][1]}"),
            (pre + "SemiFL degrades with label skew: IID above Non-IID K=2 (final round)",
             above(semi[IID][2], semi[NON_IID_K2][2]), f"SemiFL {ev(semi)}"),
        ]
        for m in methods:
            name = label_of(m)
            if not METHODS[m].federated:
                own = acc(name)
                items.append((pre + f"{name} beats Partially Supervised (final round)", above(own[2], part[2]),
                              f"{name} {own[1]}; Partially Supervised {part[1]}"))
                continue
            own = {p: acc(name, p) for p in PARTITIONS}
            items += [(pre + f"{name} beats Partially Supervised under every partition (final round)",
                       every(above(own[p][2], part[2]) for p in PARTITIONS),
                       f"{name} {ev(own)}; Partially Supervised {part[1]}"),
                      (pre + f"{name} beats SemiFL under every partition (final round)",
                       every(above(own[p][2], semi[p][2]) for p in PARTITIONS), f"{name} {ev(own)}; SemiFL {ev(semi)}")]
    return claims(items)


def table2_claims(df, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = accuracy(df, ds, n, label_of(PARTIALLY_SUPERVISED), metric=FINAL)
        for p in ABLATION_PARTITIONS:
            a = {k: accuracy(df, ds, n, v, p, FINAL) for k, v in TABLE2_VARIANTS.items()}
            ev = "; ".join(f"{TABLE2_VARIANTS[k]}: {v[1]}" for k, v in a.items())
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: fine-tune + global pseudo-labels is the best of the four combinations (final round)",
                 every(above(a[(True, True)][2], a[k][2]) for k in TABLE2_VARIANTS if k != (True, True)), ev),
                (pre + f"{pn}: fine-tuning alone beats global pseudo-labels alone (final round)",
                 above(a[(True, False)][2], a[(False, True)][2]), ev),
                (pre + f"{pn}: full SemiFL beats Partially Supervised (final round)", above(a[(True, True)][2], part[2]),
                 f"SemiFL {a[(True, True)][1]} vs Partially Supervised {part[1]}"),
                (pre + f"{pn}: FedAvg + FixMatch falls below Partially Supervised (final round)", above(part[2], a[(False, False)][2]),
                 f"FedAvg+FixMatch {a[(False, False)][1]} vs Partially Supervised {part[1]}"),
            ]
    return claims(items)


def figure6_claims(long, pairs) -> pd.DataFrame:
    """Pseudo-label quality of full SemiFL against each other Table 2 variant, per seed averaged over the second half
    of the rounds."""
    items = []
    best = TABLE2_VARIANTS[(True, True)]
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        for part in ABLATION_PARTITIONS:
            for metric in ("Pseudo Accuracy", "Threshold Accuracy"):
                d = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)
                         & (long.metric == metric)]
                claim = pre + f"{paper.PARTITION_NAMES[part]}: {metric} (second half of rounds) is highest with " \
                              f"fine-tune + global"
                ran = long[(long.dataset == ds) & (long.num_supervised == n) & (long.partition == part)]
                if best not in set(ran.method):
                    items.append((claim, "not run", "full SemiFL's runs are not in the results store"))
                    continue
                if best not in set(d.method):
                    items.append((claim, False, "never defined: no pseudo-label passed the threshold in any round"))
                    continue
                late = d[d["round"] > d["round"].max() / 2].groupby(["method", "seed"]).value.mean()
                per = {m: {int(s): v for s, v in late[m].items()}   # one N_S: the seed's labeled set, paired
                       for m in late.index.get_level_values(0).unique()}
                items.append((claim, every(above(per[best], v) for m, v in per.items() if m != best),
                              "; ".join(f"{m}: {mean_std(v.values())}" for m, v in per.items())))
    return claims(items)


def table3_claims(df, pairs) -> pd.DataFrame:
    """The paper: sBN statistics from the server only are about as good as from server and clients; judged as the
    one-sided claim 'server only not worse than server and clients' (rule.NOT_WORSE_RULE, paired by seed: both arms
    share the seed's labeled set), at the final round."""
    items = []
    for ds, n in pairs:
        for part in ABLATION_PARTITIONS:
            s = seeded(select(df, ds, n, sbn_source="server", partition=part), FINAL)
            a = seeded(select(df, ds, n, sbn_source="all", partition=part), FINAL)
            evidence = f"server {mean_std(s)} vs all {mean_std(a)}"
            items.append((_prefix(pairs, ds, n) + f"{paper.PARTITION_NAMES[part]}: sBN statistics from the server only "
                          "are not worse than from server and clients (final round)", not_worse(s, a), evidence))
    return claims(items)


def table5_claims(df, p, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        labels = [table5_label(*row) for row in table5_rows(p, ds, n)]
        low_e, no_mix, no_mom, full = labels
        for part in ABLATION_PARTITIONS:
            a = {l: accuracy(df, ds, n, l, part, FINAL) for l in labels}
            pn = paper.PARTITION_NAMES[part]
            items += [
                (pre + f"{pn}: fewer local epochs hurt ({low_e} below {full}) (final round)", above(a[full][2], a[low_e][2]),
                 f"{a[low_e][1]} vs {a[full][1]}"),
                (pre + f"{pn}: the mix loss helps ({full} above {no_mix}) (final round)", above(a[full][2], a[no_mix][2]),
                 f"{a[full][1]} vs {a[no_mix][1]}"),
                (pre + f"{pn}: global momentum helps ({full} above beta_g=0) (final round)", above(a[full][2], a[no_mom][2]),
                 f"{a[full][1]} vs {a[no_mom][1]}"),
            ]
    return claims(items)


def figure2_claims(df, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = accuracy(df, ds, n, label_of(PARTIALLY_SUPERVISED), metric=FINAL)
        fix = label_of(FEDAVG_FIXMATCH)   # figure2_configs' labels: f"{fix}, 1 local step" and f"{fix}, E=<E>"
        one = next((m for m in df.method.unique() if "1 local step" in m), f"{fix}, 1 local step")
        many = next((m for m in df.method.unique() if m.startswith(f"{fix}, E=")), f"{fix}, E")
        e_name = many.split(", ", 1)[1]
        for p in ABLATION_PARTITIONS:
            a1, ae = accuracy(df, ds, n, one, p, FINAL), accuracy(df, ds, n, many, p, FINAL)
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: FedAvg + FixMatch with multiple local epochs falls below Partially Supervised (final round)",
                 above(part[2], ae[2]), f"{many}: {ae[1]}; Partially Supervised {part[1]}"),
                (pre + f"{pn}: FedAvg + FixMatch works better with one local step per round than with {e_name} (final round)",
                 above(a1[2], ae[2]), f"1 step: {a1[1]}; {e_name}: {ae[1]}"),
            ]
    return claims(items)


def learning_curve_claims(df, c, pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        pre = _prefix(pairs, ds, n)
        part = accuracy(df, ds, n, label_of(PARTIALLY_SUPERVISED), metric="final_acc")
        for p in PARTITIONS:
            d = c[(c.dataset == ds) & (c.num_supervised == n) & (c.method == label_of(SEMIFL)) & (c.partition == p)]
            d = d.dropna(subset=["test_acc"]).sort_values("seed")
            first, last = ({int(s): v for s, v in zip(e.seed, e.test_acc)}   # the same run's two rounds: paired
                           for e in (d[d["round"] == d["round"].agg(f)] for f in ("min", "max")))
            final = accuracy(df, ds, n, label_of(SEMIFL), p, metric="final_acc")
            pn = paper.PARTITION_NAMES[p]
            items += [
                (pre + f"{pn}: SemiFL's accuracy rises over training (last round above first)", above(last, first),
                 f"first round {mean_std(first.values())} -> last round {mean_std(last.values())}" if len(d)
                 else "no evaluations"),
                (pre + f"{pn}: SemiFL ends above Partially Supervised (final round)", above(final[2], part[2]),
                 f"{final[1]} vs {part[1]}"),
            ]
    return claims(items)


def table4_claims(pairs) -> pd.DataFrame:
    items = []
    for ds, n in pairs:
        cfg = profile("paper", ds, num_supervised=n)
        diffs = []
        for name, fld in TABLE4_FIELDS:
            v = profile_table4(cfg, fld)
            if not same_value(v, paper_table4(ds, n, fld)):
                diffs.append(f"{name}: {v} vs paper {paper_table4(ds, n, fld)}")
        items.append((f"profile('paper') for {paper.DATASET_NAMES.get(ds, ds)}, N_S={n} has Table 4's hyperparameters",
                      not diffs, "; ".join(diffs) or f"all {len(TABLE4_FIELDS)} values match"))
    return claims(items)


def scale_claims(table, cfg) -> pd.DataFrame:
    """What the study shows, each verdict by RULE on the seeds (at_least for the study's goal of half the gap)."""
    t = table.set_index("point")
    prof = f"N_S={cfg.num_supervised}"
    col = lambda k, c: t.loc[k, c] if k in t.index else np.array([])
    shown_ = lambda k, c: t.loc[k, c] if k in t.index else "not run"
    semi, psl = label_of(SEMIFL), label_of(PARTIALLY_SUPERVISED)
    # {seed: value}: points at one N_S share each seed's labeled set (paired); points at two N_S do not (Welch)
    by_seed = lambda k, c: t.loc[k, "_by_seed"][c] if k in t.index else {}
    items = [(f"At the profile ({prof}, IID) SemiFL is above Partially Supervised",
              above(by_seed(prof, semi), by_seed(prof, psl)),
              f"SemiFL {shown_(prof, semi)} vs Partially Supervised {shown_(prof, psl)}"),
             ("At the profile SemiFL closes at least half of the gap (the study's goal)",
              at_least(col(prof, "_closed"), 50.0), f"gap closed {mean_std(col(prof, '_closed'), '%')}")]
    ran = [m for m in SCALE_NS if len(col(f"N_S={m}", "_gain"))] or [SCALE_NS[-1], SCALE_NS[0]]
    for name, a, b in ((f"more rounds ({5 * cfg.rounds} vs {cfg.rounds})", f"rounds={5 * cfg.rounds}", prof),
                       ("more local epochs (E=5 vs E=1)", prof, "E=1.0"),
                       ("a wider model (cnn-w2 vs cnn)", "model=cnn-w2", prof),
                       (f"more labels (N_S={max(ran)} vs {min(ran)}, the extremes with SemiFL runs)",
                        f"N_S={max(ran)}", f"N_S={min(ran)}")):
        same_labels = not (a.startswith("N_S=") and b.startswith("N_S="))
        gains = (by_seed(a, "gain"), by_seed(b, "gain")) if same_labels else (col(a, "_gain"), col(b, "_gain"))
        items.append((f"The gain SemiFL - Partially Supervised grows with {name}", above(*gains),
                      f"gain {shown_(a, 'SemiFL - Partially')} vs {shown_(b, 'SemiFL - Partially')}"))
    return claims(items)


def diagnosis_findings(df, splits, ns_list) -> pd.DataFrame:
    """The diagnosis in claims form: per N_S, 'SemiFL ends above Partially Supervised', 'the stage of a round that
    loses most is <the one that does in the mean>' (held when each other stage loses less by RULE), and '<suspect>
    ends above the profile' for each suspect (verdicts by RULE), with the labeled-set spread beside."""
    items = []
    stages = stage_table(df)
    late_rounds = {n: g for (n, h), g in stage_halves(df) if h == "rounds T/2-T"}
    spread = split_table(splits)
    for n in ns_list:
        d = df[df.num_supervised == n]
        semi = seeded(d[d.label == INSTRUMENTED], "final_acc")
        part = seeded(d[d.label == label_of(PARTIALLY_SUPERVISED)], "final_acc")
        sp = spread[(spread.N_S == n) & (spread.method == label_of(SEMIFL))]
        n_splits = ((splits.num_supervised == n) & splits.label.str.startswith(f"{label_of(SEMIFL)} | ")).sum()
        items.append((f"N_S={n}: SemiFL ({mean_std(semi)}) ends above Partially Supervised ({mean_std(part)})",
                      above(semi, part), f"labeled-set draw alone moves SemiFL by {sp['range'].iloc[0]} points "
                      f"({n_splits} of split seeds 0-4 run)" if n_splits > 1
                      else "labeled-set spread: fewer than 2 splits run"))
        late = stages[(stages.N_S == n) & (stages.rounds == "rounds T/2-T")]
        if len(late):   # the stage that loses most in the mean, judged against each other stage (per seed)
            g = late_rounds[n]
            change = {name: stage_change(g, after, before) for name, after, before in STAGE_STEPS}
            change = {name: {int(s): x for s, x in v.dropna().items()}   # the same runs' stages: paired by seed
                      for name, v in change.items() if v.notna().any()}   # (a stage that never happened: left out)
            worst = min(change, key=lambda k: np.mean(list(change[k].values()))) if change else None
            items.append((f"N_S={n}: the stage of a round that loses most test accuracy (second half of training) "
                          f"is {worst or 'not known'}",
                          every(above(v, change[worst]) for k, v in change.items() if k != worst) if worst
                          else "not run", ", ".join(f"{name} {late[name].iloc[0]}" for name, _, _ in STAGE_STEPS)))
        table = suspects_table(df, n).set_index("run")
        for name in SUSPECTS:
            if name in table.index:
                row = table.loc[name]
                items.append((f"N_S={n}: {name} ends above the profile", row["above the profile"],
                              f"{row['final accuracy']} vs profile "
                              f"{table.loc[INSTRUMENTED, 'final accuracy']} (difference {row['difference to profile']})"))
    return pd.DataFrame(items, columns=["finding", "verdict", "evidence"])


def _flip(verdicts):
    """Verdicts of 'A at least B' read as 'B above A' (held <-> not held, the interval negated; the rest as they are)."""
    return [flip(v) for v in verdicts]


def theorem1_claims(rates: pd.DataFrame, crit: pd.DataFrame, bias_rates: dict, task, n: list) -> pd.DataFrame:
    """The theorem1 notebook's claims: the measured rates against Theorem 1's bounds, the bias alone at the proof's
    bandwidths, and the critical region (8) (the slope of the risk ratio C_ssl / C_l in n_u and its value at the
    largest n_u, and the copies' own share of the gain), each verdict by rule.at_least with the bootstrap spread.
    rates: one row per classifier (classifier, measured, spread, 'at least the bound'; C_l's first); crit: one row
    per zeta (the notebook's critical-region table); bias_rates: {'C_l': rate, 'C_ssl': rate} of the bias alone; task:
    theory.Task; n: the sample sizes."""
    e_l, e_ssl, zeta_star = task.rate(labeled=True), task.rate(), task.zeta_star()
    largest = f"10^{np.log10(n[-1]):g}"
    ssl_rows = rates[rates.classifier.str.startswith("C_ssl, ")]
    naive_rows = rates[rates.classifier.str.contains("naive")]
    inside, outside = crit[crit.zeta < zeta_star], crit[crit.zeta > zeta_star]
    slopes = crit["measured slope"].to_numpy()
    cross = next((round(float(np.interp(0, slopes[i:i + 2], crit.zeta[i:i + 2])), 2) for i in range(len(slopes) - 1)
                  if slopes[i] < 0 <= slopes[i + 1]), None)
    level = lambda rows: ", ".join(  # noqa: E731
        f"{z:g}: {r:.2f}" for z, r in zip(rows.zeta, rows["ratio at largest n_u"]))
    per_zeta = lambda rows: "; ".join(f"zeta {c.split('=')[1]}: {m:.2f} ({s:.2f})"  # noqa: E731
                                      for c, m, s in zip(rows.classifier, rows.measured, rows.spread))
    c_l = rates.iloc[0]
    return claims([
        (f"C_l (labels only) decays at least at the bound n_l^-{e_l:.2f}", c_l["at least the bound"],
         f"measured {c_l.measured:.2f} (spread {c_l.spread:.2f}) over n_l = {n[0]}-{n[-1]}"),
        (f"C_ssl decays at least at the bound n_u^-{e_ssl:.2f} (Theorem 1), at every zeta",
         every(ssl_rows["at least the bound"]), per_zeta(ssl_rows)),
        ("the bounds are reached by the bias at the proof's bandwidths (infinite data, same h): |rate - bound| < 0.02",
         "held" if abs(bias_rates["C_ssl"] - e_ssl) < 0.02 and abs(bias_rates["C_l"] - e_l) < 0.02 else "not held",
         f"bias-only rates {bias_rates['C_l']:.2f} (C_l) and {bias_rates['C_ssl']:.2f} (C_ssl), bounds {e_l:.2f} and "
         f"{e_ssl:.2f}: any excess of a measured rate over its bound comes from the variance, which fades with n"),
        (f"(8): C_ssl gains on C_l as n_u grows for zeta < {zeta_star:.2f}",
         every(inside["C_ssl gains as n_u grows"]),
         f"measured slopes {', '.join(f'{z:g}: {s:+.2f}' for z, s in zip(crit.zeta, crit['measured slope']))} "
         f"(predicted {', '.join(f'{p:+.3f}' for p in crit['predicted slope'])}); measured sign change at zeta "
         f"{cross if cross is not None else '-'}"),
        (f"(8): C_ssl loses ground to C_l as n_u grows for zeta > {zeta_star:.2f}",
         every(_flip(outside["C_ssl gains as n_u grows"])), "same slopes"),
        (f"at n_u = {largest}, C_ssl has the lower risk for zeta < {zeta_star:.2f}",
         every(inside["C_ssl below C_l there"]), f"risk ratios C_ssl/C_l {level(inside)}"),
        (f"at n_u = {largest}, C_l has the lower risk for zeta > {zeta_star:.2f}",
         every(_flip(outside["C_ssl below C_l there"])), f"risk ratios C_ssl/C_l {level(outside)}"),
        (f"at n_u = {largest} and zeta < {zeta_star:.2f}, the unlabeled copies themselves lower the risk (C_ssl below "
         "the labels alone at its bandwidth h)",
         every(inside["copies help there"]),
         "C_ssl / labels at h: " + ", ".join(f"{z:g}: {r:.2f} ({v})" for z, r, v in
                                             zip(crit.zeta, crit["ratio to labels at h"], crit["copies help there"]))
         + "; the rest of the gain over C_l is the smaller bandwidth; for zeta > zeta* the copies are few beside n_l"),
        ("without the class-balanced channel (naive) C_ssl still decays at the bound's rate",
         every(naive_rows["at least the bound"]), per_zeta(naive_rows)),
    ]).rename(columns={"claim": "finding"})
