"""An independent correct GEMM, for the error floor E.

float64, accumulated over 128-wide K slices (a K-blocked sum, as a tiled
kernel adds its partial products) instead of one float32 matmul.
"""
import torch


def independent(A, B):
    a, b = A.double(), B.double()
    out = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float64, device=a.device)
    for k0 in range(0, a.shape[1], 128):
        out += a[:, k0:k0 + 128] @ b[:, k0:k0 + 128].t()
    return out.to(torch.bfloat16)
