import torch

# atol/rtol per output dtype: about 2 ulp at 1.0 for the format.
TOLERANCE = {
    torch.float32: dict(atol=1e-5, rtol=1.3e-6),
    torch.float16: dict(atol=1e-3, rtol=1e-3),
    torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2),
    torch.float8_e4m3fn: dict(atol=1.25e-1, rtol=1.25e-1),
}
