# Triton autotuning for function matmul_kernel finished after 4.18s; best config selected: BLOCK_M: 128, BLOCK_N: 256, num_warps: 8, num_ctas: 1, num_stages: 3;
# Triton autotuning for function softmax_kernel finished after 0.92s; best config selected: BLOCK_M: 4, num_warps: 8, num_ctas: 1, num_stages: 2;
import triton
