#include <array>
#include <cassert>
#include <cmath>

float softmax0(float a, float b);

// Hand-computed: softmax([1, 2])[0] = 1 / (1 + e).
int main() {
  const float expect = 1.0f / (1.0f + std::exp(1.0f));
  assert(std::fabs(softmax0(1.0f, 2.0f) - expect) < 1e-6f);
  const std::array<int, 4> sizes = {128, 4096, 65536, 131072};
  (void)sizes;
  return 0;
}
