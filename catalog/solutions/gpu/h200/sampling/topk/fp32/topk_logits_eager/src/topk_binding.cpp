// Torch binding of the top-k kernel (topk_kernel.cu): checks, the current stream, the launch.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

int topk_k();
int topk_cap();
void topk_launch(const float* x, float* values, int64_t* indices, long B, long V, float z, bool take_all,
                 cudaStream_t stream);

void topk(torch::Tensor x, torch::Tensor values, torch::Tensor indices, double z) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
              "logits must be a contiguous float32 CUDA matrix");
  const long B = x.size(0), V = x.size(1), K = topk_k();
  TORCH_CHECK(V >= K && V <= 2147483647L, "rows must hold at least ", K, " columns (and fewer than 2^31)");
  TORCH_CHECK(values.scalar_type() == torch::kFloat32 && values.is_contiguous() && values.size(0) == B &&
                  values.size(1) == K,
              "values must be a contiguous float32 [B, ", K, "]");
  TORCH_CHECK(indices.scalar_type() == torch::kInt64 && indices.is_contiguous() && indices.size(0) == B &&
                  indices.size(1) == K,
              "indices must be a contiguous int64 [B, ", K, "]");
  if (B == 0) return;
  topk_launch(x.data_ptr<float>(), values.data_ptr<float>(), indices.data_ptr<int64_t>(), B, V,
              static_cast<float>(z), V <= topk_cap(), at::cuda::getCurrentCUDAStream());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("topk", &topk, "exact top-50 of each float32 row, ties to the lower column");
  m.def("k", &topk_k);
}
