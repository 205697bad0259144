#!/bin/bash
# The GPU checks of the speed work as one device call on an H100 or H200 that ends by 8 minutes whatever parts are
# named (END_S, 465 s from its start: each part gets the time it asks for or what is left, whichever is less, and a
# part with less than its minimum left is skipped and says so), leaving the rest of a 15-minute lease for a rerun of
# the part that failed (PARTS picks them). Parts, in the order they run:
#   graphs every client its own CUDA graph on its own stream against the vmap step, 10 and 40 clients, fp32 (and the
#          per-client graphs alone in bf16: vmap(grad) fails under autocast), a row written as it is measured
#          (scripts/client_graphs_probe.py; 150 / 60 s); its rule is in BENCHMARKS.md
#   tests  the engine's CUDA tests: with TESTS=all first every one but compile's (graphs equal eager, captured once
#          per run, masked steps, bf16; 70 / 30 s), then compile's own tests (140 / 60 s)
#   tau0   whole tau-0 `paper` rounds at E=5: the default, +wide_passes and +compile ($TAU0;
#          scripts/gpu_step_probe.py --rounds; 200 / 45 s); +compile only if compile's own tests passed in this call
#          and 150 s are left; gpu_step_probe.py --choose applies the written rules to them (compile: at most 0.90
#          of the default's round; wide_passes: its evaluation phase at most 0.80 of the default's)
# They read no data (the tests and the tau-0 rounds make their own random images), so carry nothing:
#     command: bash scripts/gpu_checks.sh                                               timeout_s: 540
#     its plumbing on a CPU (tiny sizes, no CUDA): SMOKE=1 PY=.venv/bin/python bash scripts/gpu_checks.sh
# Every part runs under `timeout -k 10` (a run's stop handler takes SIGTERM; SIGKILL follows 10 s later, counted in
# its share). What it keeps is in $OUT, flat, at most 4 files (the device tool brings back 8): checks.log (this
# script's own lines), parts.log (every part's output, one after another, the tests' included), graphs.md, tau0.json.
set -u
PY=${PY:-python3}   # a device machine has no venv: its python3 has torch
SM=${SMOKE:+--smoke}
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-checks}
PARTS=${PARTS:-graphs tests tau0}
TESTS=${TESTS:-compile}               # the compile tests alone (the others passed on 2026-11-28); all: every one
TAU0=${TAU0:-default,+wide_passes,+compile}   # the fused step and client_streams left the package on 2026-12-01
END=${END_S:-465}                     # every part has ended by then (seconds from the start); the rule's 10 s after
                                      # tau0 and the closing lines end before 480 s
TMP=$(mktemp -d)
mkdir -p "$OUT"
T0=$(date +%s)
export PYTHONUNBUFFERED=1
declare -A RC                         # each part's exit status (124 or 137: its time limit stopped it)
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
now() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(now) s] $*" | tee -a "$OUT/checks.log"; }
# budget PART WANT MIN: LIMIT becomes WANT, or the seconds left before END less the 10 s of a kill, if fewer;
# fails (and says so) when fewer than MIN are left
budget() {
  local left=$(( END - $(now) - 10 ))
  LIMIT=$(( left < $2 ? left : $2 ))
  [ "$LIMIT" -ge "$3" ] && return 0
  say "$1: skipped, ${left} s left before ${END} s (it needs at least $3 s)"; return 1
}
# part NAME LIMIT CMD...: CMD under its time limit, its output in $TMP/NAME.out and appended to parts.log
part() {
  local name=$1 limit=$2; shift 2
  timeout -k 10 "$limit" "$@" > "$TMP/$name.out" 2>&1
  RC[$name]=$?
  { echo "===== $name: $* (limit $limit s, exit ${RC[$name]})"; cat "$TMP/$name.out"; } >> "$OUT/parts.log"
}
# passed NAME: the pytest part NAME ran in this call, inside its limit, and passed (exit 0, and some test passed)
passed() { [ "${RC[$1]:-none}" = 0 ] && tail -1 "$TMP/$1.out" | grep -q " passed"; }
last() { if [ -f "$TMP/$1.out" ]; then tail -1 "$TMP/$1.out"; else echo "(not run)"; fi; }

