#!/usr/bin/env bash
# Issue 20's bf16-gemm lab bench (lab/bf16-gemm/NOTES.md): the catalog solution (Triton, "$SOL")
# and the CUDA C++ base cuda1 (and any open round's candidates), each checked at every correctness
# and graded shape against the comparator and the board's elementwise bound and timed at every
# graded shape (catalog_helper.py lab) beside the eager baseline (cuBLAS, A @ B.t()), in one
# process (the timing interleaves them shape by shape). A hang is the likeliest failure of a new
# protocol: the step runs under `timeout 130`, --deadline-s 110 stops new work first; the lab
# prints each source's lines as it goes (the solution first). Run from the repository root on the
# H200; output under "${OUT:-/tmp/out}/bf16/". Under ~140 s of wall time.
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
# One process (session 24): lab/pick.py compares each candidate with the solution's events, which
# are then from the same process. No open round: sk1 (round 2) and mc1 (round 3) are decided
# (NOTES.md); add a round's folders after cuda1.
step cuda1 110 130 "$SOL" "$LAB/cuda1"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
