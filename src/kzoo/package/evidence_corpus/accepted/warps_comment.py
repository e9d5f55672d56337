import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    # 4 warps = 128 threads; BLOCK = 1024 gives each thread 8 contiguous bf16 (one 128-bit load).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n)
    tl.store(x_ptr + row * n + cols, x * tl.load(s_ptr + row), mask=cols < n)
