#!/bin/bash
# The GPU checks of the speed work, in order, as one device call (under 10 minutes on an H100 or H200):
#   1. the CUDA tests of the engine (graphs equal eager, captured once per run, masked steps, compile, bf16);
#   2. whole E=5 `paper` rounds per speed variant (the waiting switches: compile, masked_steps, both), which the rule
#      in BENCHMARKS.md ("Two switches waiting for a GPU") decides from;
#   3. real `paper` rounds on Fashion-MNIST at tau 0.95 (label ratio and partial steps beside each round time).
# From the repository root, with Fashion-MNIST carried (scripts/bench_gpu.py says how):
#     command: bash scripts/gpu_checks.sh        carry: [".gl-data"]        timeout_s: 580
# Each part has its own time limit, so a slow part cannot eat the next one's; outputs go to $OUT when it is set.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-checks}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
timeout 150 python3 -m pytest -q tests/test_speed.py -p no:cacheprovider -k "cuda or compile or masked or kept" \
  2>&1 | tail -15 | tee "$OUT/tests.txt"
OUT="$OUT/rounds" timeout 230 python3 scripts/gpu_step_probe.py --rounds \
  --variants default,+compile,+masked_steps,+compile+masked_steps 2>&1 | tail -20
OUT="$OUT/real" timeout 170 python3 scripts/gpu_real_rounds.py --minutes 2.5 2>&1 | tail -25
