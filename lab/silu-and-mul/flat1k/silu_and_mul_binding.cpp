// Torch binding of the silu-and-mul kernel: checks, the current stream, the launch.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

void silu_and_mul_launch(const void* x, void* y, long rows, long I, cudaStream_t stream);

void silu_and_mul(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 && x.dim() == 2 && x.is_contiguous(),
              "x must be a contiguous bf16 CUDA matrix");
  TORCH_CHECK(x.size(1) % 2 == 0 && y.size(0) == x.size(0) && y.size(1) == x.size(1) / 2 && y.is_contiguous(),
              "y must be [T, I] for x [T, 2I]");
  silu_and_mul_launch(x.data_ptr(), y.data_ptr(), x.size(0), y.size(1), at::cuda::getCurrentCUDAStream());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("silu_and_mul", &silu_and_mul, "silu(x[:, :I]) * x[:, I:] (bf16)"); }
