import pytest
import torch

from kernel import softmax

SHAPES = [(1, 128), (7, 1000), (4096, 4096), (8192, 16384), (1024, 65536)]
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (1e-3, 1e-3)}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", list(TOLERANCES))
def test_matches_torch(shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    atol, rtol = TOLERANCES[dtype]
    torch.testing.assert_close(softmax(x), torch.softmax(x.float(), -1).to(dtype), atol=atol, rtol=rtol)
