"""The confirmation: the claims decided on seeds added after seeds 0-2 had been seen, judged again on fresh seeds alone
(docs/verdicts.md, "The confirmation": why, the rule and the plan's table).

A claim is **confirmed** when its interval on the fresh seeds alone, Holm-corrected over the confirmation's family, lies
on the claimed side of zero, else **not confirmed**. The plan (`compute_plan`, written to results/confirmation_plan.json
before any of its runs) sizes CANDIDATES, in order, on the exploration's seeds (`sized`); the family grows while every
member still reaches POWER within CAP seeds and its 300-round runs stay within LONG_CAP; a candidate that cannot join
is not run and is "not confirmed".

    python -m semifl_core.report.confirmation            # the plan's table and the verdicts so far
    python -m semifl_core.campaign confirmation          # trains the runs (two lanes share the queue)"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..config import Config
from ..methods import PARTIALLY_SUPERVISED, SEMIFL
from . import configs as C
from .paper import PARTITION_NAMES
from .rule import ALPHA, Verdict, flip, holm, paired
from .runs import final_accs, repo_path, study_changes

EXPLORED = (0, 1, 2)             # the seeds every study planned from: the exploration

FRESH = tuple(range(100, 108))   # seeds no committed run had when the plan was written
CAP = 8                          # most fresh seeds a claim may get
LONG_CAP = 32                    # most runs of 300 rounds the plan may queue (about 30: 8 seeds x 2 arms x 2 claims)
POWER = 0.8                      # the chance, at the sized effect, that the interval lies on the claimed side
SAFEGUARD = 0.6                  # the effect sized for: the lower end of this two-sided interval of the mean
CANDIDATES = (                   # (claim, side): +1 'a above b' as `exploration` names it, -1 its reverse
    ("SemiFL above Partially Supervised, R=300, IID", +1),
    ("SemiFL + one local epoch (E=1) above SemiFL's fixed rule, `long`, Non-IID, K=2", +1),
    ("SemiFL + no global momentum above Partially Supervised, `long`, Non-IID, K=2", +1),
    ("SemiFL above Partially Supervised, R=100, IID", +1),
    ("SemiFL above Partially Supervised, R=30, Non-IID, K=2", -1),
    ("SemiFL, client-adaptive rule above Partially Supervised, R=30, Non-IID, K=2", -1),
)
FAMILY = "the confirmation"


@dataclass
class Claim:
    """A claim the exploration judged: 'a above b' at seeds EXPLORED, in its family (one table's claims sharing a
    baseline, Holm over them); `values`: {seed: final accuracy} of a and b."""
    name: str
    family: str
    a: Config
    b: Config
    values: tuple = (dict(), dict())
    verdict: Verdict = Verdict("")


def exploration(results_dir=None) -> list[Claim]:
    """The claims the README answers and the label-skew `long` claims at K=2, judged at seeds EXPLORED, families in
    table order. Seeds given to them after that (3 and above) stay committed as data and decide nothing."""
    out = []
    for r in C.headline_configs(results_dir):
        fam = f"README headline, {r['study']}" + (f", {r['method']}" if r["study"] == "few labels" else "")
        c = Claim(f"{r['method']} above Partially Supervised, R={r['R']}, {PARTITION_NAMES[r['partition']]}", fam,
                  r["cfg_a"], r["cfg_psl"])
        if r["study"] != "few labels" or r["R"] == 30 or final_accs(c.a, EXPLORED, results_dir):
            out.append(c)
    judges = C.label_skew_judges("long", "fashionmnist", 100, tuple(C.PART3_NAMES))
    psl = judges[C.label_of(PARTIALLY_SUPERVISED)]
    for base in ("Partially Supervised", "SemiFL's fixed rule"):
        for remedy in C.PART3_REMEDIES:
            for part, cfg in zip(C.PART3_NAMES, C.label_skew_long_configs("long", "fashionmnist", 100, remedy,
                                                                        tuple(C.PART3_NAMES)).values()):
                b = psl if base == "Partially Supervised" else judges[f"{C.label_of(SEMIFL)} | {part}"]
                out.append(Claim(f"SemiFL + {remedy} above {base}, `long`, {C.PART3_NAMES[part]}",
                                 f"label_skew `long`, vs {base}", cfg, b))
    families = {}
    for c in out:
        c.values = (final_accs(c.a, EXPLORED, results_dir), final_accs(c.b, EXPLORED, results_dir))
        families.setdefault(c.family, []).append(c)
    for fam in families.values():
        for c, j in zip(fam, holm([paired(*c.values, c.name) for c in fam])):
            c.verdict = j
    return out


def plan_file(results_dir=None):
    return repo_path("results", results_dir) / "confirmation_plan.json"


def start_file(results_dir=None):
    """Written by the first lane that starts a confirmation run: the plan's digest then (the plan must not change)."""
    return repo_path("results", results_dir) / "confirmation_started.json"


