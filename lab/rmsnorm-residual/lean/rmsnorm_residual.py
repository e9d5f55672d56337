"""Round 5 lab variant "lean" of rmsnorm_residual (lab/rmsnorm-residual/NOTES.md, "Round 5"):
the solution's one-row programs with fewer registers held across the reduction: the sum h
stays packed bf16 (as it was stored) through the reduction and is widened to float32 again
after it, by its bits (bf16 -> float32 is exact: the 16 bits shifted up), and the weight is
loaded after the reduction instead of at the program's start.

Hypothesis: registers held through the block reduction set how many programs share an SM. The
solution's thread (EPT 32) holds h in float32 (32 registers) and w (16, packed) through it:
an estimated 64-72 registers, so at H = 16384 (16 warps, 512 threads) one program an SM, or
two only if it stays at or under 64; at 8192 three, at 4096 seven. Here a thread holds h
packed (16 registers) and scalars through the reduction, and w (16) only in the epilogue:
an estimated ~48, i.e. two programs an SM at 16384 (64 KB of x and residual in flight each),
five at 8192, ten at 4096: more programs loading while others reduce and store. The bit
widening is a different chain of operations from the conversion used for the sum of squares
(as the softmax solution's wide path does), so that no compiler pass keeps the float32 copy
alive instead. Counter-evidence, kept in view: the solution's shapes sit at 85% whatever
their programs per SM (16384, with the fewest, is the fastest), so registers may not be what
binds rmsnorm; this variant tells that apart at the cost of one lab slot.
Expected: up to -3% where the register count crosses an occupancy step (most likely 16384),
level elsewhere.
Maths: the solution's, bit for bit: h = bf16(r + x) is stored, y = h * rsqrt(mean(h^2) + eps) *
w with the same float32 operations in the same order; the float32 h after the reduction is the
same value as before it (exact widening). No new numerics.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 32  # elements per thread (sets num_warps, at most 16)


@triton.jit
def _rmsnorm_residual_lean(x_ptr, r_ptr, w_ptr, y_ptr, H, eps, BLOCK: tl.constexpr):
    # One row a program (grid = T), held in registers (16-byte accesses).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0)
    res = tl.load(r_ptr + row * H + offs, mask=cm, other=0.0)
    h = (res.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16)  # the residual exactly as stored
    tl.store(r_ptr + row * H + offs, h, mask=cm)
    hf = h.to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)  # after the reduction: not held through it
    h2 = (h.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)  # == hf, from the packed bits
    tl.store(y_ptr + row * H + offs, (h2 * inv * w.to(tl.float32)).to(tl.bfloat16), mask=cm)


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
    _rmsnorm_residual_lean[(T,)](x, residual, weight.contiguous(), y, H, EPS, BLOCK=block, num_warps=warps)
    return y
