# Round 3, variant k64: k32 with 64 products per tensor-core chain (two k32 wgmmas per tl.dot), so
# half the FFMAs of promotion. Hypothesis: twice the float32 headroom buys speed; the accuracy is
# at risk: the CPU model (accuracy_model.py) expects 0.016-0.38 outputs past the board's bound per
# K=8192 graded shape (against ~1e-13 for k32 and ~50-120 for promotion every 128, which the H200
# refused at 0.197): a lab measurement of where it sits, not a solution candidate unless its
# measured error (zprobe.py) is far below the model's.

import torch
import triton
import triton.language as tl

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # a Triton without host-side tensor descriptors: pointer kernel only
    TensorDescriptor = None

BLOCK = 128  # the scale block along K (and B's along N)
PROMOTE = 64  # products per tl.dot: the tensor cores' chain between promotions to float32
# Tile config of the TMA kernel: (BM, BN, num_warps, num_stages). BN = 128 keeps B's scale one
# scalar per tile and K step; 8 warps are two warpgroups of 64 rows each.
TMA_CFG = (128, 128, 8, 6)
GROUP_M = 8
PROGRAMS_PER_SM = 1
# Tile config of the pointer kernel (small or unaligned shapes): (BM, BN, num_warps, num_stages).
PTR_CFG = (128, 128, 8, 3)

_NUM_SMS = {}


def _num_sms(device):
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


@triton.jit
def _tile_coords(tile, num_m, num_n, GROUP_M: tl.constexpr):
    in_group = GROUP_M * num_n
    first_m = (tile // in_group) * GROUP_M
    group_size = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (tile % in_group) % group_size
    pid_n = (tile % in_group) // group_size
    return pid_m, pid_n


@triton.jit(do_not_specialize=["M", "N", "K", "KB"])
def _fp8_tma(a_desc, b_desc, c_desc, c_ptr, as_ptr, bs_ptr, M, N, K, KB,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SBLK: tl.constexpr,
             GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, TMA_STORE: tl.constexpr):
    start = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    num_tiles = num_m * num_n
    nk = tl.cdiv(K, BK)
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        # Rows past M read row M-1's scales (their A rows arrive as zeros; never stored).
        rm = tl.minimum(off_m + tl.arange(0, BM), M - 1)
        a_scale_ptrs = as_ptr + rm.to(tl.int64) * KB
        if BN == SBLK:
            b_scale_ptrs = bs_ptr + pid_n.to(tl.int64) * KB  # the tile's one 128-row block of B
        else:
            rn = tl.minimum(off_n + tl.arange(0, BN), N - 1)
            b_scale_ptrs = bs_ptr + (rn // SBLK).to(tl.int64) * KB
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(nk):
            off_k = kk * BK
            a = a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k])
            kb = off_k // SBLK
            sa = tl.load(a_scale_ptrs + kb)
            sb = tl.load(b_scale_ptrs + kb)
            # One BK-deep chain in the tensor cores, then promoted: scaled and added in float32.
            if BN == SBLK:
                acc = acc + tl.dot(a, b.T) * (sa * sb)[:, None]
            else:
                acc = acc + tl.dot(a, b.T) * (sa[:, None] * sb[None, :])
        tile_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_c, num_m, num_n, GROUP_M)
        off_cm = pid_m * BM
        off_cn = pid_n * BN
        if TMA_STORE:
            c_desc.store([off_cm, off_cn], acc.to(tl.bfloat16))
        else:
            cm = off_cm + tl.arange(0, BM)
            cn = off_cn + tl.arange(0, BN)
            c_ptrs = c_ptr + cm.to(tl.int64)[:, None] * N + cn[None, :]
            tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def _fp8_ptr(a_ptr, b_ptr, c_ptr, as_ptr, bs_ptr, M, N, K, KB,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SBLK: tl.constexpr,
             GROUP_M: tl.constexpr):
    # Any shape: rows and columns past the edge wrap to valid ones (never stored), K's tail masked.
    pid = tl.program_id(0)
    pid_m, pid_n = _tile_coords(pid, tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    am = (rm % M).to(tl.int64)
    bn = (rn % N).to(tl.int64)
    a_ptrs = a_ptr + am[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + bn[None, :] * K + rk[:, None]
    a_scale_ptrs = as_ptr + am * KB
    b_scale_ptrs = bs_ptr + (bn // SBLK) * KB  # each column's 128-row block of B
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        left = K - kk * BK
        a = tl.load(a_ptrs, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < left, other=0.0)
        kb = (kk * BK) // SBLK
        sa = tl.load(a_scale_ptrs + kb)
        sb = tl.load(b_scale_ptrs + kb)
        acc = acc + tl.dot(a, b) * (sa[:, None] * sb[None, :])
        a_ptrs += BK
        b_ptrs += BK
    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _tma_ok(t):
    return t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0


def _as_fp8(t):
    # Torch without float8 dtypes hands the bytes over as uint8.
    if t.dtype == torch.uint8 and hasattr(torch, "float8_e4m3fn"):
        return t.view(torch.float8_e4m3fn)
    return t


def _gemm_via_tma(A, B, out, A_scale, B_scale, M, N, K, kb):
    BM, BN, warps, stages = TMA_CFG
    a_desc = TensorDescriptor.from_tensor(A, [BM, PROMOTE])
    b_desc = TensorDescriptor.from_tensor(B, [BN, PROMOTE])
    tma_store = _tma_ok(out)
    c_desc = TensorDescriptor.from_tensor(out, [BM, BN]) if tma_store else None
    n_progs = PROGRAMS_PER_SM * _num_sms(A.device)
    grid = (min(n_progs, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    _fp8_tma[grid](a_desc, b_desc, c_desc, out, A_scale, B_scale, M, N, K, kb,
                   BM=BM, BN=BN, BK=PROMOTE, SBLK=BLOCK, GROUP_M=GROUP_M, NUM_SMS=n_progs,
                   TMA_STORE=tma_store, num_warps=warps, num_stages=stages)


def fp8_blockscale_gemm(A, A_scale, B, B_scale):
    M, K = A.shape
    N = B.shape[0]
    out = torch.empty(M, N, dtype=torch.bfloat16, device=A.device)
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    kb = triton.cdiv(K, BLOCK)
    A, B = _as_fp8(A.contiguous()), _as_fp8(B.contiguous())
    A_scale = A_scale.float().contiguous()
    B_scale = B_scale.float().contiguous()
    if TensorDescriptor is not None and _tma_ok(A) and _tma_ok(B):
        _gemm_via_tma(A, B, out, A_scale, B_scale, M, N, K, kb)
        return out
    BM, BN, warps, stages = PTR_CFG
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _fp8_ptr[grid](A, B, out, A_scale, B_scale, M, N, K, kb,
                   BM=BM, BN=BN, BK=PROMOTE, SBLK=BLOCK, GROUP_M=GROUP_M,
                   num_warps=warps, num_stages=stages)
    return out
