#!/usr/bin/env bash
# Issue 20's lab bench, round 3 (lab/fp8-blockscale-gemm/NOTES.md): fp8-blockscale-gemm's
# candidates that promote every 32 (k32, k32u) or 64 (k64) products, beside the catalog solution
# (promote-every-32 through max_num_imprecise_acc) and the eager package (cuBLAS), each checked at
# every correctness and graded shape against the comparator and the board's elementwise bound and
# timed at every graded shape (catalog_helper.py lab); then each candidate's accumulation error
# near zero at 2048x2048x8192 (zprobe.py, with r1's promote-every-128 for the model's
# calibration, and cuBLAS through the eager package: which interval does it promote at?); then, time left, Nsight Compute's reading of bf16-gemm's solution and eager
# package at its graded shapes (ncu_package.py, as scripts/gpu/fidelity.sh runs it).
# Run from the repository root on the H200; output under "${OUT:-/tmp/out}/gemm/". Every step
# has its own timeout, and they sum to under 150 s of wall time: 73 + 20 + 2 x 27 and two sums.
set -u
PY="${KZOO_PYTHON:-python3}"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
DEST="${OUT:-/tmp/out}/gemm"
mkdir -p "$DEST"
SOL=catalog/solutions/gpu/h200/gemm
FP8=lab/fp8-blockscale-gemm
T0=$(date +%s)
run_task() {  # name deadline_s timeout_s src...
    local name=$1 deadline=$2 limit=$3
    shift 3
    echo "== $name $(date -u +%T)" >&2
    timeout -k 3 "$limit" "$PY" scripts/gpu/catalog_helper.py lab "catalog/tasks/$name" "$@" \
        --calls 20 --seeds 1 --deadline-s "$deadline" >"$DEST/$name.jsonl" 2>"$DEST/$name.stderr"
    echo "rc=$? $name $(( $(date +%s) - T0 )) s" >>"$DEST/$name.stderr"
    cat "$DEST/$name.jsonl"
}
run_task fp8-blockscale-gemm 60 70 \
    "$SOL/blockscale/fp8/fp8_blockscale_gemm_eager/src" "$FP8/k32" "$FP8/k32u" "$FP8/k64"

echo "== zprobe $(date -u +%T)" >&2
timeout -k 2 18 "$PY" "$FP8/zprobe.py" "$FP8/k32" "$FP8/k32u" "$FP8/k64" "$FP8/r1" \
    catalog/kernel_data/h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager/src \
    "$SOL/blockscale/fp8/fp8_blockscale_gemm_eager/src" >"$DEST/zprobe.jsonl" 2>"$DEST/zprobe.stderr"
echo "rc=$? zprobe $(( $(date +%s) - T0 )) s" >>"$DEST/zprobe.stderr"
cat "$DEST/zprobe.jsonl"

# bf16-gemm under Nsight Compute: summed kernel time per call at each graded shape (3 calls, L2
# flushed by ncu, clocks as found with a 1 ms spin before each call). Skipped when ncu is absent.
ncu_one() {  # name src
    if [ ! -x "$NCU" ]; then echo "no ncu at $NCU" >"$DEST/ncu_$1.txt"; return; fi
    WARM_US=1000 timeout -k 2 25 "$NCU" --profile-from-start off --clock-control none --cache-control all \
        --metrics gpu__time_duration.sum --csv "$PY" scripts/gpu/ncu_package.py \
        catalog/tasks/bf16-gemm/task.json "$2" 3 >"$DEST/ncu_$1.csv" 2>"$DEST/ncu_$1.err"
    echo "rc=$? ncu $1 $(( $(date +%s) - T0 )) s" >>"$DEST/ncu_$1.err"
    "$PY" scripts/gpu/ncu_sum.py "$DEST/ncu_$1.csv" 3 --by-marker >"$DEST/ncu_$1.txt" 2>>"$DEST/ncu_$1.err"
    echo "ncu $1 (shape us kernels):"; cat "$DEST/ncu_$1.txt"
}
ncu_one bf16_solution "$SOL/dense/bf16/bf16_gemm_eager/src"
ncu_one bf16_eager catalog/kernel_data/h200/gemm/dense/bf16/bf16_gemm_eager/src
echo "total $(( $(date +%s) - T0 )) s" | tee "$DEST/total.txt"
