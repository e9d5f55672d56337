"""Round 5 lab variant "lean" of layernorm (lab/layernorm/NOTES.md, "Round 5"): at
4096 < H <= 8192 (graded shape 0, 65536 x 8192) the solution's one-pass kernel with nothing
held in registers across the reduction: weight and bias are no longer loaded at the start,
and after the reduction the row is normalised in four chunks, each re-reading its slice of x
(an L1 hit: this program read it moments before; L2 at worst, never HBM), w and b.

Hypothesis: at 8192 the registers a program holds across its reduction set how many programs
share an SM, and so the bytes in flight. The solution's program (4 warps, 64 elements a
thread) keeps x (32 registers, packed bf16) or d = x - shift (64, float32) and w and b (64,
packed) live through the reduction: an estimated 160-200 registers a thread, 20-25 K a
program, ~3 programs in the SM's 64 K; 3 x 16 KB of x at most in flight, and none while a
program reduces and stores. Budget: 4.8 TB/s over 132 SMs is 36 KB/us an SM, 18 KB/us of
reads; at ~1-1.5 us of loaded latency 18-27 KB of reads must always be in flight, which ~3
programs that each spend part of their life reducing only just reach (81% of the roofline,
against 88% at H = 2048 where ~10 small programs share an SM). Here a thread holds its 64
elements only until its own partial sums are formed (32 packed registers), then two float32
accumulators and scalars; the epilogue's chunk holds 16 elements of x, w and b: an estimated
~60-70 registers, 8 K a program, so ~8 programs an SM (the 16-block/64-warp limits allow 16):
~128 KB of x in flight at once when all load, and most of an SM's programs loading while a
few reduce. The re-read adds L1 traffic (16 KB a row) and an L1/L2 latency to each program's
tail, which the other programs on the SM cover. The re-read uses cache_modifier ".ca" (cache
in L1, the default for global loads on sm_90) so that it is a distinct instruction that no
compiler pass merges with the first load (which would put x back in registers).
Expected: shape 0 from 550 toward ~515-525 us; shapes 1 and 2 unchanged (the solution's).
Maths: the solution's, element for element: d = x - x[row, 0], one tuple reduction of
(d, d*d), y = (d - mean(d)) * rstd * w + b with the same float32 operations in the same order
(d is recomputed from the same bf16 x: the same value). No new numerics.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-5
MAX_TILE = 32768
EPT = 32  # the solution's elements per thread (sets num_warps, at most 16)
EPT_1P = 64  # the solution's at 4096 < H <= 8192 (one pass)
CHUNKS = 4  # the epilogue's chunks per row at 4096 < H <= 8192 (16 elements a thread each)


@triton.jit
def _layernorm(x_ptr, w_ptr, b_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr, RPP: tl.constexpr):
    row0 = tl.program_id(0).to(tl.int64) * RPP
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    xn = tl.load(x_ptr + row0 * H + offs, mask=cm & (row0 < T), other=0.0)
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    for i in range(RPP):
        row = row0 + i
        x = xn.to(tl.float32)
        nrow = row + 1
        xn = tl.load(x_ptr + nrow * H + offs, mask=cm & (nrow < T) & (i + 1 < RPP), other=0.0)
        mean = tl.sum(x, axis=0) / H
        c = tl.where(cm, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / H + eps)
        y = c * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm & (row < T))


@triton.jit
def _add2(a, b, c, d):
    return a + c, b + d


@triton.jit
def _layernorm_1p_lean(x_ptr, w_ptr, b_ptr, y_ptr, H, eps, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    # One row a program (grid = T). Registers across the reduction: two accumulators and scalars.
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * H
    yr = y_ptr + row * H
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    x = tl.load(xr + offs, mask=cm, other=0.0)
    p = tl.load(xr).to(tl.float32)  # the row's shift: its first element
    d = tl.where(cm, x.to(tl.float32) - p, 0.0)
    s1, s2 = tl.reduce((d, d * d), 0, _add2)
    md = s1 / H
    rstd = 1.0 / tl.sqrt(tl.maximum(s2 / H - md * md, 0.0) + eps)
    for c in tl.static_range(0, BLOCK, CHUNK):  # compile-time offsets: 16-byte accesses
        o = c + tl.arange(0, CHUNK)
        m = o < H
        xc = tl.load(xr + o, mask=m, other=0.0, cache_modifier=".ca")  # L1 (this program's own x)
        wc = tl.load(w_ptr + o, mask=m, other=0.0)
        bc = tl.load(b_ptr + o, mask=m, other=0.0)
        y = (xc.to(tl.float32) - p - md) * rstd * wc.to(tl.float32) + bc.to(tl.float32)
        tl.store(yr + o, y.to(tl.bfloat16), mask=m)


_NUM_SMS = {}


def _num_sms(dev):
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


@triton.jit
def _layernorm_persist(x_ptr, w_ptr, b_ptr, y_ptr, T, H, G, eps, BLOCK: tl.constexpr):
    # One program per SM; rows pid, pid + G, ... The next row's load is issued before the
    # current row's reductions (as the solution's RPP loop does), weight and bias once.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)  # bf16 in registers, as the solution holds them
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    xn = tl.load(x_ptr + pid.to(tl.int64) * H + offs, mask=cm & (pid < T), other=0.0)
    for r in range(pid, T, G):
        row = r.to(tl.int64)
        x = xn.to(tl.float32)
        nrow = row + G
        xn = tl.load(x_ptr + nrow * H + offs, mask=cm & (nrow < T), other=0.0)
        mean = tl.sum(x, axis=0) / H
        c = tl.where(cm, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / H + eps)
        y = c * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm)


def _eager(x, weight, bias):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    c = xf - mean
    var = c.pow(2).mean(dim=-1, keepdim=True)
    return (c * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(torch.bfloat16)


def layernorm(x, weight, bias):
    T, H = x.shape
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    if H > MAX_TILE:
        return _eager(x, weight, bias)
    x = x.contiguous()
    w = weight.contiguous()
    b = bias.contiguous()
    block = triton.next_power_of_2(H)
    if block == 8192:  # one pass, lean (the header)
        warps = max(1, min(16, block // (32 * EPT_1P)))
        _layernorm_1p_lean[(T,)](x, w, b, y, H, EPS, BLOCK=block, CHUNK=block // CHUNKS, num_warps=warps)
        return y
    warps = max(1, min(16, block // (32 * EPT)))
    if H >= 16384:  # persistent: one program per SM
        g = max(1, min(T, _num_sms(x.device)))
        _layernorm_persist[(g,)](x, w, b, y, T, H, g, EPS, BLOCK=block, num_warps=warps)
        return y
    _layernorm[(T,)](x, w, b, y, T, H, EPS, BLOCK=block, RPP=1, num_warps=warps)
    return y
