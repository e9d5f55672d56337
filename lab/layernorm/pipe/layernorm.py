"""Round 5 lab variant "pipe" of layernorm (lab/layernorm/NOTES.md, "Round 5"): at
4096 < H <= 8192 and at H >= 16384 (the solution's one-pass and persistent widths: graded
shapes 0 and 1) a PERSISTENT grid whose row loads are software-pipelined through shared
memory by Triton's pipeliner (cp.async), two rows ahead of the one being reduced.

Hypothesis: the kernels at H >= 8192 lose to too few bytes in flight per SM. Budget: 4.8 TB/s
over 132 SMs is 36 KB/us per SM, half of it reads (18 KB/us); at ~1-1.5 us of loaded DRAM
latency an SM must keep 18-27 KB of reads in flight at every moment. A row held in registers
is in flight only between its load and its arrival: the solution's 8192 program (64 elements a
thread, 4 warps; x, d = x - shift in float32, w and b all live: an estimated 160-200 registers,
so ~3 programs an SM) has nothing in flight while it reduces and stores, and its 16384
persistent program (16 warps, one an SM) has at most the next row (32 KB). Here
`tl.range(..., num_stages=3)` makes the pipeliner issue each row's load two iterations early
as cp.async copies into shared memory (Triton 3.6: loads not feeding a dot are pipelined only
in a loop with that attribute, AssignLatencies.cpp "pipelineWithoutDot"; (stages - 1) buffers),
so every program ALWAYS has two rows in flight that cost no registers: 2 x 16 KB x >= 2
programs = >= 64 KB an SM at 8192, 2 x 32 KB = 64 KB at 16384, whatever the reductions are
doing. The grid is the number of programs that fit at once (SMs x programs per SM, from the
compiled kernel's registers and shared memory, as Triton's fused-softmax tutorial sizes its
persistent grid: chosen by the shape, never the data), so there is no second wave.
Expected: shape 0 from 550 toward the 88% that the 2048 shape reaches (~510-525 us), shape 1
from 563 to ~540-550; shape 2 unchanged (the solution's kernel, 508).
The maths is the solution's at each width: at 8192 the one-pass shifted moments (the shift,
x[row, 0], is loaded one row ahead as a scalar carried by the loop so that its latency is
hidden too); at 16384 the mean, then the centred sum of squares. No new numerics.
If the pipeliner declines the loads (a width whose H is not a multiple of 16: a correctness
shape only), the loop is a plain persistent loop: slower there, still correct. If shared
memory runs out at 3 stages the plan takes 2 (one row ahead), decided by compiling.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-5
MAX_TILE = 32768
EPT = 32  # the solution's elements per thread (sets num_warps, at most 16)
EPT_1P = 64  # the solution's at 4096 < H <= 8192 (one pass)
STAGES = 3  # pipelined rows: the one reduced plus two in flight in shared memory


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


@triton.jit(do_not_specialize=["G"])
def _layernorm_1p_pipe(x_ptr, w_ptr, b_ptr, y_ptr, T, H, G, eps, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # Rows pid, pid + G, ...; G <= T, so pid < T. The row loads are pipelined (two ahead, in
    # shared memory); the shift (the row's first element) is loaded a row ahead, in the loop.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    pn = tl.load(x_ptr + pid.to(tl.int64) * H).to(tl.float32)
    for r in tl.range(pid, T, G, num_stages=STAGES):
        row = r.to(tl.int64)
        x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0)
        p = pn
        pn = tl.load(x_ptr + tl.minimum(row + G, T - 1) * H).to(tl.float32)  # next row's shift (clamped: always in bounds)
        d = tl.where(cm, x.to(tl.float32) - p, 0.0)
        s1, s2 = tl.reduce((d, d * d), 0, _add2)
        md = s1 / H
        rstd = 1.0 / tl.sqrt(tl.maximum(s2 / H - md * md, 0.0) + eps)
        y = (d - md) * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm)


@triton.jit(do_not_specialize=["G"])
def _layernorm_pipe(x_ptr, w_ptr, b_ptr, y_ptr, T, H, G, eps, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # The solution's persistent kernel (mean, then the centred sum of squares) with its
    # register prefetch replaced by the pipelined load.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    for r in tl.range(pid, T, G, num_stages=STAGES):
        row = r.to(tl.int64)
        x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / H
        c = tl.where(cm, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / H + eps)
        y = c * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm)


_NUM_SMS = {}
_PLAN = {}  # (kernel, BLOCK, warps, device, specialisation) -> (stages, programs per SM)


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


def _plan(kernel, args, block, warps, dev):
    """(pipeline stages, programs per SM) for this kernel at this width: compiled once here
    (the launch that follows finds it in Triton's cache: G is not specialised)."""
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    T, H = args[4], args[5]
    key = (id(kernel), block, warps, idx, T == 1, T % 16 == 0, H % 16 == 0)  # Triton's integer specialisations
    if key not in _PLAN:
        plan = None
        for stages in (STAGES, 2):
            try:
                compiled = kernel.warmup(*args, BLOCK=block, STAGES=stages, num_warps=warps, grid=(1,))
                plan = (stages, _per_sm(compiled, warps, idx))
                break
            except Exception as e:  # noqa: BLE001 - e.g. out of shared memory at 3 stages: take 2
                err = e
        if plan is None:
            raise err
        _PLAN[key] = plan
    return _PLAN[key]


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
    if block == 8192 or H >= 16384:  # persistent and pipelined (the header); one pass at 8192
        kernel = _layernorm_1p_pipe if block == 8192 else _layernorm_pipe
        warps = max(1, min(16, block // (32 * (EPT_1P if block == 8192 else EPT))))
        args = (x, w, b, y, T, H, T, EPS)  # G's value is not specialised: any will do to compile
        stages, per_sm = _plan(kernel, args, block, warps, x.device)
        g = max(1, min(T, _num_sms(x.device) * per_sm))
        kernel[(g,)](x, w, b, y, T, H, g, EPS, BLOCK=block, STAGES=stages, num_warps=warps)
        return y
    warps = max(1, min(16, block // (32 * EPT)))
    _layernorm[(T,)](x, w, b, y, T, H, EPS, BLOCK=block, RPP=1, num_warps=warps)
    return y
