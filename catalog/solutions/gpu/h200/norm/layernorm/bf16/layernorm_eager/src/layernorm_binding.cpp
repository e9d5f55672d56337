// Torch binding of the LayerNorm kernel: checks, the current stream, the launch.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

void layernorm_launch(const void* x, const void* w, const void* b, void* y, long rows, int H, float eps,
                      cudaStream_t stream);

void layernorm(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor y, double eps) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 && x.dim() == 2 && x.is_contiguous(),
              "x must be a contiguous bf16 CUDA matrix");
  TORCH_CHECK(w.scalar_type() == torch::kBFloat16 && b.scalar_type() == torch::kBFloat16, "weight, bias: bf16");
  TORCH_CHECK(w.numel() == x.size(1) && b.numel() == x.size(1), "weight and bias need H elements");
  layernorm_launch(x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), x.size(0), static_cast<int>(x.size(1)),
                   static_cast<float>(eps), at::cuda::getCurrentCUDAStream());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("layernorm", &layernorm, "LayerNorm over the last dim (bf16)"); }
