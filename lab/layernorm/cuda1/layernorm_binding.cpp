// Torch binding of the LayerNorm kernel: checks, the current stream, the launch.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <torch/extension.h>

int layernorm_launch(const void* x, const void* w, const void* b, void* y, long T, long H, cudaStream_t stream);

void layernorm(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 && x.dim() == 2 && x.is_contiguous(),
              "x must be a contiguous bf16 CUDA matrix");
  const long H = x.size(1);
  for (const auto& v : {w, b})
    TORCH_CHECK(v.is_cuda() && v.scalar_type() == torch::kBFloat16 && v.is_contiguous() && v.numel() == H,
                "weight and bias must be contiguous bf16 CUDA vectors of H");
  TORCH_CHECK(y.sizes() == x.sizes() && y.scalar_type() == torch::kBFloat16 && y.is_contiguous(), "y must be like x");
  for (const auto& t : {x, w, b, y})
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "16-byte aligned tensors only");
  const int grid = layernorm_launch(x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), x.size(0), H,
                                    at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(grid > 0, "layernorm_launch does not take H = ", H);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("layernorm", &layernorm, "LayerNorm of bf16 rows (eps 1e-5)"); }
