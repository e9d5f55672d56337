#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab) beside the eager
# baseline; "$SOL" is the catalog solution (round 7's n192, since fd0083a). Round 8's candidates
# (NOTES.md "Round 8"): ws3 (192x192, three consumer warpgroups, two m64n96k32 chains a scale
# block) and epi (the solution with a TMA-store epilogue); neither has a new mbarrier protocol
# (epi adds only bulk async-groups and named barriers), so both share the main step with the
# solution, as round 7's n192 and m192w3 did. Rounds 6 and 7's variants (cuda1, cuda1p128, n192,
# m192w3, n192mc) are at 8ad2022:lab/fp8-blockscale-gemm/; a candidate with a new barrier protocol
# (a hang is its likeliest failure) goes in a step of its own, as round 7's n192mc did
# (`step mc 36 50 "$FP8/n192mc"`), so that a hang costs only its own lines.
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". One step:
# --deadline-s 72 stops new work, timeout 88 s kills it; under 150 s of wall time in all.
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
step main 72 88 "$SOL" "$FP8/ws3" "$FP8/epi"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
