// y[t, i] = silu(x[t, i]) * x[t, I + i], bf16 in and out, float32 math.
//
// Fast path (I % 8 == 0, 16-byte aligned): grid.x = rows, grid.y = column blocks;
// each thread handles two 16-byte vectors of the row (8 bf16 each) from both
// halves, so every load and store is a full 16 bytes and several are in flight
// per thread. Fallback: one element per thread over a grid-stride loop.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kVecPerThread = 2;

__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + __expf(-a)) * b; }

__device__ __forceinline__ uint4 gate(const uint4& a, const uint4& b) {
  const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
  uint4 out;
  __nv_bfloat162* po = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 fa = __bfloat1622float2(pa[j]);
    const float2 fb = __bfloat1622float2(pb[j]);
    po[j] = __floats2bfloat162_rn(silu_mul(fa.x, fb.x), silu_mul(fa.y, fb.y));
  }
  return out;
}

__global__ void silu_and_mul_vec(const uint4* __restrict__ x, uint4* __restrict__ y, int nvec) {
  const int64_t row = blockIdx.x;
  const uint4* xa = x + row * 2 * nvec;
  const uint4* xb = xa + nvec;
  uint4* yr = y + row * nvec;
  const int first = blockIdx.y * (kThreads * kVecPerThread) + threadIdx.x;
  uint4 a[kVecPerThread], b[kVecPerThread];
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    const int c = first + k * kThreads;
    if (c < nvec) {
      a[k] = __ldg(xa + c);
      b[k] = __ldg(xb + c);
    }
  }
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    const int c = first + k * kThreads;
    if (c < nvec) yr[c] = gate(a[k], b[k]);
  }
}

__global__ void silu_and_mul_any(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t rows,
                                 int64_t I) {
  const int64_t n = rows * I;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = e / I, i = e - t * I;
    const float a = __bfloat162float(x[t * 2 * I + i]);
    const float b = __bfloat162float(x[t * 2 * I + I + i]);
    y[e] = __float2bfloat16_rn(silu_mul(a, b));
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void silu_and_mul_launch(const void* x, void* y, long rows, long I, cudaStream_t stream) {
  if (I % 8 == 0 && aligned16(x) && aligned16(y) && rows <= 2147483647L) {
    const int nvec = static_cast<int>(I / 8);
    const int per_block = kThreads * kVecPerThread;
    dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((nvec + per_block - 1) / per_block));
    silu_and_mul_vec<<<grid, kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint4*>(y), nvec);
    return;
  }
  const int64_t n = static_cast<int64_t>(rows) * I;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;
  silu_and_mul_any<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), rows, I);
}
