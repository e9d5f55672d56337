// Torch binding of the fused residual add + RMSNorm kernel: checks, the current stream, the launch.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <torch/extension.h>

int rmsnorm_residual_launch(const void* x, void* res, const void* w, void* y, long T, long H, cudaStream_t stream);

void rmsnorm_residual(torch::Tensor x, torch::Tensor residual, torch::Tensor w, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 && x.dim() == 2 && x.is_contiguous(),
              "x must be a contiguous bf16 CUDA matrix");
  TORCH_CHECK(residual.sizes() == x.sizes() && residual.scalar_type() == torch::kBFloat16 && residual.is_contiguous(),
              "the residual must be like x (it is updated in place)");
  const long H = x.size(1);
  TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kBFloat16 && w.is_contiguous() && w.numel() == H,
              "the weight must be a contiguous bf16 CUDA vector of H");
  TORCH_CHECK(y.sizes() == x.sizes() && y.scalar_type() == torch::kBFloat16 && y.is_contiguous(), "y must be like x");
  for (const auto& t : {x, residual, w, y})
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "16-byte aligned tensors only");
  const int grid = rmsnorm_residual_launch(x.data_ptr(), residual.data_ptr(), w.data_ptr(), y.data_ptr(), x.size(0), H,
                                           at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(grid > 0, "rmsnorm_residual_launch does not take H = ", H);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("rmsnorm_residual", &rmsnorm_residual, "residual += x (in place), y = RMSNorm(residual) * w (bf16, eps 1e-6)");
}
