"""The rotary embedding in the GPT-J convention, for measuring D.

Rotates interleaved pairs (x[2i], x[2i+1]) instead of the NeoX halves
(x[i], x[i + D/2]) the task fixes: the same cos/sin, the same arithmetic,
the other pairing -- the classic RoPE layout bug.
"""
import torch


def drop(positions, query, key, cos_sin_cache):
    cs = cos_sin_cache.index_select(0, positions.long())
    half = cs.shape[-1] // 2
    cos = cs[:, :half].unsqueeze(1)
    sin = cs[:, half:].unsqueeze(1)
    for t in (query, key):
        x = t.float()
        x1 = x[..., 0::2]
        x2 = x[..., 1::2]
        out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
        t.copy_(out.to(t.dtype))
