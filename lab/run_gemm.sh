#!/usr/bin/env bash
# Issue 20's lab bench: both GEMM tasks, the catalog solution and its lab variants, checked at
# every correctness and graded shape and timed against the eager package (catalog_helper.py lab).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". About 100 s
# of wall time at most: each task stops starting new work at its --deadline-s and is killed
# at its timeout. Lab variants: r1 is round 1's solution, for comparison in the same run.
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
        --calls 20 --seeds 1 --deadline-s "$deadline" >"$DEST/$name.jsonl" 2>"$DEST/$name.stderr"
    echo "rc=$? $name $(date -u +%T)" >>"$DEST/$name.stderr"
    cat "$DEST/$name.jsonl"
}
run_task bf16-gemm 43 48 \
    "$SOL/dense/bf16/bf16_gemm_eager/src" lab/bf16-gemm/r1 lab/bf16-gemm/np lab/bf16-gemm/g16
run_task fp8-blockscale-gemm 43 48 \
    "$SOL/blockscale/fp8/fp8_blockscale_gemm_eager/src" lab/fp8-blockscale-gemm/r1 \
    lab/fp8-blockscale-gemm/s4 lab/fp8-blockscale-gemm/g16
