# Eager PyTorch baseline of KBench task "rotary-embedding" (kernel package
# h200/attention/rope/bf16/rotary_embedding_eager): vLLM's native PyTorch RoPE (RotaryEmbedding's
# forward_native, NeoX style), so that the board's speed-up is over what a PyTorch serving stack runs,
# not over the task's float32 reference maths (task.json's reference, which correctness is still
# measured against). The judge imports rotary_embedding() from this file.
import torch


def _rotate(x, cos, sin):
    # vLLM casts cos and sin to the activations' dtype and rotates in bf16, each product and sum
    # rounding to bf16. That form is not exact enough for the board's elementwise guardrail (within
    # atol 1e-2 + rtol 1e-2 of the reference on every element): on the CPU an element came out
    # 0.0156 from the reference at 0.43 (eight bf16 steps of rounding, 1.09x the bound). The
    # nearest form that is: the same rotation in float32, rounded to bf16 once, as the reference
    # and vLLM's CUDA kernel round.
    cos = cos.unsqueeze(-2).float()
    sin = sin.unsqueeze(-2).float()
    x1, x2 = torch.chunk(x.float(), 2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


def rotary_embedding(positions, query, key, cos_sin_cache):
    cos, sin = cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
    # vLLM's native form returns new tensors; the task's interface (vLLM's CUDA op's) rotates in place.
    query.copy_(_rotate(query, cos, sin))
    key.copy_(_rotate(key, cos, sin))
