# batch size -> config
SPLIT_K_CONFIGS = {
    1: {
        "SPLIT_K": 16,
        "BLOCK_N": 64,
        "num_warps": 4,
    },
    2: {
        "SPLIT_K": 8,
        "BLOCK_N": 64,
        "num_warps": 4,
    },
    4: {
        "SPLIT_K": 8,
        "BLOCK_N": 128,
        "num_warps": 4,
    },
    8: {
        "SPLIT_K": 4,
        "BLOCK_N": 128,
        "num_warps": 8,
    },
}
