#!/usr/bin/env bash
# Issue 20's bf16-gemm lab bench (lab/bf16-gemm/NOTES.md): the catalog solution (Triton, "$SOL")
# and the CUDA C++ candidates cuda1 and sk1 (cuda1 + stream-K), each checked at every correctness
# and graded shape against the comparator and the board's elementwise bound and timed at every
# graded shape (catalog_helper.py lab) beside the eager baseline (cuBLAS, A @ B.t()). Step 1: the
# solution and cuda1 (63 s in session 23). Step 2: cuda1 and sk1 in one process (the timing
# interleaves them shape by shape: the A/B of the stream-K schedule; cuda1's library is already
# built). A hang is the likeliest failure of a new protocol: each step runs under `timeout 90`,
# --deadline-s 70 stops new work first. Run from the repository root on the H200; output under
# "${OUT:-/tmp/out}/bf16/". Under ~150 s of wall time (2 x 63-75 s; 2 x 93 s if both time out).
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
step sk1 70 90 "$LAB/cuda1" "$LAB/sk1"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
