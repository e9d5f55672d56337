import triton
import triton.language as tl


@triton.jit
def gelu_tanh(x):
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), Hendrycks & Gimpel (2016)
    k0 = 0.7978845608028654
    k1 = 0.044715
    return 0.5 * x * (1.0 + tl.math.tanh(k0 * (x + k1 * x * x * x)))
