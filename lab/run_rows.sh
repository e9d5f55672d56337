#!/usr/bin/env bash
# Issue 21's row kernels on the lab bench (scripts/gpu/catalog_helper.py lab): each
# solution's src/ and its lab variants, checked at every correctness and graded
# shape and timed at every graded shape with the task's eager package.
# Run from the repository root. Everything goes to ${OUT:-/tmp/out}/rows/.
# Wall budget 120 s: each group has a hard timeout, each task a --deadline-s.
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/rows"
mkdir -p "$O"
S=catalog/solutions/gpu/h200
T=catalog/tasks
L=lab
t0=$(date +%s)

# 1. topk-logits (its own process, so a fault cannot spoil the rest): the solution
#    (tile 2048, 4 warps) against the atomic-slot pass 1 at tiles 2048 and 4096.
timeout -k 3 44 "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src $L/topk-logits/atomic2k $L/topk-logits/atomic4k \
  --calls 20 --seeds 2 --deadline-s 38 >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 2. cross-entropy (split64k: long rows over several programs), layernorm (rows per program by H), rmsnorm-residual (1 row per program)
timeout -k 3 30 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/cross-entropy:7:$S/loss/cross_entropy/bf16/cross_entropy_eager/src,$L/cross-entropy/split64k" \
  "$T/layernorm:9:$S/norm/layernorm/bf16/layernorm_eager/src,$L/layernorm/ept16" \
  "$T/rmsnorm-residual:9:$S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src,$L/rmsnorm-residual/ept16" \
  >"$O/norms.jsonl" 2>"$O/norms.err"
echo "norms rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"

# 3. softmax, fp8-quant-per-token, rotary-embedding: the solutions only.
left=$(( 116 - ($(date +%s) - t0) ))
if [ "$left" -gt 10 ]; then
  [ "$left" -gt 22 ] && left=22
  timeout -k 3 "$left" "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
    "$T/softmax:6:$S/norm/softmax/bf16/softmax_eager/src" \
    "$T/fp8-quant-per-token:6:$S/quant/per_token/fp8/fp8_quant_per_token_eager/src" \
    "$T/rotary-embedding:5:$S/attention/rope/bf16/rotary_embedding_eager/src" \
    >"$O/others.jsonl" 2>"$O/others.err"
  echo "others rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi

# 4. silu-and-mul last, in whatever is left (its CUDA extension build may not fit).
left=$(( 117 - ($(date +%s) - t0) ))
if [ "$left" -gt 12 ]; then
  timeout -k 2 "$left" "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
    "$T/silu-and-mul:$(( left - 4 )):$S/activation/swiglu/bf16/silu_and_mul_eager/src" \
    >"$O/silu.jsonl" 2>"$O/silu.err"
  echo "silu-and-mul rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi
cat "$O/summary.txt"
