import itertools

import triton

# Candidates only: the autotuner times them on the machine it runs on.
_BLOCKS = [(64, 64, 128), (64, 128, 128), (128, 128, 128), (128, 256, 128)]
_STAGES = [3, 4, 5]
_WARPS = [4, 8]

CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_stages=s, num_warps=w)
    for (m, n, k), s, w in itertools.product(_BLOCKS, _STAGES, _WARPS)
]
