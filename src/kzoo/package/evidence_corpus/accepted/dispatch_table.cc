#include <torch/extension.h>

torch::Tensor softmax_f32(torch::Tensor x);
torch::Tensor softmax_bf16(torch::Tensor x);

torch::Tensor softmax(torch::Tensor x) {
  switch (x.scalar_type()) {
    case torch::kFloat: return softmax_f32(x);
    case torch::kBFloat16: return softmax_bf16(x);
    default: TORCH_CHECK(false, "softmax: unsupported dtype ", x.scalar_type());
  }
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("softmax", &softmax); }
