#!/bin/bash
# The GPU checks of the speed work, in order, as one device call (about 9.5 minutes on an H100 or H200):
#   1. the CUDA tests of the engine (graphs equal eager, captured once per run, masked steps, bf16; then compile alone
#      and with masked steps, on CUDA only: the CPU test of compile took 129 s of the device's CPU on 2026-11-28);
#   2. whole tau-0 `paper` rounds at E=5, the default (masked steps on since 2026-11-28) and +compile, which the rule in
#      BENCHMARKS.md ("Two switches waiting for a GPU") decides from: scripts/choose_switches.py applies it;
#   3. real `paper` rounds on Fashion-MNIST at tau 0.95 with the variant the rule chose, for the rest of the call
#      (label ratio and partial steps beside each round time; start-up, compiles and checkpoints counted).
# From the repository root, with Fashion-MNIST carried (scripts/bench_gpu.py says how):
#     command: bash scripts/gpu_checks.sh        carry: [".gl-data"]        timeout_s: 585
# Each part has its own time limit, so a slow part cannot eat the next one's; outputs go to $OUT when it is set.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-checks}
mkdir -p "$OUT"
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,memory.used --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/gpu.txt"
timeout 60 python3 -m pytest -q tests/test_speed.py -p no:cacheprovider -k "(cuda or masked or kept) and not compil" \
  > "$OUT/tests-masked.txt" 2>&1; tail -4 "$OUT/tests-masked.txt"
timeout 100 python3 -m pytest -q tests/test_speed.py -p no:cacheprovider -k "compil and cuda" \
  > "$OUT/tests-compile.txt" 2>&1; tail -4 "$OUT/tests-compile.txt"
echo "tests done at $(( $(date +%s) - T0 )) s"
OUT="$OUT/rounds" timeout 200 python3 scripts/gpu_step_probe.py --rounds \
  --variants default,+compile > "$OUT/rounds.log" 2>&1; grep -v "^ROW" "$OUT/rounds.log" | tail -8
echo "rounds done at $(( $(date +%s) - T0 )) s"
VARIANT=$(python3 scripts/choose_switches.py "$OUT/rounds.log" compile="$OUT/tests-compile.txt" 2> "$OUT/choice.txt")
cat "$OUT/choice.txt"; echo "real rounds with: ${VARIANT:=default}"
LEFT=$(( 560 - ( $(date +%s) - T0 ) ))
MIN=$(python3 -c "print(round(max(0.5, ($LEFT - 25) / 60), 2))")
OUT="$OUT/real" timeout $LEFT python3 scripts/gpu_real_rounds.py --minutes "$MIN" --variant "$VARIANT" \
  > "$OUT/real.log" 2>&1; tail -22 "$OUT/real.log"
echo "all done at $(( $(date +%s) - T0 )) s"
