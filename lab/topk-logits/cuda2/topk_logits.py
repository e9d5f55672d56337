# Lab variant `cuda2` of topk-logits (lab/topk-logits/NOTES.md, "Round 8"): cuda1 (one CTA per row
# in CUDA C++, topk_kernel.cu, built by this package's build step into a torch extension) with
# cheaper per-row phases. The row is read once; candidates above a threshold sampled from the first
# step's registers go to a shared-memory buffer (one shared atomic per warp), the CTA checks the
# guess and places the K largest by rank, and solves the row exactly (radix select) when the check
# fails. No scratch memory, one launch.
from statistics import NormalDist

import torch

import _ext

_kernels = _ext.load()
K = 50
E_ROW = 160  # expected candidates a row: the buffer holds 512 (about 160 +- 40 on the task's rows)
_Z = {}


def _z(V):
    z = _Z.get(V)
    if z is None:
        z = _Z[V] = NormalDist().inv_cdf(1.0 - min(E_ROW / V, 0.5))
    return z


def topk_logits(logits):
    B, V = logits.shape
    if V < K or B == 0 or logits.dtype != torch.float32 or not logits.is_cuda:
        v, i = torch.sort(logits, dim=-1, descending=True, stable=True)
        return v[:, :K].contiguous(), i[:, :K].contiguous()
    x = logits.contiguous()
    if x.data_ptr() % 16:
        x = x.clone()  # the kernel's 16-byte loads need a 16-byte aligned row base (a view may start anywhere)
    values = torch.empty(B, K, dtype=torch.float32, device=x.device)
    indices = torch.empty(B, K, dtype=torch.int64, device=x.device)
    _kernels.topk(x, values, indices, _z(V))
    return values, indices
