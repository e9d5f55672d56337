#!/usr/bin/env bash
# Issue 20's bf16-gemm lab bench (lab/bf16-gemm/NOTES.md): the catalog solution (Triton, "$SOL")
# and the CUDA C++ candidate cuda1, each checked at every correctness and graded shape against
# the comparator and the board's elementwise bound and timed at every graded shape
# (catalog_helper.py lab) beside the eager baseline (cuBLAS, A @ B.t()). cuda1 has a new mbarrier
# protocol (a hang is its likeliest failure): the step runs under `timeout 90`, --deadline-s 70
# stops new work first. Run from the repository root on the H200; output under
# "${OUT:-/tmp/out}/bf16/". Under 100 s of wall time.
set -u
PY="${KZOO_PYTHON:-python3}"
DEST="${OUT:-/tmp/out}/bf16"
mkdir -p "$DEST"
SOL=catalog/solutions/gpu/h200/gemm/dense/bf16/bf16_gemm_eager/src
LAB=lab/bf16-gemm
T0=$(date +%s)
name=bf16-gemm
step() {  # step TAG DEADLINE TIMEOUT SRC...
    local tag=$1 dl=$2 to=$3
    shift 3
    echo "== $name $tag $(date -u +%T)" >&2
    timeout -k 3 "$to" "$PY" scripts/gpu/catalog_helper.py lab "catalog/tasks/$name" "$@" \
        --calls 20 --seeds 1 --deadline-s "$dl" >"$DEST/$name.$tag.jsonl" 2>"$DEST/$name.$tag.stderr"
    echo "rc=$? $name $tag $(( $(date +%s) - T0 )) s" >>"$DEST/$name.$tag.stderr"
    cat "$DEST/$name.$tag.jsonl"
    tail -n 30 "$DEST/$name.$tag.stderr"
}
step cuda1 70 90 "$SOL" "$LAB/cuda1"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
