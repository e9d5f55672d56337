#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab) beside the eager
# baseline; "$SOL" is the catalog solution (round 8's epi, since 505b55e). Round 9's candidates
# (NOTES.md "Round 9"): pp, the solution with its two consumer warpgroups issuing their k-blocks'
# wgmmas in a strict alternation, ordered by two named barriers, and pps, pp with each tile's first
# scales loaded a tile ahead. Both carry a new barrier protocol (a hang is its likeliest failure),
# so they run in a step of their own after the step that times the solution alone: a hang costs
# only the pp step's lines (both eager figures are the drift reference between the two steps). Rounds 6-8's variants are at 8ad2022:lab/fp8-blockscale-gemm/ (cuda1, cuda1p128, n192,
# m192w3, n192mc) and at cdfc0b2:lab/fp8-blockscale-gemm/ (ws3, epi).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". Two steps:
# main (the solution: --deadline-s 36 stops new work, timeout 50 s kills it) and pp (pp and pps:
# deadline 64 s, timeout 80 s); under 150 s of wall time in all.
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
# Round 9 (pp, pps) ran in session 23 and is decided (pp 1.2% faster by events, level by ncu: not
# promoted; its sources at d52bdce:lab/fp8-blockscale-gemm/). FP8_CANDS="NAME ..." (folders under
# lab/fp8-blockscale-gemm/) times the next round's candidates in a step of their own.
if [ -n "${FP8_CANDS:-}" ]; then
    cands=(); for c in $FP8_CANDS; do cands+=("$FP8/$c"); done
    step cand 64 80 "${cands[@]}"
fi
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
