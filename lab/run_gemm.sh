#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab) beside the eager
# baseline; "$SOL" is the catalog solution (round 8's epi, since 505b55e). Open: round 12's dp128 and
# round 13's rs3 (FP8_CANDS="dp128 rs3": two partials in flight per consumer warpgroup, NOTES.md). Round 10 (c128,
# c128_mc0: cuBLAS's tile, ring and cluster) ran in session 24 and lost 14-19% (NOTES.md,
# "Round 10 on the H200"; sources at 79a7e78:lab/fp8-blockscale-gemm/). Candidates run in a step
# of their own after the step that times the solution alone, so a hang costs only their lines.
# Rounds 6-8's variants are at 8ad2022:lab/fp8-blockscale-gemm/ (cuda1, cuda1p128, n192, m192w3,
# n192mc), cdfc0b2 (ws3, epi), d52bdce (pp, pps).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". Two steps:
# main (the solution: --deadline-s 36 stops new work, timeout 50 s kills it) and cand
# (FP8_CANDS="NAME ..." folders under lab/fp8-blockscale-gemm/: deadline 64 s, timeout 80 s; skipped
# without any); under 150 s of wall time in all.
set -u
PY="${KZOO_PYTHON:-python3}"
DEST="${OUT:-/tmp/out}/gemm"
mkdir -p "$DEST"
SOL=catalog/solutions/gpu/h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager/src
FP8=lab/fp8-blockscale-gemm
T0=$(date +%s)
name=fp8-blockscale-gemm
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
step main 36 50 "$SOL"
cands=(); for c in ${FP8_CANDS:-}; do cands+=("$FP8/$c"); done
[ ${#cands[@]} -eq 0 ] || step cand 64 80 "${cands[@]}"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