def claimed(name: str, side: int) -> str:
    """The claim as it is confirmed: 'SemiFL above ...' or, for side -1, 'SemiFL below ...'."""
    return name if side > 0 else name.replace(" above ", " below ", 1)


def power(n: int, effect: float, sd: float, m: int) -> float:
    """The chance that a paired t interval at level 1 - ALPHA / m from n seeds lies above zero, for per-seed
    differences of mean `effect` > 0 and spread `sd` (noncentral t)."""
    crit = stats.t.ppf(1 - ALPHA / m / 2, n - 1)
    return float(stats.nct.sf(crit, n - 1, effect * np.sqrt(n) / sd))


def sized(diffs, m: int) -> tuple[float, float, int | None]:
    """(effect, sd, n): the safeguard effect and the paired spread of the exploration's per-seed differences (on the
    claimed side: positive), and the fewest seeds (<= CAP) that reach POWER at family size m (None: none do)."""
    d = np.asarray(diffs, float)
    sd = float(d.std(ddof=1))
    effect = float(d.mean() - stats.t.ppf(0.5 + SAFEGUARD / 2, len(d) - 1) * sd / np.sqrt(len(d)))
    n = next((k for k in range(3, CAP + 1) if effect > 0 and power(k, effect, sd, m) >= POWER), None)
    return effect, sd, n


def compute_plan(results_dir=None) -> dict:
    """The plan from the committed runs (the exploration seeds each claim has), as plan_file() holds it."""
    by_name = {c.name: c for c in exploration(results_dir)}
    rows = []
    for name, side in CANDIDATES:
        c = by_name[name]
        a, b = final_accs(c.a, range(FRESH[0]), results_dir), final_accs(c.b, range(FRESH[0]), results_dir)
        seeds = sorted(set(a) & set(b))
        rows.append(dict(claim=claimed(name, side), seed_plan_name=name, side=side, explored=seeds,
                         diffs=[round(side * (a[s] - b[s]), 4) for s in seeds],
                         a=c.a.replace(seed=0).to_dict(), b=c.b.replace(seed=0).to_dict(),
                         minutes=[_minutes(c.a, seeds, results_dir), _minutes(c.b, seeds, results_dir)]))
    family = []
    for row in rows:
        trial = family + [row]
        ns = [sized(r["diffs"], len(trial))[2] for r in trial]
        if None not in ns and _long_runs(trial, ns) <= LONG_CAP:
            family = trial
        else:
            short = [r["claim"] for r, n in zip(trial, ns) if n is None]
            row["left_out"] = ("the cap cannot give it a fair chance: " + (
                f"its runs would pass {LONG_CAP} runs of 300 rounds" if not short else
                f"{100 * POWER:.0f} % power needs more than {CAP} fresh seeds in a family of {len(trial)}"
                if short == [row["claim"]] else
                f"with it in (a family of {len(trial)}), {short[0]} would need more than {CAP} fresh seeds"))
    for row in rows:
        row["effect"], row["sd"], n = (round(x, 4) if isinstance(x, float) else x
                                       for x in sized(row["diffs"], max(len(family), 1)))
        row["seeds"] = {"a": list(FRESH[:n]), "b": list(FRESH[:n])} if row in family else {"a": [], "b": []}
        row["power"] = round(power(n, row["effect"], row["sd"], len(family)), 3) if row in family else None
    cost = lambda r: len(r["seeds"]["a"]) * sum(r["minutes"])  # noqa: E731
    order = sorted((r for r in rows if r in family), key=cost)
    return dict(family=FAMILY, m=len(family), alpha=ALPHA, power=POWER, safeguard=SAFEGUARD, cap=CAP,
                long_cap=LONG_CAP, fresh=list(FRESH), order=[r["claim"] for r in order], claims=rows)


