import pytest
import torch

from .torch_reference import rmsnorm_residual_ref, softmax_ref
from .triton_rmsnorm_residual import rmsnorm_residual
from .triton_softmax import softmax

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@pytest.mark.parametrize("shape", [(1, 17), (128, 4096), (4096, 4096), (33, 70000)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softmax(shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=dtype) * 4
    atol = 1e-5 if dtype == torch.float32 else 1.6e-2
    torch.testing.assert_close(softmax(x), softmax_ref(x), atol=atol, rtol=atol)


@pytest.mark.parametrize("hidden", [1024, 4096, 8192])
def test_rmsnorm_residual(hidden):
    torch.manual_seed(1)
    x = torch.randn(64, hidden, device="cuda", dtype=torch.bfloat16)
    r = torch.randn_like(x)
    w = torch.rand(hidden, device="cuda", dtype=torch.bfloat16) + 0.5
    y_ref, h_ref = rmsnorm_residual_ref(x, r, w)
    y = rmsnorm_residual(x, r, w)
    torch.testing.assert_close(y, y_ref, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(r, h_ref, atol=0, rtol=0)
