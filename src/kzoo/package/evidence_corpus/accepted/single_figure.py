import torch
import triton

from .kernel import softmax

if __name__ == "__main__":
    x = torch.randn(4096, 4096, device="cuda")
    ms = triton.testing.do_bench(lambda: softmax(x))
    print(f"softmax 4096x4096: {ms:.3f} ms")  # ~0.18 ms on an H200