def _minutes(cfg: Config, seeds, results_dir=None) -> float:
    from ..results import open_run, train_minutes
    store = repo_path("results", results_dir)
    return round(float(np.median([train_minutes(open_run(store, cfg.replace(seed=s)).path) for s in seeds])), 1)


def _long_runs(rows, ns) -> int:
    return len({(json.dumps(r[arm], sort_keys=True), s) for r, n in zip(rows, ns) for arm in ("a", "b")
                if r[arm]["rounds"] >= 300 for s in FRESH[:n]})


def digest(plan: dict) -> str:
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()


def load_plan(results_dir=None) -> dict:
    return json.loads(plan_file(results_dir).read_text())


def write_plan(results_dir=None) -> dict:
    """Write plan_file() from the committed runs; refused once a confirmation run has started (start_file() exists)."""
    if start_file(results_dir).exists():
        raise SystemExit(f"{start_file(results_dir).name} exists: the plan's runs have started and it is fixed")
    plan = compute_plan(results_dir)
    plan_file(results_dir).write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    return plan


def mark_started(results_dir=None) -> None:
    """Record the plan's digest when its first run starts (campaign.lane calls it); an existing record is kept."""
    f = start_file(results_dir)
    if not f.exists():
        f.write_text(json.dumps({"plan_sha256": digest(load_plan(results_dir))}, indent=1) + "\n")


def arms(row: dict) -> tuple[Config, Config]:
    return Config.from_dict(row["a"]), Config.from_dict(row["b"])


def queue(results_dir=None) -> list[tuple[str, Config]]:
    """The runs, in the plan's order: claim by claim, seed by seed, the cheaper arm first."""
    plan = load_plan(results_dir)
    rows = {r["claim"]: r for r in plan["claims"]}
    out = []
    for name in plan["order"]:
        a, b = arms(rows[name])
        for s in rows[name]["seeds"]["a"]:
            for cfg in sorted((a, b), key=lambda c: c.rounds * (c.algorithm != PARTIALLY_SUPERVISED)):
                out.append((f"confirmation: {name} (seed {s})", cfg.replace(seed=s)))
    return out


@dataclass(frozen=True)
class Confirmation:
    """One claim's confirmation: 'confirmed', 'not confirmed', 'running' (its fresh seeds or its family not all in) or
    a no-verdict line; `fresh`: the fresh-seed verdict, if any (on the claimed side: positive)."""
    claim: str
    verdict: str
    fresh: Verdict | None = None
    why: str = ""
    m: int = 0

    def text(self) -> str:
        """'confirmed: +3.1 [+0.4, +5.8] at 98.3 %, n=8 fresh seeds (100-107), paired t, Holm over 3'."""
        if self.fresh is None or not self.fresh.decided:
            return self.why or self.verdict
        j = self.fresh
        return (f"{self.verdict}: {j.span()} at {100 * j.level:.1f} %, n={j.n} fresh seeds "
                f"({min(j.seeds)}-{max(j.seeds)}), paired t, Holm over {self.m}{'; ' + self.why if self.why else ''}")


def _fault(plan: dict, row: dict, results_dir) -> str:
    """Why a claim gets no verdict (one line), or ''."""
    fresh = row["seeds"]
    if fresh["a"] != fresh["b"]:
        return (f"no verdict: {row['claim']}'s arms do not share every fresh seed (A: {fresh['a']}; B: {fresh['b']})")
    again = sorted(set(fresh["a"]) & set(row["explored"]))
    if again:
        return f"no verdict: {row['claim']}: seeds {again} were already run for it before the plan"
    started = start_file(results_dir)
    ran = any(final_accs(cfg, fresh["a"], results_dir) for cfg in arms(row))
    if ran and (not started.exists() or json.loads(started.read_text()).get("plan_sha256") != digest(plan)):
        return (f"no verdict: {row['claim']}, seeds {fresh['a']}: the plan was edited after its first run started "
                f"({plan_file(results_dir).name} does not match {started.name})")
    return ""


