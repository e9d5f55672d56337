#!/usr/bin/env bash
# Issue 21, round 4: the row kernels on the lab bench (scripts/gpu/catalog_helper.py lab).
# Each task's current solution src/ (the baseline to beat) and its round-4 variants
# (lab/<task>/NOTES.md, "Round 4"), checked at every correctness and graded shape (comparator
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

# 1. topk-logits: the solution against pick (w1split's pass 1 at >= 2 segments per row,
#    the solution's at one) and fused (pass 2 done in the streaming kernel by the row's
#    last segment; packed int64 candidate keys).
timeout -k 3 80 "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src $L/topk-logits/pick $L/topk-logits/fused \
  --calls 20 --seeds 2 --deadline-s 68 >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 2. layernorm: the solution against pick (onepass_ept64 at H = 8192, the solution
#    elsewhere) and persist (pick + one persistent program per SM at H >= 16384).
timeout -k 3 50 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/layernorm:40:$S/norm/layernorm/bf16/layernorm_eager/src,$L/layernorm/pick,$L/layernorm/persist" \
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
