BEST = {
    "4096x4096": dict(BLOCK_SIZE=1024, num_warps=4),
    "8192x8192": dict(BLOCK_SIZE=2048, num_warps=8),
    "1024x65536": dict(BLOCK_SIZE=4096, num_warps=16),
    "16384x4096": dict(BLOCK_SIZE=1024, num_warps=8),
}
