"""An independent correct paged decode, for the error floor E.

float64; the fp8 bytes decoded arithmetically from their bit fields rather
than by the reference's table; the whole batch at once, the cache gathered
token by token through a flat slot index (block * 16 + slot) instead of
block by block, and grouped-query attention by reshaping the query heads
into [HK, group] instead of repeating the KV heads.
"""
import math

import torch


def _decode(t):
    b = (t if t.dtype == torch.uint8 else t.view(torch.uint8)).long()
    sign = 1.0 - 2.0 * ((b >> 7) & 1).double()
    exp = (b >> 3) & 0xF
    man = (b & 0x7).double()
    value = torch.where(exp == 0, man / 8.0 * 2.0 ** -6, (1.0 + man / 8.0) * torch.pow(2.0, (exp - 7).double()))
    return sign * value


def independent(query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    B, HQ, D = query.shape
    NB, S, HK, _ = k_cache.shape
    g = HQ // HK
    n = int(seq_lens.max())
    j = torch.arange(n, device=query.device)
    slots = block_tables.long()[:, j // S] * S + j % S  # [B, n]
    # The bytes gathered first (uint8 indexes on every torch; decoding the whole cache in
    # float64 would need tens of GB at a graded shape).
    kb = (k_cache if k_cache.dtype == torch.uint8 else k_cache.view(torch.uint8)).reshape(NB * S, HK, D)
    vb = (v_cache if v_cache.dtype == torch.uint8 else v_cache.view(torch.uint8)).reshape(NB * S, HK, D)
    k = _decode(kb[slots]) * k_cache_scale.double()  # [B, n, HK, D]
    v = _decode(vb[slots]) * v_cache_scale.double()
    q = query.double().reshape(B, HK, g, D)
    s = torch.einsum("bhgd,bnhd->bhgn", q, k) / math.sqrt(D)
    s = s.masked_fill((j[None, :] >= seq_lens.long()[:, None])[:, None, None, :], -math.inf)
    p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    return torch.einsum("bhgn,bnhd->bhgd", p, v).reshape(B, HQ, D).to(torch.bfloat16)
