# CPU solution: the cache rows gathered once, cos/sin broadcast over the heads,
# each half computed with in-place multiply-adds and written straight back.
import torch


def _rotate(t, cos, sin, half):
    x = t.float()
    x1, x2 = x[..., :half], x[..., half:]
    first = x1 * cos
    first.addcmul_(x2, sin, value=-1.0)
    second = x2 * cos
    second.addcmul_(x1, sin)
    t[..., :half] = first
    t[..., half:] = second


def rotary_embedding(positions, query, key, cos_sin_cache):
    cs = cos_sin_cache[positions.long()]
    half = cs.shape[-1] // 2
    cos = cs[:, None, :half]
    sin = cs[:, None, half:]
    _rotate(query, cos, sin, half)
    _rotate(key, cos, sin, half)