{ timeout 30 nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,memory.used --format=csv,noheader 2>&1
  timeout 60 $PY -c "import torch; print('torch', torch.__version__)" 2>&1; } | tee -a "$OUT/checks.log"
# Predictions, written before the call (BENCHMARKS.md, "The next device call, prepared"): see there.
if has graphs && budget graphs 150 60; then
  part graphs "$LIMIT" env OUT="$TMP/graphs" $PY scripts/client_graphs_probe.py $SM
  cp "$TMP/graphs/client-graphs.md" "$OUT/graphs.md" 2>/dev/null
  say "graphs (exit ${RC[graphs]}): $(grep -c '^| [fb]' "$TMP/graphs.out" 2>/dev/null) rows"
fi
if has tests; then
  if [ "$TESTS" = all ] && budget tests-cuda 70 30; then
    part tests-cuda "$LIMIT" $PY -m pytest -q tests/test_speed.py -p no:cacheprovider \
      -k "(cuda or masked or kept) and not compil"
  fi
  if budget tests-compile 140 60; then
    part tests-compile "$LIMIT" $PY -m pytest -q tests/test_speed.py -p no:cacheprovider -k "compil and cuda"
  fi
  say "tests: $(last tests-cuda) | compile: $(last tests-compile) (exit ${RC[tests-compile]:-none})"
fi
VARIANT=default
if has tau0; then
  V=default   # the default, then each of $TAU0's variants whose switches passed their CUDA tests in this call
  for v in ${TAU0//,/ }; do
    if [ "$v" = default ]; then continue
    elif [[ $v == *compile* ]] && ! passed tests-compile; then
      say "tau0: $v left out: compile's own tests did not pass in this call"
    else V="$V,$v"; fi
  done
  if budget tau0 "${TAU0_S:-200}" 45; then
    if [[ $V == *compile* ]] && [ "$LIMIT" -lt 150 ]; then   # compiling took over 100 s on 2026-11-28
      say "tau0: the compile variants left out: $LIMIT s left, under the 150 s they need"
      V=$(echo "$V" | tr , '\n' | grep -v compile | paste -sd, -)
    fi
    part tau0 "$LIMIT" env OUT="$TMP/tau0" $PY scripts/gpu_step_probe.py --rounds --variants "$V" $SM
    cp "$TMP/tau0/rounds.json" "$OUT/tau0.json" 2>/dev/null
    # the rule counts compile's tests not run here as not passed
    [ -f "$TMP/tests-compile.out" ] || echo "(tests-compile: not run in this call)" > "$TMP/tests-compile.out"
    VARIANT=$(timeout 10 $PY scripts/gpu_step_probe.py --choose "$TMP/tau0.out" compile="$TMP/tests-compile.out" \
              2> "$TMP/rule.txt")
    { echo "===== rule (scripts/gpu_step_probe.py --choose)"; cat "$TMP/rule.txt"; } >> "$OUT/parts.log"
    say "tau0 ($V, exit ${RC[tau0]}); rule: $(tr '\n' ' ' < "$TMP/rule.txt")-> the variant the rules choose: ${VARIANT:=default}"
  fi
fi
# at most 8 files come back: past checks.log, parts.log and 6 others (never, with these parts), the rest is
# appended to parts.log and removed
for f in $(ls "$OUT" | grep -vx -e checks.log -e parts.log | tail -n +7); do
  { echo "===== $f (appended here: at most 8 files come back)"; cat "$OUT/$f"; } >> "$OUT/parts.log"; rm -f "$OUT/$f"
done
say "all done; kept: $(ls "$OUT" | tr '\n' ' ')($(ls "$OUT" | wc -l) files: at most 8 come back)"
rm -rf "$TMP"
