"""Round 5 lab variant "persist" of rmsnorm_residual (lab/rmsnorm-residual/NOTES.md,
"Round 5"): at every width a PERSISTENT grid, as layernorm's solution has at H >= 16384
since round 4: as many programs as fit at once (SMs x programs per SM, from the compiled
kernel's registers and shared memory, chosen by the shape, never the data), each working rows
pid, pid + G, ... with the next row's x and residual loads issued before the current row's
store and reduction, the weight loaded once per program.

Hypothesis: the solution launches T one-row programs (65536 at shape 1, 16384-32768 at 0 and
2), each loading its weight row again, and every program's start (its loads, nothing of its
own in flight before) and end (reduction, stores, block retire and the next block's launch)
leave its warps' share of the SM without loads in flight; at H = 16384 its 16-warp program
(EPT 32) fits an estimated one or two an SM, the regime where layernorm's persistent grid took
4% (594 -> 572 us in the lab, 563 by ncu). A persistent program always has the next row (x
and the residual: 2 x 2H bytes, 16 KB at 4096 to 64 KB at 16384) in flight while it adds,
stores and reduces the current one, and pays its start and end once per ~T / G rows. The
prefetch costs 16 + 16 registers a thread (EPT 32, packed bf16), which the grid's sizing
accounts for. Round 1 found 4 rows a program (the same prefetch, a non-persistent grid) no
faster than 1: that grid still paid a start and end every 4 rows and sized nothing to the SM.
Expected: -2 to -4% at shape 2 (H = 16384: 524 -> ~505-515 us), -1 to -2% at shapes 0-1.
The maths is the solution's verbatim (h = bf16(r + x) stored, y = h * rsqrt(mean(h^2) + eps)
* w in float32, the same operations in the same order): no new numerics.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 32  # elements per thread (sets num_warps, at most 16)


@triton.jit(do_not_specialize=["G"])
def _rmsnorm_residual_persist(x_ptr, r_ptr, w_ptr, y_ptr, T, H, G, eps, BLOCK: tl.constexpr):
    # Rows pid, pid + G, ...; G <= T, so pid < T.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    base = pid.to(tl.int64) * H
    xn = tl.load(x_ptr + base + offs, mask=cm, other=0.0)
    rn = tl.load(r_ptr + base + offs, mask=cm, other=0.0)
    for r in range(pid, T, G):
        row = r.to(tl.int64)
        h = (rn.to(tl.float32) + xn.to(tl.float32)).to(tl.bfloat16)  # the residual exactly as stored
        nrow = row + G
        mn = cm & (nrow < T)
        xn = tl.load(x_ptr + nrow * H + offs, mask=mn, other=0.0)
        rn = tl.load(r_ptr + nrow * H + offs, mask=mn, other=0.0)
        tl.store(r_ptr + row * H + offs, h, mask=cm)
        hf = h.to(tl.float32)
        inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
        tl.store(y_ptr + row * H + offs, (hf * inv * w.to(tl.float32)).to(tl.bfloat16), mask=cm)


_NUM_SMS = {}
_PER_SM = {}  # (BLOCK, warps, device, specialisation) -> programs per SM


def _num_sms(dev):
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _per_sm(compiled, warps, idx):
    # Programs of this compiled kernel resident on one SM at once: registers (allocated per
    # warp in 256s, so per thread in 8s), shared memory (228 KB an SM, 1 KB reserved a block;
    # the driver reports the 227 KB a block may opt in to), 64 warps, 32 blocks.
    compiled._init_handles()
    props = triton.runtime.driver.active.utils.get_device_properties(idx)
    n = props["max_num_regs"] // (-(-max(1, compiled.n_regs) // 8) * 8 * 32 * warps)
    smem = compiled.metadata.shared
    if smem:
        n = min(n, (props["max_shared_mem"] + 1024) // (smem + 1024))
    return max(1, min(n, 64 // warps, 32))


def _grid(args, block, warps, dev):
    """Programs in the persistent grid: all that fit at once. The kernel is compiled here once
    per width (the launch that follows finds it in Triton's cache: G is not specialised)."""
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    T, H = args[4], args[5]
    key = (block, warps, idx, T == 1, T % 16 == 0, H % 16 == 0)  # Triton's integer specialisations
    if key not in _PER_SM:
        compiled = _rmsnorm_residual_persist.warmup(*args, BLOCK=block, num_warps=warps, grid=(1,))
        _PER_SM[key] = _per_sm(compiled, warps, idx)
    return max(1, min(T, _num_sms(dev) * _PER_SM[key]))


def _eager(x, residual, weight):
    # Rows wider than one tile (none of the task's shapes): the plain formula.
    residual.copy_((residual.float() + x.float()).to(residual.dtype))
    h = residual.float()
    return (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(torch.bfloat16)


def rmsnorm_residual(x, residual, weight):
    T, H = x.shape
    y = torch.empty_like(x)
    if T == 0 or H == 0:
        return y
    if H > MAX_TILE or not (x.is_contiguous() and residual.is_contiguous()):
        return _eager(x, residual, weight)
    block = triton.next_power_of_2(H)
    warps = max(1, min(16, block // (32 * EPT)))
    w = weight.contiguous()
    args = (x, residual, w, y, T, H, T, EPS)  # G's value is not specialised: any will do to compile
    g = _grid(args, block, warps, x.device)
    _rmsnorm_residual_persist[(g,)](x, residual, w, y, T, H, g, EPS, BLOCK=block, num_warps=warps)
    return y
