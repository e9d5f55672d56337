#pragma once
// log(1 + x) on [-0.25, 0.25]: degree-7 Taylor series, coefficients (-1)^(n+1) / n.
__device__ __forceinline__ float log1p_small(float x) {
  const float c[7] = {1.0f, -0.5f, 0.333333343f, -0.25f, 0.2f, -0.166666672f, 0.142857149f};
  float y = c[6];
#pragma unroll
  for (int i = 5; i >= 0; --i) y = y * x + c[i];
  return y * x;
}