def verdicts(results_dir=None, plan=None) -> list[Confirmation]:
    """Every candidate's confirmation, in CANDIDATES order (`plan`: results_dir's own by default). A member is confirmed
    early when its interval at Holm's strictest level lies on the claimed side (Holm confirms it whatever the others
    read), not confirmed early when its 95 % interval does not; otherwise it waits for the family."""
    plan = plan or load_plan(results_dir)
    out, judged, rows = {}, {}, plan["claims"]
    m = plan["m"]
    for row in rows:
        n = len(row["seeds"]["a"])
        if not n:
            out[row["claim"]] = Confirmation(row["claim"], "not confirmed", m=m,
                                             why="not run: the plan's cap gives it no fair test (docs/verdicts.md)")
            continue
        fault = _fault(plan, row, results_dir)
        if fault:
            out[row["claim"]] = Confirmation(row["claim"], fault, m=m)
            continue
        a, b = (final_accs(cfg, row["seeds"]["a"], results_dir) for cfg in arms(row))
        both = set(a) & set(b)
        if len(both) < n:
            out[row["claim"]] = Confirmation(row["claim"], "running", m=m,
                                             why=f"{len(both)} of {n} fresh seeds in "
                                                 f"({row['seeds']['a'][0]}-{row['seeds']['a'][-1]})")
            continue
        side = row["side"]
        judged[row["claim"]] = paired({s: side * a[s] for s in a}, {s: side * b[s] for s in b}, row["claim"])
    names = list(judged)
    if len(names) == m:     # the whole family is in: Holm
        for name, j in zip(names, holm([judged[k] for k in names])):
            out[name] = Confirmation(name, "confirmed" if j == "held" else "not confirmed", j, m=m)
    else:
        for name in names:
            strict, loose = judged[name].at(1 - ALPHA / m), judged[name]
            if strict == "held":
                out[name] = Confirmation(name, "confirmed", strict, m=m)
            elif loose != "held":
                out[name] = Confirmation(name, "not confirmed", loose, m=m)
            else:
                out[name] = Confirmation(name, "running", loose, m=m,
                                         why="its fresh seeds are in; the family's Holm correction waits for the rest")
    return [out[r["claim"]] for r in rows]


def _explored(c, side: int) -> str:
    """The exploration's reading of a claim at seeds 0-2 (its family's Holm), on the claimed side."""
    if not c.verdict.decided:
        return str(c.verdict)
    v = c.verdict if side > 0 else flip(c.verdict)
    return f"{v}: {v.span()}, n=3"


def final_word(c: Confirmation) -> str:
    return "awaiting confirmation" if c.verdict == "running" else c.verdict


CLAIMS_COLUMNS = ["claim", "a", "b", "exploration: seeds 0-2", "confirmation: fresh seeds alone", "final word"]


def final_words(names, results_dir=None):
    """One row per exploration claim in `names` (exact names, in order): both arms at seeds 0-2, the exploration's and
    the confirmation's readings (on the claimed side) and the final word, the confirmation's where there is one. A
    results_dir with no plan of its own uses the committed plan."""
    import pandas as pd
    from .tables import mean_std
    by_name = {c.name: c for c in exploration(results_dir)}
    fixed = load_plan(results_dir if plan_file(results_dir).exists() else None)
    plan = {r["seed_plan_name"]: (r, c) for r, c in zip(fixed["claims"], verdicts(results_dir, fixed))}
    rows = []
    for name in filter(by_name.__contains__, names):   # another profile's names (smoke, say) are no claims of it
        c = by_name[name]
        row, conf = plan.get(name, (None, None))
        explored = _explored(c, row["side"] if row else +1)
        if conf is None:
            fresh, verdict = "not given more seeds", explored.split(":")[0]
        else:
            fresh, verdict = conf.text(), final_word(conf)
        rows.append({"seed_plan_name": name, "claim": row["claim"] if row else name,
                     "a": mean_std(c.values[0].values()), "b": mean_std(c.values[1].values()),
                     "exploration: seeds 0-2": explored, "confirmation: fresh seeds alone": fresh,
                     "final word": verdict})
    return pd.DataFrame(rows, columns=["seed_plan_name", *CLAIMS_COLUMNS])


