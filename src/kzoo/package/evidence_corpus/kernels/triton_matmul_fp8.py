"""Block-scaled FP8 GEMM (DeepSeek-V3 style): A is scaled per 1x128 group, B per 128x128 block."""
import torch
import triton
import triton.language as tl

GROUP = 128


def _configs():
    out = []
    for bm, bn in [(64, 64), (64, 128), (128, 128), (128, 256)]:
        for stages in (3, 4, 5):
            for warps in (4, 8):
                out.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": GROUP, "GROUP_M": 8},
                                         num_stages=stages, num_warps=warps))
    return out


@triton.autotune(configs=_configs(), key=["N", "K"])
@triton.jit
def _fp8_gemm(A, B, C, As, Bs, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % size_m)
    pid_n = (pid % (GROUP_M * num_n)) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(A + rm[:, None] * K + (kb * BLOCK_K + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + rn[None, :] * K + (kb * BLOCK_K + rk)[:, None], mask=rn[None, :] < N, other=0.0)
        sa = tl.load(As + rm * tl.cdiv(K, GROUP) + kb, mask=rm < M, other=0.0)
        sb = tl.load(Bs + (rn // GROUP) * tl.cdiv(K, GROUP) + kb)
        acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def fp8_gemm(a, a_scale, b, b_scale):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    _fp8_gemm[grid](a, b, c, a_scale, b_scale, M, N, K)
    return c
