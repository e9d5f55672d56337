#!/usr/bin/env bash
# Issue 20: where the GEMM solutions lose to cuBLAS, read off Nsight Compute's full section set
# (one call each, L2 flushed, clocks as found) at the shapes where they trail: bf16 at graded
# shape 1 (4096 x 8192 x 8192; cuBLAS picks a 256x128 tile in 1x2 clusters there) and the fp8
# block-scaled GEMM at shape 0 (8192^3), each beside its eager package (cuBLAS). The question
# for the next round: is the solution short of L2 -> SM bandwidth (lts throughput near its peak,
# the tensor pipe waiting) or of issue (tensor pipe idle with L2 to spare)?
# Run from the repository root on the H200; output under ${OUT:-/tmp/out}/profile/ (one
# details page a kernel, plus summary.txt with the lines that answer the question).
set -u
PY="${KZOO_PYTHON:-python3}"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
O="${OUT:-/tmp/out}/profile"
mkdir -p "$O"
E=catalog/kernel_data/h200/gemm
S=catalog/solutions/gpu/h200/gemm
: >"$O/summary.txt"
# name task src shape
while read -r name task src shape; do
    t0=$(date +%s)
    timeout 90 "$NCU" --profile-from-start off --clock-control none --cache-control all --set full \
        --page details "$PY" scripts/gpu/ncu_eager.py "catalog/tasks/$task/task.json" "$src" "$shape" 1 \
        >"$O/$name.txt" 2>"$O/$name.err"
    echo "== $name (rc=$?, $(( $(date +%s) - t0 )) s)" >>"$O/summary.txt"
    grep -E '^  [a-z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Memory Throughput|Registers Per Thread|Grid Size|Block Size|Cluster Size|Dynamic Shared Memory|Achieved Occupancy|Issue Slots Busy|Executed Ipc Active|L2 Hit Rate|Mem Busy|Max Bandwidth|Mem Pipes Busy' \
        "$O/$name.txt" >>"$O/summary.txt"
done <<LIST
bf16_eager_s1 bf16-gemm $E/dense/bf16/bf16_gemm_eager/src 1
bf16_solution_s1 bf16-gemm $S/dense/bf16/bf16_gemm_eager/src 1
fp8_eager_s0 fp8-blockscale-gemm $E/blockscale/fp8/fp8_blockscale_gemm_eager/src 0
fp8_solution_s0 fp8-blockscale-gemm $S/blockscale/fp8/fp8_blockscale_gemm_eager/src 0
LIST
cat "$O/summary.txt"
