"""An independent correct block-scaled fp8 GEMM, for the error floor E.

It decodes the fp8 bytes arithmetically (sign, exponent and mantissa fields
with tensor ops) rather than through the reference's lookup table or torch's
float8 view, works in float64, and applies the scales per (128-row, 128-col)
block of the output's K-reduction -- sum over K-blocks of
(A_blk @ B_blk^T) * a_scale * b_scale -- instead of scaling the operands.
"""
import torch

BLOCK = 128


def _decode_e4m3fn(t):
    if t.dtype != torch.uint8:
        if hasattr(torch, "float8_e4m3fn") and t.dtype == torch.float8_e4m3fn:
            t = t.view(torch.uint8)
        else:
            return t.double()
    b = t.long()
    sign = 1.0 - 2.0 * ((b >> 7) & 1).double()
    exp = (b >> 3) & 0xF
    man = (b & 0x7).double()
    normal = (1.0 + man / 8.0) * torch.pow(2.0, (exp - 7).double())
    subnormal = man / 8.0 * 2.0 ** -6
    value = torch.where(exp == 0, subnormal, normal)
    value = torch.where((exp == 0xF) & ((b & 0x7) == 0x7), torch.full_like(value, float("nan")), value)
    return sign * value


def independent(A, A_scale, B, B_scale):
    M, K = A.shape
    N = B.shape[0]
    a = _decode_e4m3fn(A)
    b = _decode_e4m3fn(B)
    out = torch.zeros(M, N, dtype=torch.float64, device=a.device)
    for kb in range((K + BLOCK - 1) // BLOCK):
        k0, k1 = kb * BLOCK, min(K, (kb + 1) * BLOCK)
        partial = a[:, k0:k1] @ b[:, k0:k1].t()  # [M, N]
        col_scale = B_scale[:, kb].double().repeat_interleave(BLOCK)[:N]  # per output column block
        out += partial * A_scale[:, kb : kb + 1].double() * col_scale[None, :]
    return out.to(torch.bfloat16)
