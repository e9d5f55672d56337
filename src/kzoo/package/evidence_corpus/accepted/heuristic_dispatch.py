def pick_config(m: int, n: int, k: int) -> dict:
    """Block sizes from the problem's shape: small M gets narrow tiles and split-K."""
    if m <= 16:
        return {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 256, "SPLIT_K": max(1, k // 2048), "num_warps": 4}
    if m <= 64:
        return {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": 1, "num_warps": 4}
    if n >= 8192:
        return {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "SPLIT_K": 1, "num_warps": 8}
    return {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 1, "num_warps": 8}
