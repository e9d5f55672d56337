// Device-wide sum: grid-stride loads, warp-shuffle reduction, one atomic per warp.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__inline__ __device__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void __launch_bounds__(kThreads) sum_kernel(const float4* __restrict__ x, float* __restrict__ out,
                                                       int64_t n4) {
  float acc = 0.f;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n4; i += int64_t(gridDim.x) * kThreads) {
    const float4 v = x[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  __shared__ float warp_sums[kThreads / 32];
  acc = warp_reduce_sum(acc);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
    v = warp_reduce_sum(v);
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}

}  // namespace

cudaError_t launch_sum(const float* x, float* out, int64_t n, cudaStream_t stream) {
  if (n % 4 != 0) return cudaErrorInvalidValue;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  sum_kernel<<<sms * 4, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x), out, n / 4);
  return cudaGetLastError();
}
