import triton

TUNED = {
    (4096, 4096, 4096): triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
    (8192, 8192, 8192): triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=4),
    (16, 8192, 8192): triton.Config({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 256}, num_warps=4, num_stages=5),
    (64, 8192, 8192): triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}, num_warps=4, num_stages=4),
}


def config_for(m, n, k):
    return TUNED[(m, n, k)]
