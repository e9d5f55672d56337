# Eager PyTorch baseline of KBench task "fp8-quant-per-token" (kernel package
# h200/quant/per_token/fp8/fp8_quant_per_token_eager): vLLM's native PyTorch dynamic per-token fp8
# quantisation (QuantFP8's forward_native), so that the board's speed-up is over what a PyTorch serving
# stack runs, not over the task's float32 reference maths (task.json's reference, which correctness is
# still measured against). The judge imports fp8_quant_per_token() from this file.
import torch

FP8_MAX = 448.0  # largest finite float8_e4m3fn
MIN_SCALE = 1.0 / (FP8_MAX * 512.0)  # vLLM's floor on a row's scale (an all-zero row)


def fp8_quant_per_token(x):
    # |x|'s row maximum in bf16 is exact, so the scale is the reference's bit for bit.
    amax = x.abs().max(dim=-1).values.unsqueeze(-1).to(torch.float32)
    scale = (amax / FP8_MAX).clamp(min=MIN_SCALE)
    # A multiply by the reciprocal, as vLLM does, where the reference divides: the two differ only where
    # a value sits on an e4m3 rounding boundary, which the task's rowwise comparator admits.
    q = (x.to(torch.float32) * scale.reciprocal()).clamp(-FP8_MAX, FP8_MAX)
    if hasattr(torch, "float8_e4m3fn"):
        return q.to(torch.float8_e4m3fn), scale
    # torch without float8 dtypes (the CPU CI's 1.13) carries the task's float8 as uint8 bytes: the
    # judge's own nearest-even encoder writes them.
    from kzoo_judge import dtypes
    return dtypes.from_float(q, "float8_e4m3fn"), scale
