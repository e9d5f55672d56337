#!/usr/bin/env bash
# Issue 21: the row kernels on the lab bench (scripts/gpu/catalog_helper.py lab).
# Each task's current solution src/ (the baseline to beat) and the open round's variants
# (lab/<task>/NOTES.md; none while a round is being written: then the solutions alone),
# checked at every correctness and graded shape (comparator
# and the board's elementwise bound) and timed at every graded shape beside the eager package.
# Each task runs in its own process, so a fault in one cannot spoil the rest.
# Run from the repository root. Everything goes to ${OUT:-/tmp/out}/rows/.
# Wall budget 170 s: each group has a hard timeout (its --deadline-s, counted from the
# task's own start after torch's import, stops new work ~10 s before it); the last group
# gets what is left (round 3 took 100 s for 3 + 4 + 4 sources).
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/rows"
mkdir -p "$O"
S=catalog/solutions/gpu/h200
T=catalog/tasks
L=lab
t0=$(date +%s)
: >"$O/summary.txt"

# 1. topk-logits: the solution (round 4's fused kernel at V > 32768, the atomic-slot one at
#    one segment a row).
timeout -k 3 80 "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src \
  --calls 20 --seeds 2 --deadline-s 68 >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 2. layernorm: the solution (round 4's persist).
timeout -k 3 50 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/layernorm:40:$S/norm/layernorm/bf16/layernorm_eager/src" \
  >"$O/layernorm.jsonl" 2>"$O/layernorm.err"
echo "layernorm rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 3. rmsnorm-residual, in what is left (at most 30 s): the solution alone, a drift
#    reference for the figures above (no round-4 variant).
left=$(( 166 - ($(date +%s) - t0) ))
[ "$left" -gt 30 ] && left=30
if [ "$left" -gt 15 ]; then
  timeout -k 3 "$left" "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
    "$T/rmsnorm-residual:$(( left - 10 )):$S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src" \
    >"$O/rmsnorm-residual.jsonl" 2>"$O/rmsnorm-residual.err"
  echo "rmsnorm-residual rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
else
  echo "rmsnorm-residual skipped: ${left}s left" >>"$O/summary.txt"
fi
cat "$O/summary.txt"
