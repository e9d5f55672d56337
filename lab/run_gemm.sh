#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab), beside the catalog
# solution (round 4's `pf`; round 4's candidates are at 785395f:lab/) as the timed baseline.
# Round 6: cuda1 (CUDA C++ sm_90a, promotion every 32 products) and cuda1p128 (the same, every
# 128: the bound is atol 0.3 now); each builds with nvcc at import (~5 s each here).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". One step:
# --deadline-s 115 stops new work, timeout 135 s kills it; under 150 s of wall time in all.
set -u
PY="${KZOO_PYTHON:-python3}"
DEST="${OUT:-/tmp/out}/gemm"
mkdir -p "$DEST"
SOL=catalog/solutions/gpu/h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager/src
FP8=lab/fp8-blockscale-gemm
T0=$(date +%s)
name=fp8-blockscale-gemm
echo "== $name $(date -u +%T)" >&2
timeout -k 3 135 "$PY" scripts/gpu/catalog_helper.py lab "catalog/tasks/$name" \
    "$SOL" "$FP8/cuda1" "$FP8/cuda1p128" \
    --calls 20 --seeds 1 --deadline-s 115 >"$DEST/$name.jsonl" 2>"$DEST/$name.stderr"
echo "rc=$? $name $(( $(date +%s) - T0 )) s" >>"$DEST/$name.stderr"
cat "$DEST/$name.jsonl"
tail -n 40 "$DEST/$name.stderr"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
