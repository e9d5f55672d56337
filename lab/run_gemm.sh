#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab) beside the eager
# baseline; "$SOL" is the catalog solution (round 8's epi, since 505b55e). Round 10's candidates
# (NOTES.md "Round 10"): c128, cuBLAS's shape (128x128x128 tiles, 6 stages, clusters of two CTAs
# multicasting B's box), and c128_mc0, the same kernel built with KZOO_MC=0 (no cluster: the
# control; c128_mc0/ loads c128's module under a knob, so both libraries sit in one process).
# c128 carries a cluster barrier protocol (a hang is its likeliest failure), so the candidates run
# in a step of their own after the step that times the solution alone: a hang costs only the
# candidate step's lines (both eager figures are the drift reference between the two steps);
# c128_mc0 goes first, so its correctness lines are out before c128's. Rounds 6-8's variants are
# at 8ad2022:lab/fp8-blockscale-gemm/ (cuda1, cuda1p128, n192, m192w3, n192mc) and at
# cdfc0b2:lab/fp8-blockscale-gemm/ (ws3, epi); round 9's (pp, pps) at d52bdce.
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". Two steps:
# main (the solution: --deadline-s 36 stops new work, timeout 50 s kills it) and cand (c128_mc0,
# c128, or FP8_CANDS="NAME ..." folders under lab/fp8-blockscale-gemm/: deadline 64 s, timeout
# 80 s); under 150 s of wall time in all.
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
# promoted). Round 10 by default; FP8_CANDS="NAME ..." times other candidates in its place.
cands=(); for c in ${FP8_CANDS:-c128_mc0 c128}; do cands+=("$FP8/$c"); done
step cand 64 80 "${cands[@]}"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
