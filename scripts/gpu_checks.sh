#!/bin/bash
# The GPU checks of the speed work as one device call that ends by about 8 minutes on an H100 or H200, leaving the
# rest of a 15-minute lease for a fixed rerun of the part that failed (PARTS picks them). Parts, in order:
#   tests  the CUDA tests of the engine (graphs equal eager, captured once per run, masked steps, the fused step, bf16:
#          with TESTS=all), then compile alone and with masked steps (CUDA only)                            <= 210 s
#   step   one WRN-28-2 on 200 images (TF32 NCHW vs bf16 NHWC, eager vs compiled, captured) and the fused one-pass
#          client step at 10-80 clients (fp32 and bf16, channels_last, eager and compiled, captured)        <= 110 s
#          (not in the default PARTS since its measurement of 2026-11-28, in BENCHMARKS.md)
#   procs  runs an hour with 3 runs sharing the GPU against 1 (scripts/gpu_procs.py: tau-0 rounds, default)  <= 140 s
#   tau0   whole tau-0 `paper` rounds at E=5: the default and $TAU0's switches (+compile; +fused measured 0.92 of
#          the default on 2026-11-28, so not again unless named); scripts/choose_switches.py applies the written rules
#          to them (each switch at most 0.90 of the default's round)                                           <= 200 s
#   real   real `paper` rounds on Fashion-MNIST at tau 0.95 with the variant the rule chose, until 500 s
# From the repository root, with Fashion-MNIST carried (scripts/bench_gpu.py says how):
#     command: bash scripts/gpu_checks.sh        carry: [".gl-data"]        timeout_s: 540
#     a rerun of some parts: PARTS="tau0 real" bash scripts/gpu_checks.sh
#     its plumbing on a CPU (tiny sizes, no CUDA): SMOKE=1 PY=.venv/bin/python bash scripts/gpu_checks.sh
# Every part has its own hard time limit (timeout -k: a run's stop handler takes SIGTERM, so SIGKILL follows 10 s
# later), so a slow part cannot eat the next one's. Everything it keeps is in $OUT, flat, at most 8 files (what the
# device tool brings back): checks.log, tests.txt, procs.log, procs.json, tau0.log, tau0.json, real.log, real.json
# (step.log and step.json instead of procs' files when step is named).
set -u
PY=${PY:-python3}   # a device machine has no venv: its python3 has torch
SM=${SMOKE:+--smoke}
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-checks}
PARTS=${PARTS:-tests procs tau0}      # step and real: measured on 2026-11-28 (BENCHMARKS.md); name them to add them
TESTS=${TESTS:-compile}               # the compile tests alone (the others passed on 2026-11-28); all: every one
TAU0=${TAU0:-default,+compile}        # +fused failed its rule on 2026-11-28 (0.92 of the default's round)
TAU0_S=${TAU0_S:-200}                 # compiling a round took over 100 s on 2026-11-28: 150 s cut +compile off
END=${END_S:-500}                      # the real rounds stop by then (seconds from the start)
TMP=$(mktemp -d)
mkdir -p "$OUT"
T0=$(date +%s)
export PYTHONUNBUFFERED=1
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/checks.log"; }
{ nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,memory.used --format=csv,noheader 2>&1
  $PY -c "import torch; print('torch', torch.__version__)"; } | tee -a "$OUT/checks.log"
# Predictions, written before the call (BENCHMARKS.md, "The step changed", the next device call): see there.
if has tests; then
  if [ "$TESTS" = all ]; then
    timeout -k 10 70 $PY -m pytest -q tests/test_speed.py tests/test_fused.py -p no:cacheprovider \
      -k "(cuda or masked or kept or fused) and not compil" > "$TMP/tests-masked.txt" 2>&1
  else
    echo "(not run: TESTS=$TESTS)" > "$TMP/tests-masked.txt"
  fi
  timeout -k 10 140 $PY -m pytest -q tests/test_speed.py tests/test_fused.py -p no:cacheprovider -k "compil and cuda" \
    > "$TMP/tests-compile.txt" 2>&1
  cat "$TMP/tests-masked.txt" "$TMP/tests-compile.txt" > "$OUT/tests.txt"
  say "tests: $(tail -1 "$TMP/tests-masked.txt") | compile: $(tail -1 "$TMP/tests-compile.txt")"
fi
if has step; then
  OUT="$TMP/step" timeout -k 10 110 $PY scripts/gpu_step_probe.py --fused --deadline 95 $SM > "$OUT/step.log" 2>&1
  cp "$TMP/step/fused.json" "$OUT/step.json" 2>/dev/null; tail -24 "$OUT/step.log"   # the log keeps what a kill cuts
  say "step done"
fi
if has procs; then   # runs an hour with 1 and 3 runs sharing the GPU (scripts/gpu_procs.py)
  OUT="$TMP/procs" timeout -k 10 140 $PY scripts/gpu_procs.py --procs 1,3 --limit 50 $SM > "$OUT/procs.log" 2>&1
  cp "$TMP/procs/procs.json" "$OUT/procs.json" 2>/dev/null; tail -6 "$OUT/procs.log"
  say "procs done"
fi
VARIANT=default
if has tau0; then
  OUT="$TMP/tau0" timeout -k 10 "$TAU0_S" $PY scripts/gpu_step_probe.py --rounds --variants "$TAU0" $SM \
    > "$OUT/tau0.log" 2>&1
  cp "$TMP/tau0/rounds.json" "$OUT/tau0.json" 2>/dev/null; grep -v "^ROW" "$OUT/tau0.log" | tail -6
  [ -f "$TMP/tests-compile.txt" ] || echo "(no compile tests in this call: compile stays off)" > "$TMP/tests-compile.txt"
  [ -f "$TMP/tests-masked.txt" ] || echo "(no fused tests in this call: fused stays off)" > "$TMP/tests-masked.txt"
  VARIANT=$($PY scripts/choose_switches.py "$OUT/tau0.log" compile="$TMP/tests-compile.txt" \
            fused="$TMP/tests-masked.txt" 2>> "$OUT/tau0.log")
  say "rule: $(tail -2 "$OUT/tau0.log" | tr '\n' ' ')-> real rounds with: ${VARIANT:=default}"
fi
if has real; then
  LEFT=$(( END - ( $(date +%s) - T0 ) ))
  if [ "$LEFT" -lt 60 ]; then
    say "real: skipped, $LEFT s left before $END s"
  else
    MIN=$($PY -c "print(round(($LEFT - 30) / 60, 2))")
    OUT="$TMP/real" timeout -k 10 "$LEFT" $PY scripts/gpu_real_rounds.py --minutes "$MIN" --variant "$VARIANT" $SM \
      > "$OUT/real.log" 2>&1
    cp "$TMP/real/rounds.json" "$OUT/real.json" 2>/dev/null; tail -6 "$OUT/real.log"
    say "real done"
  fi
fi
say "all done; kept: $(ls "$OUT" | tr '\n' ' ')($(ls "$OUT" | wc -l) files: at most 8 come back)"
rm -rf "$TMP"