def claims_file(name: str, results_dir=None):
    return repo_path("results", results_dir) / "claims" / f"{name}.csv"


def frame(names, save_as: str | None = None, results_dir=None):
    """final_words as a notebook shows them; save_as also writes <results_dir>/claims/<save_as>.csv, the README's."""
    t = final_words(names, results_dir)
    if save_as and results_dir is None and study_changes():   # the README's rows stay the committed study's
        print(f"results/claims/{save_as}.csv: kept as committed (not the committed study; results_dir writes yours)")
    elif save_as:
        path = claims_file(save_as, results_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        t.to_csv(path, index=False, lineterminator="\n")
    return t.drop(columns=["seed_plan_name", "a", "b"]).set_index("claim")


def decided(claims, words, rows: dict):
    """A claims table whose rows named in `rows` ({its claim: the claim as `words` names it}; `words`: frame's table)
    read their final word: its verdict, the interval it rests on, and in the evidence where it comes from. So a
    comparison has one verdict in a notebook, its takeaway and the README."""
    out = claims.copy()
    for mine, theirs in rows.items():
        word = words.loc[theirs]
        basis = word["confirmation: fresh seeds alone"]   # "confirmed: <interval>" where fresh seeds decided it
        if not basis.startswith(f"{word['final word']}: "):
            basis = word["exploration: seeds 0-2"] + " (seeds 0-2, Holm over its family)"
        i = int(np.flatnonzero(out["claim"] == mine)[0])
        out.iat[i, 1] = word["final word"]
        out.iat[i, 2] = basis.split(": ", 1)[-1]   # claims.CLAIM_COLUMNS: claim, verdict, its interval, evidence
        out.iat[i, 3] = f"seeds 0-2: {out.iat[i, 3]}; the verdict is its final word (above)"
    return out


def table(results_dir=None) -> str:
    """The plan as markdown, as docs/verdicts.md shows it."""
    plan = load_plan(results_dir)
    head = ["| claim | exploration seeds: per-seed differences | sd | effect sized for | fresh seeds | power | "
            "runs (CPU minutes a seed) |", "| --- | --- | ---: | ---: | --- | ---: | --- |"]
    rows = []
    for r in plan["claims"]:
        seeds = r["seeds"]["a"]
        fresh = f"{seeds[0]}-{seeds[-1]} (n={len(seeds)})" if seeds else f"none: {r['left_out']}"
        pw = f"{r['power']:.2f}" if r["power"] is not None else "-"
        rows.append(f"| {r['claim']} | {', '.join(f'{d:+.1f}' for d in r['diffs'])} (seeds "
                    f"{r['explored'][0]}-{r['explored'][-1]}) | {r['sd']:.2f} | {r['effect']:+.2f} | {fresh} | {pw} | "
                    f"{sum(r['minutes']):.0f} |")
    long = _long_runs([r for r in plan["claims"] if r["seeds"]["a"]],
                      [len(r["seeds"]["a"]) for r in plan["claims"] if r["seeds"]["a"]])
    n_runs = sum(2 * len(r["seeds"]["a"]) for r in plan["claims"])
    hours = sum(len(r["seeds"]["a"]) * sum(r["minutes"]) for r in plan["claims"]) / 60
    return "\n".join(head + rows + ["", f"Family: {plan['m']} claims, Holm over them (strictest level "
                                        f"{1 - plan['alpha'] / plan['m']:.1%}). Queued: {n_runs} runs ({long} of 300 "
                                        f"rounds), about {hours:.0f} CPU hours, in this order: "
                                        f"{'; '.join(plan['order'])}."])


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_plan()
    print(table())
    for c in verdicts():
        print(f"- {c.claim}: {c.text()}")
