# CPU solution: the whole batch at once instead of a Python loop over sequences --
# the fp8 bytes decoded by table, the block table turned into flat slot indices,
# grouped-query attention by reshaping the query heads to [HK, group].
import math

import torch

PAGE = 16


def _table():
    values = []
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exp, man = (byte >> 3) & 0xF, byte & 0x7
        if exp == 0xF and man == 0x7:
            values.append(float("nan"))
        elif exp == 0:
            values.append(sign * man / 8.0 * 2.0 ** -6)
        else:
            values.append(sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7))
    return torch.tensor(values, dtype=torch.float32)


_TABLE = _table()


def _bytes(t):
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def paged_attention_decode(query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    B, HQ, D = query.shape
    NB, S, HK, _ = k_cache.shape
    g = HQ // HK
    n = int(seq_lens.max())
    j = torch.arange(n)
    slots = block_tables.long()[:, j // S] * S + j % S
    k = _TABLE[_bytes(k_cache).reshape(NB * S, HK, D)[slots].long()] * k_cache_scale.float()
    v = _TABLE[_bytes(v_cache).reshape(NB * S, HK, D)[slots].long()] * v_cache_scale.float()
    q = query.float().reshape(B, HK, g, D)
    s = torch.einsum("bhgd,bnhd->bhgn", q, k) * (1.0 / math.sqrt(D))
    s.masked_fill_((j[None, :] >= seq_lens.long()[:, None])[:, None, None, :], float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.einsum("bhgn,bnhd->bhgd", p, v).reshape(B, HQ, D).to(torch.bfloat16)
