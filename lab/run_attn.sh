#!/usr/bin/env bash
# Issue 19's lab bench on the H200: catalog_helper.py lab for both attention tasks, the catalog
# solution's src/ first (so that its figures come before any deadline), then the lab variants.
# Output: "${OUT:-/tmp/out}/attn/{prefill,decode}.{jsonl,stderr}" and rc.txt. Whole run <= ~165 s:
# each task has its own --deadline-s (no new work after it) and a hard timeout a little above it.
set -u
cd "$(dirname "$0")/.."
PY="${KZOO_PYTHON:-python3}"
DIR="${OUT:-/tmp/out}/attn"
mkdir -p "$DIR"
SOL=catalog/solutions/gpu/h200/attention

t0=$(date +%s)
timeout -k 3 95 "$PY" scripts/gpu/catalog_helper.py lab catalog/tasks/flash-attention-prefill \
    "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src" \
    lab/flash-attention-prefill/bn64 lab/flash-attention-prefill/ws lab/flash-attention-prefill/ptr \
    --calls 20 --deadline-s 85 >"$DIR/prefill.jsonl" 2>"$DIR/prefill.stderr"
echo "prefill rc=$? wall_s=$(( $(date +%s) - t0 ))" >>"$DIR/rc.txt"

t1=$(date +%s)
timeout -k 3 62 "$PY" scripts/gpu/catalog_helper.py lab catalog/tasks/paged-attention-decode \
    "$SOL/paged_decode/fp8/paged_attention_decode_eager/src" \
    lab/paged-attention-decode/prefetch lab/paged-attention-decode/bn64s4 lab/paged-attention-decode/prefetch_bn128w8 \
    --calls 20 --deadline-s 52 >"$DIR/decode.jsonl" 2>"$DIR/decode.stderr"
echo "decode rc=$? wall_s=$(( $(date +%s) - t1 ))" >>"$DIR/rc.txt"
cat "$DIR/rc.txt"
