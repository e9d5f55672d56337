# Tile shapes per architecture (from the tensor-core instruction shapes, not from timing).
ARCH_TILES = {
    "sm_80": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_stages": 4},
    "sm_89": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3},
    "sm_90": {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4},
    "sm_100": {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4},
}
