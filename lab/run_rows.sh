#!/usr/bin/env bash
# Issue 21, round 3: the row kernels on the lab bench (scripts/gpu/catalog_helper.py lab).
# Each task's current solution src/ (the baseline to beat) and its round-3 variants
# (lab/<task>/NOTES.md), checked at every correctness and graded shape (comparator and
# the board's elementwise bound) and timed at every graded shape beside the eager package.
# Each task runs in its own process, so a fault in one cannot spoil the rest.
# Run from the repository root. Everything goes to ${OUT:-/tmp/out}/rows/.
# Wall budget 170 s: each group has a hard timeout (its --deadline-s, counted from the
# task's own start after torch's import, stops new work ~8 s before it); the last group
# gets what is left.
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/rows"
mkdir -p "$O"
S=catalog/solutions/gpu/h200
T=catalog/tasks
L=lab
t0=$(date +%s)
: >"$O/summary.txt"

# 1. topk-logits: the solution (round 2's atomic slots) against one-warp pass 1 with
#    prefix-sum slots and a shared row threshold, tiles of 512 (w1split) and 1024 (w1deep).
timeout -k 3 66 "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src $L/topk-logits/w1split $L/topk-logits/w1deep \
  --calls 20 --seeds 2 --deadline-s 56 >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 2. layernorm: the solution against one tuple reduction of shifted moments at the
#    solution's layout (onepass), at 64 elements per thread (onepass_ept64), and with
#    2 rows per program (onepass_rpp2).
timeout -k 3 46 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/layernorm:36:$S/norm/layernorm/bf16/layernorm_eager/src,$L/layernorm/onepass,$L/layernorm/onepass_ept64,$L/layernorm/onepass_rpp2" \
  >"$O/layernorm.jsonl" 2>"$O/layernorm.err"
echo "layernorm rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 3. rmsnorm-residual, in what is left (at most 46 s): the solution against streaming
#    hints (stream), 64 elements per thread (ept64), and both (ept64s).
left=$(( 166 - ($(date +%s) - t0) ))
[ "$left" -gt 46 ] && left=46
if [ "$left" -gt 12 ]; then
  timeout -k 3 "$left" "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
    "$T/rmsnorm-residual:$(( left - 10 )):$S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src,$L/rmsnorm-residual/stream,$L/rmsnorm-residual/ept64,$L/rmsnorm-residual/ept64s" \
    >"$O/rmsnorm-residual.jsonl" 2>"$O/rmsnorm-residual.err"
  echo "rmsnorm-residual rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
else
  echo "rmsnorm-residual skipped: ${left}s left" >>"$O/summary.txt"
fi
cat "$O/summary.txt"
