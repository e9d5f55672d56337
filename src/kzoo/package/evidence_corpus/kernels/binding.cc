#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

cudaError_t launch_sum(const float* x, float* out, int64_t n, cudaStream_t stream);

torch::Tensor device_sum(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be on the GPU");
  TORCH_CHECK(x.scalar_type() == torch::kFloat, "x must be float32, got ", x.scalar_type());
  TORCH_CHECK(x.is_contiguous() && x.numel() % 4 == 0, "x must be contiguous with a multiple of 4 elements");
  auto out = torch::empty({1}, x.options());
  const cudaError_t err = launch_sum(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
                                     at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "launch_sum: ", cudaGetErrorString(err));
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("device_sum", &device_sum, "sum of a float32 CUDA tensor"); }
