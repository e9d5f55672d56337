#!/usr/bin/env bash
# Issue 20's lab bench (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm candidates, each
# checked at every correctness and graded shape against the comparator and the board's
# elementwise bound and timed at every graded shape (catalog_helper.py lab) beside the eager
# baseline; "$SOL" is the catalog solution (round 7's n192, since fd0083a). No round-8 candidate
# yet: the solution alone, a drift reference. Rounds 6 and 7's variants (cuda1, cuda1p128, n192,
# m192w3, n192mc) are at 8ad2022:lab/fp8-blockscale-gemm/; a candidate with a new barrier protocol
# (a hang is its likeliest failure) goes in a step of its own, as round 7's n192mc did
# (`step mc 36 50 "$FP8/n192mc"`), so that a hang costs only its own lines.
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". Two steps:
# --deadline-s 72 / 36 stop new work, timeout 88 / 50 s kill them; under 150 s of wall time in all.
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
step main 72 88 "$SOL"
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
