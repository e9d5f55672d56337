#!/usr/bin/env bash
# Issue 21's row kernels on the lab bench (scripts/gpu/catalog_helper.py lab): each
# solution's src/ and its lab variants, checked at every correctness and graded
# shape and timed at every graded shape with the task's eager package.
# Run from the repository root. Everything goes to ${OUT:-/tmp/out}/rows/.
# Wall budget about 150 s: each group has a hard timeout, each task a --deadline-s.
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/rows"
mkdir -p "$O"
S=catalog/solutions/gpu/h200
T=catalog/tasks
L=lab
t0=$(date +%s)

# 1. topk-logits (new algorithm: its own process, so a fault cannot spoil the rest)
timeout -k 3 50 "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src $L/topk-logits/t2048w4 $L/topk-logits/seg64k \
  --calls 20 --seeds 2 --deadline-s 43 >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 2. cross-entropy, layernorm, rmsnorm-residual (one process)
timeout -k 3 56 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/cross-entropy:14:$S/loss/cross_entropy/bf16/cross_entropy_eager/src,$L/cross-entropy/b4096w4" \
  "$T/layernorm:17:$S/norm/layernorm/bf16/layernorm_eager/src,$L/layernorm/rpp1,$L/layernorm/ept16" \
  "$T/rmsnorm-residual:17:$S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src,$L/rmsnorm-residual/rpp1,$L/rmsnorm-residual/ept16" \
  >"$O/norms.jsonl" 2>"$O/norms.err"
echo "norms rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 3. the four that met the target at shape 0, at every graded shape; softmax and
#    fp8-quant-per-token have a new path for rows of 16k-32k columns (shape 1 / 2).
#    silu-and-mul last: its CUDA extension build may not fit the budget.
left=$(( 147 - ($(date +%s) - t0) ))
if [ "$left" -gt 15 ]; then
  timeout -k 3 "$left" "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
    "$T/softmax:12:$S/norm/softmax/bf16/softmax_eager/src,$L/softmax/w32" \
    "$T/fp8-quant-per-token:12:$S/quant/per_token/fp8/fp8_quant_per_token_eager/src,$L/fp8-quant-per-token/w32" \
    "$T/rotary-embedding:7:$S/attention/rope/bf16/rotary_embedding_eager/src" \
    "$T/silu-and-mul:7:$S/activation/swiglu/bf16/silu_and_mul_eager/src" \
    >"$O/others.jsonl" 2>"$O/others.err"
  echo "others rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi
cat "$O/summary.txt"
