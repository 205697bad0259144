"""The rules of BENCHMARKS.md ("Two switches waiting for a GPU"; "The step changed", rule 3), applied to a rounds probe's
rows, fixed before the rows exist: a switch becomes part of the variant the real rounds run with when its CUDA tests
passed and its whole tau-0 `paper` rounds (median) take at most 0.90 of the default's:
  - compile (torch.compile of the vectorized step);
  - fused (the clients as one fused network);
  - client_streams (every client its own captured step on its own CUDA stream, in the sequential engine);
and one switch by its phase ("The passes outside the step", rule 9): wide_passes joins when its median evaluation
phase (time_sbn + time_eval) takes at most 0.80 of the default's and its median round no more than the default's (its
float path is tested on the CPU; no CUDA tests of its own).
masked_steps (no more than the default's) was decided on an H200 on 2026-11-28 and is part of the default since.
Prints the variant (`default`, `default+fused`, `default+fused+compile`, ...) on stdout and the reasoning on stderr.

    python3 scripts/choose_switches.py ROUNDS_LOG compile=TESTS_LOG fused=TESTS_LOG
ROUNDS_LOG holds `ROW {json}` lines from `gpu_step_probe.py --rounds`; each TESTS_LOG the pytest output of that
switch's CUDA tests (a log with no pytest summary line, or with a FAILED or ERROR line, counts as failed).
"""
from __future__ import annotations

import json
import statistics
import sys

# the most a switch's median round may take, as a share of the default's
RULE = {"fused": 0.90, "compile": 0.90, "client_streams": 0.90}   # fused: BENCHMARKS.md, "The step changed", rule 3;
                                                                  # client_streams: rule 10
# the most a switch's median phase may take, as a share of the default's (its round: at most the default's)
PHASE_RULE = {"wide_passes": (("time_sbn", "time_eval"), 0.80)}


def choose(rows: list[dict], tests: dict[str, str]) -> tuple[str, list[str]]:
    """The variant the real rounds run with, and why: each switch of RULE measured against the default."""
    by = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r["round_s"])
    why, chosen = [], []
    if "default" not in by:
        return "default", ["no default rounds: nothing to compare with, the default stays"]
    base = statistics.median(by["default"])
    for switch, share in RULE.items():
        rounds, log = by.get("+" + switch), tests.get(switch, "")
        tests_ran = " passed" in log or " failed" in log
        failed = [ln for ln in log.splitlines() if ln.startswith(("FAILED", "ERROR"))]
        if not rounds:
            why.append(f"{switch}: not measured (no rounds), stays off")
        elif not tests_ran or failed:
            why.append(f"{switch}: CUDA tests {'did not finish' if not tests_ran else 'failed: ' + failed[0]}, "
                       "stays off")
        else:
            med = statistics.median(rounds)
            ok = med <= share * base
            why.append(f"{switch}: median round {med:.2f} s vs default {base:.2f} s ({med / base:.3f}; the rule "
                       f"asks <= {share:.2f}): {'on' if ok else 'off'}")
            chosen += [switch] if ok else []
    for switch, (phases, share) in PHASE_RULE.items():
        mine = [r for r in rows if r["variant"] == "+" + switch]
        if not mine:
            why.append(f"{switch}: not measured (no rounds), stays off")
            continue
        phase = lambda rs: statistics.median(sum(r.get(p, 0.0) for p in phases) for r in rs)  # noqa: E731
        base_phase = phase([r for r in rows if r["variant"] == "default"])
        med, med_round = phase(mine), statistics.median(r["round_s"] for r in mine)
        ok = med <= share * base_phase and med_round <= base
        why.append(f"{switch}: median {' + '.join(phases)} {med:.3f} s vs default {base_phase:.3f} s "
                   f"({med / base_phase:.3f}; the rule asks <= {share:.2f}), round {med_round:.2f} s vs {base:.2f} s "
                   f"(at most the default's): {'on' if ok else 'off'}")
        chosen += [switch] if ok else []
    return "default" + "".join("+" + s for s in chosen), why


def main(argv=None) -> int:
    rounds_log, *pairs = argv or sys.argv[1:]
    rows = [json.loads(ln[4:]) for ln in open(rounds_log, errors="replace") if ln.startswith("ROW ")]
    tests = {k: open(v, errors="replace").read() for k, v in (p.split("=", 1) for p in pairs)}
    variant, why = choose(rows, tests)
    print("\n".join(why), file=sys.stderr)
    print(variant)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
