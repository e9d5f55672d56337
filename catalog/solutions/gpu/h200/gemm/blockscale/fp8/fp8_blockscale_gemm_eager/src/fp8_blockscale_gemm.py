# Block-scaled fp8 GEMM in Triton (DeepSeek-V3 scaling, DeepGEMM's promotion):
# 128-deep K steps, one scale block per step. Each step's fp8 x fp8 product
# (Hopper fp8 wgmma) lands in a fresh float32 register tile that is multiplied
# by A's per-row scale and B's per-block scale and added into the main float32
# accumulator, so the tensor cores' reduced-precision accumulation never runs
# past 128 products and nothing is dequantised in memory.
#
# The Hopper path: operand tiles through the TMA copy engine (host-built tensor
# descriptors; out-of-bounds rows and K columns arrive as zeros), a 4-stage
# software pipeline, 128x128 output tiles on 8 warps (so B's scale is one scalar
# per K step: a tile column range is exactly one 128-row scale block of B), a
# persistent grid of one program per SM walking the tiles in a grouped order for
# L2 reuse, and the output stored through TMA.
#
# TMA needs 16-byte-aligned row strides: K % 16 == 0 for the fp8 operands, N % 8
# for the bf16 output (otherwise a masked pointer store). Other shapes take a
# pointer-based kernel with the same maths.
#
# Each K block's scales (A's per-row, B's per-block) are loaded one step ahead, into registers carried by the loop.
# Why: Triton's pipeliner only pipelines loads that feed a dot, never a scalar one, so loaded
# in their own step the promotion waited on their L2 latency; a step's wgmma covers it now.

import sys

import torch
import triton
import triton.language as tl

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # a Triton without host-side tensor descriptors: pointer kernel only
    TensorDescriptor = None

BLOCK = 128
# Tile config of the TMA kernel: (BM, BN, num_warps, num_stages); BK is BLOCK.
TMA_CFG = (128, 128, 8, 4)
GROUP_M = 8
WARP_SPECIALIZE = False  # Triton's automatic warp specialisation of the tile loop
# Persistent programs per SM: 2 lets one program's promotion (wgmma wait, scaling FMAs)
# overlap the other's wgmma, where the tile's registers and shared memory allow two.
PROGRAMS_PER_SM = 1
USE_TMA = True  # False: the pointer kernel for every shape
# True: a TMA kernel that fails to build (an API this Triton lacks, shared memory) says so on
# stderr once and the pointer kernel serves from then on; False: the error propagates (lab).
FALLBACK = False
# Tile config of the pointer kernel: (BM, BN, num_warps, num_stages).
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


# M, N, K unspecialised: TMA needs no divisibility facts, and it saves compiles.
@triton.jit(do_not_specialize=["M", "N", "K", "KB"])
def _fp8_tma(a_desc, b_desc, c_desc, c_ptr, as_ptr, bs_ptr, M, N, K, KB,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
             NUM_SMS: tl.constexpr, TMA_STORE: tl.constexpr, WS: tl.constexpr):
    start = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    num_tiles = num_m * num_n
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_tiles, NUM_SMS, flatten=True, warp_specialize=WS):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        # Rows past M read row M-1's scales (their A rows arrive as zeros; never stored).
        rm = tl.minimum(off_m + tl.arange(0, BM), M - 1)
        a_scale_ptrs = as_ptr + rm.to(tl.int64) * KB
        if BN == BK:
            b_scale_ptrs = bs_ptr + pid_n.to(tl.int64) * KB  # the tile's one 128-row block of B
        else:
            rn = tl.minimum(off_n + tl.arange(0, BN), N - 1)
            b_scale_ptrs = bs_ptr + (rn // BK).to(tl.int64) * KB
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        # Block 0's scales before the loop; block kb+1's at the top of step kb (the last step
        # reloads its own: in bounds, unused).
        sa_n = tl.load(a_scale_ptrs)
        sb_n = tl.load(b_scale_ptrs)
        for kb in range(KB):
            sa = sa_n
            sb = sb_n
            kn = tl.minimum(kb + 1, KB - 1)
            sa_n = tl.load(a_scale_ptrs + kn)
            sb_n = tl.load(b_scale_ptrs + kn)
            off_k = kb * BK
            a = a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k])
            # The product of one scale block, promoted: scaled and added in float32.
            if BN == BK:
                acc += tl.dot(a, b.T) * (sa * sb)[:, None]
            else:
                acc += tl.dot(a, b.T) * (sa[:, None] * sb[None, :])
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
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # Any shape: rows and columns past the edge wrap to valid ones (never stored), K's
    # tail masked.
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
    b_scale_ptrs = bs_ptr + (bn // BK) * KB  # each column's 128-row block of B
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for kb in range(0, KB):
        left = K - kb * BK
        a = tl.load(a_ptrs, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < left, other=0.0)
        sa = tl.load(a_scale_ptrs + kb)
        sb = tl.load(b_scale_ptrs + kb)
        acc += tl.dot(a, b) * (sa[:, None] * sb[None, :])
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


_TMA_BROKEN = []  # the error of a TMA kernel that failed to build, once FALLBACK took over


def _gemm_via_tma(A, B, out, A_scale, B_scale, M, N, K, kb):
    BM, BN, warps, stages = TMA_CFG
    a_desc = TensorDescriptor.from_tensor(A, [BM, BLOCK])
    b_desc = TensorDescriptor.from_tensor(B, [BN, BLOCK])
    tma_store = _tma_ok(out)
    c_desc = TensorDescriptor.from_tensor(out, [BM, BN]) if tma_store else None
    n_progs = PROGRAMS_PER_SM * _num_sms(A.device)
    grid = (min(n_progs, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    _fp8_tma[grid](a_desc, b_desc, c_desc, out, A_scale, B_scale, M, N, K, kb,
                   BM=BM, BN=BN, BK=BLOCK, GROUP_M=GROUP_M, NUM_SMS=n_progs,
                   TMA_STORE=tma_store, WS=WARP_SPECIALIZE,
                   num_warps=warps, num_stages=stages)


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
    if USE_TMA and not _TMA_BROKEN and TensorDescriptor is not None and _tma_ok(A) and _tma_ok(B):
        try:
            _gemm_via_tma(A, B, out, A_scale, B_scale, M, N, K, kb)
            return out
        except Exception as e:  # noqa: BLE001 - a build failure (compile, resources), before any launch
            if not FALLBACK:
                raise
            _TMA_BROKEN.append(e)
            print("fp8_blockscale_gemm: the TMA kernel failed (%s: %s); the pointer kernel from now on"
                  % (type(e).__name__, str(e).strip()[:300]), file=sys.stderr)
    BM, BN, warps, stages = PTR_CFG
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _fp8_ptr[grid](A, B, out, A_scale, B_scale, M, N, K, kb,
                   BM=BM, BN=BN, BK=BLOCK, GROUP_M=GROUP_M, num_warps=warps, num_stages=stages)
    return out
