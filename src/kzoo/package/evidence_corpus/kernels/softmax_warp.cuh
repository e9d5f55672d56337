#pragma once
// One warp per row softmax for rows of up to 32 * kVec elements (kVec <= 32).
#include <cuda_bf16.h>
#include <cfloat>

template <int kVec>
__device__ void warp_softmax_row(const __nv_bfloat16* __restrict__ in, __nv_bfloat16* __restrict__ out, int n) {
  const int lane = threadIdx.x & 31;
  float v[kVec];
  float m = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const int c = i * 32 + lane;
    v[i] = c < n ? __bfloat162float(in[c]) : -FLT_MAX;
    m = fmaxf(m, v[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    v[i] = __expf(v[i] - m);
    s += v[i];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.f / s;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const int c = i * 32 + lane;
    if (c < n) out[c] = __float2bfloat16(v[i] * inv);
  }
}
