# A sample improvement of the softmax eager baseline, used by scripts/demo.sh,
# tests/cli/service.sh and the GPU acceptance run. It calls no library the
# reference does not call (docs/JUDGE.md, "The library gate": torch.softmax is
# torch's fused softmax kernel, which the three-pass reference never calls, so
# it is refused):
# - on a GPU with Triton: one kernel per row, an online softmax over column
#   tiles (running max and rescaled sum in float32), then a second sweep that
#   writes y: x is read twice and y written once, against the eager reference's
#   seven passes over float32 copies;
# - elsewhere (the CPU demo): the same arithmetic as the reference in torch
#   ops, in place on one float32 copy, with amax instead of max (no indices):
#   fewer allocations and no index tensor.

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU demo (Debian's torch has no Triton)
    triton = None

if triton is not None:

    @triton.jit
    def _softmax_rows(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        x_row = x_ptr + row * stride_x
        y_row = y_ptr + row * stride_y
        neg_inf = float("-inf")
        m = tl.full([BLOCK], neg_inf, tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.load(x_row + cols, mask=cols < n_cols, other=neg_inf).to(tl.float32)
            m_new = tl.maximum(m, v)
            live = m_new != neg_inf  # lanes that have seen a value
            alpha = tl.where(live, tl.exp(m - m_new), 0.0)
            s = s * alpha + tl.where(live, tl.exp(v - m_new), 0.0)
            m = m_new
        row_max = tl.max(m, 0)
        row_sum = tl.sum(tl.where(m != neg_inf, s * tl.exp(m - row_max), 0.0), 0)
        inv = 1.0 / row_sum
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            v = tl.load(x_row + cols, mask=mask, other=neg_inf).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(v - row_max) * inv).to(y_ptr.dtype.element_ty), mask=mask)


def _softmax_triton(x):
    rows, cols = x.shape
    x = x.contiguous()
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    block = max(16, min(4096, triton.next_power_of_2(cols)))
    _softmax_rows[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=8 if block >= 2048 else 4)
    return y


def softmax(x):
    global triton
    if triton is not None and x.is_cuda and x.dim() == 2:
        try:
            return _softmax_triton(x)
        except Exception as e:  # noqa: BLE001 - e.g. no C compiler for Triton's launcher here
            import sys
            print("softmax_fused: Triton unavailable (%s: %s); using torch ops" % (type(e).__name__, e), file=sys.stderr)
            triton = None
    xf = x.float()
    xf -= xf.amax(dim=-1, keepdim=True)
    xf.exp_()
    xf /= xf.sum(dim=-1, keepdim=True)
    return xf.to(torch.bfloat16)
