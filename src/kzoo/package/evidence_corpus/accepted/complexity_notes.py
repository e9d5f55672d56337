"""Blocked top-k.

Each program sorts a tile of BLOCK elements with a bitonic network:
O(BLOCK log^2 BLOCK) compare-exchanges, O(log^2 BLOCK) depth. The tiles'
winners are merged in a second pass, O(T k log T) for T tiles. With
BLOCK = 1024 and k <= 64 the merge is small next to the sort.
"""


def num_tiles(n: int, block: int = 1024) -> int:
    return (n + block - 1) // block
