"""Round 5 lab variant "pipe" of rmsnorm_residual (lab/rmsnorm-residual/NOTES.md, "Round 5"):
at every width a PERSISTENT grid (as "persist": all programs that fit at once, sized from the
compiled kernel's registers and shared memory, chosen by the shape, never the data; rows pid,
pid + G, ...; the weight loaded once per program) whose x and residual loads are
software-pipelined by Triton's pipeliner through shared memory (cp.async), two rows ahead of
the one being added, stored and reduced.

Hypothesis: bytes in flight per SM, held where they cost no registers, at every moment. Budget:
4.8 TB/s over 132 SMs is 36 KB/us an SM; the task reads half its bytes (x and the residual),
18 KB/us an SM, so at ~1-1.5 us of loaded DRAM latency 18-27 KB of reads must always be in
flight. The solution's one-row programs have their row in flight only from their start to its
arrival; "persist" keeps one row ahead in registers. Here `tl.range(..., num_stages=3)` makes
the pipeliner issue each row's two loads two iterations early as cp.async copies into shared
memory (Triton 3.6: loads that feed no dot are pipelined only in a loop with that attribute,
AssignLatencies.cpp "pipelineWithoutDot"; (stages - 1) buffers of x and of the residual):
2 rows x 4H bytes in flight per program, whatever it is doing: 32 KB a program at H = 4096
(~4-6 programs an SM), 64 KB at 8192 (~2-3), 128 KB at 16384 (one; 128 KB of buffers),
i.e. 64-190 KB an SM. This is the structure of the fastest published memory-bound row kernels
on Hopper (asynchronous global-to-shared copies so that loads are not bounded by registers).
If shared memory runs out at 3 stages the plan takes 2 (one row ahead), decided by compiling.
Expected: 3-4% at every shape (~510 us), the target (511) if the 85% is latency-bound; no gain
if it is the DRAM's read/write turnaround (the 2048-wide layernorm shape reaches 88% with the
same 1:1 read:write mix, so the turnaround alone does not cap it at 85%).
The maths is the solution's verbatim: no new numerics. If the pipeliner declines the loads
(H not a multiple of 16: correctness shapes only) the loop is a plain persistent loop.
"""


import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 32  # elements per thread (sets num_warps, at most 16)
STAGES = 3  # pipelined rows: the one worked on plus two in flight in shared memory


@triton.jit(do_not_specialize=["G"])
def _rmsnorm_residual_pipe(x_ptr, r_ptr, w_ptr, y_ptr, T, H, G, eps, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # Rows pid, pid + G, ...; G <= T, so pid < T. x and the residual of a row are loaded
    # STAGES - 1 iterations early into shared memory by the pipeliner.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    for r in tl.range(pid, T, G, num_stages=STAGES):
        row = r.to(tl.int64)
        x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0)
        res = tl.load(r_ptr + row * H + offs, mask=cm, other=0.0)
        h = (res.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16)  # the residual exactly as stored
        tl.store(r_ptr + row * H + offs, h, mask=cm)
        hf = h.to(tl.float32)
        inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
        tl.store(y_ptr + row * H + offs, (hf * inv * w.to(tl.float32)).to(tl.bfloat16), mask=cm)


_NUM_SMS = {}
_PLAN = {}  # (BLOCK, warps, device, specialisation) -> (stages, programs per SM)


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


def _plan(args, block, warps, dev):
    """(pipeline stages, programs per SM) at this width: the kernel is compiled here once (the
    launch that follows finds it in Triton's cache: G is not specialised)."""
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    T, H = args[4], args[5]
    key = (block, warps, idx, T == 1, T % 16 == 0, H % 16 == 0)  # Triton's integer specialisations
    if key not in _PLAN:
        plan = None
        for stages in (STAGES, 2):
            try:
                compiled = _rmsnorm_residual_pipe.warmup(*args, BLOCK=block, STAGES=stages, num_warps=warps,
                                                         grid=(1,))
                plan = (stages, _per_sm(compiled, warps, idx))
                break
            except Exception as e:  # noqa: BLE001 - e.g. out of shared memory at 3 stages: take 2
                err = e
        if plan is None:
            raise err
        _PLAN[key] = plan
    return _PLAN[key]


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
    stages, per_sm = _plan(args, block, warps, x.device)
    g = max(1, min(T, _num_sms(x.device) * per_sm))
    _rmsnorm_residual_pipe[(g,)](x, residual, w, y, T, H, g, EPS, BLOCK=block, STAGES=stages, num_warps=warps)
    return y
