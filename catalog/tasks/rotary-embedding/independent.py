"""An independent correct rotary embedding, for the error floor E.

The rotation as a complex product in float64: (x1 + i*x2) * (cos + i*sin),
real part to the first half, imaginary part to the second; the cache rows
gathered by advanced indexing rather than index_select.
"""
import torch


def independent(positions, query, key, cos_sin_cache):
    cs = cos_sin_cache.double()[positions.long()]
    half = cs.shape[-1] // 2
    rot = torch.complex(cs[:, :half], cs[:, half:]).unsqueeze(1)
    for t in (query, key):
        x = t.double()
        z = torch.complex(x[..., :half].contiguous(), x[..., half:].contiguous()) * rot
        t.copy_(torch.cat((z.real, z.imag), dim=-1).to(t.dtype))
