"""LayerNorm forward and backward in Triton (after the Triton tutorial, with bf16 I/O)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _ln_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps=1e-5):
        y = torch.empty_like(x)
        x2 = x.reshape(-1, x.shape[-1])
        M, N = x2.shape
        mean = torch.empty((M,), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
        # 64 KB per feature row at most: beyond that the row does not fit in registers.
        max_fused = 65536 // x.element_size()
        BLOCK_SIZE = min(max_fused, triton.next_power_of_2(N))
        if N > BLOCK_SIZE:
            raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
        _ln_fwd[(M,)](x2, y, weight, bias, mean, rstd, x2.stride(0), N, eps, BLOCK_SIZE=BLOCK_SIZE,
                      num_warps=num_warps)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        ctx.eps = eps
        return y
