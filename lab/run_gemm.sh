#!/usr/bin/env bash
# Issue 20's lab bench: both GEMM tasks, the catalog solution and its lab variants, checked at
# every correctness and graded shape and timed against the eager package (catalog_helper.py lab).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". About 170 s
# of wall time at most: each task stops starting new work at its --deadline-s and is killed
# at its timeout.
set -u
PY="${KZOO_PYTHON:-python3}"
DEST="${OUT:-/tmp/out}/gemm"
mkdir -p "$DEST"
SOL=catalog/solutions/gpu/h200/gemm
run_task() {  # name deadline_s timeout_s src...
    local name=$1 deadline=$2 limit=$3
    shift 3
    echo "== $name $(date -u +%T)" >&2
    timeout -k 5 "$limit" "$PY" scripts/gpu/catalog_helper.py lab "catalog/tasks/$name" "$@" \
        --calls 20 --deadline-s "$deadline" >"$DEST/$name.jsonl" 2>"$DEST/$name.stderr"
    echo "rc=$? $name $(date -u +%T)" >>"$DEST/$name.stderr"
    cat "$DEST/$name.jsonl"
}
run_task bf16-gemm 70 80 \
    "$SOL/dense/bf16/bf16_gemm_eager/src" lab/bf16-gemm/tma_ws lab/bf16-gemm/tma_s4 lab/bf16-gemm/ptr
run_task fp8-blockscale-gemm 70 80 \
    "$SOL/blockscale/fp8/fp8_blockscale_gemm_eager/src" lab/fp8-blockscale-gemm/tma_ws \
    lab/fp8-blockscale-gemm/bm64x2 lab/fp8-blockscale-gemm/ptr
