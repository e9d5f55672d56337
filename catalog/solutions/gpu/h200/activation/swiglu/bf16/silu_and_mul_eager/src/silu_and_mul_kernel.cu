// y[t, i] = silu(x[t, i]) * x[t, I + i], bf16 in and out, float32 math.
//
// Every load and store of the fast paths (I % 8 == 0, 16-byte aligned) is a full 16-byte
// vector of 8 bf16 from each half of x. Two of them, by the row's width:
// - a row of at most 512 vectors (I <= 4096): one block of 256 threads a row, two vectors a
//   thread (silu_and_mul_vec);
// - wider rows: one flat 1-D grid over y's vectors in memory order, 1024 elements (one vector
//   a thread) a block of 4 warps, torch.compile's pointwise program, each vector's (row,
//   column) from one 32-bit division (silu_and_mul_flat). Rows cross blocks freely, so no
//   thread idles where a row is not a multiple of a block.
// Measured on the H200 (lab round 2, session 23, CUDA events, docs/CATALOG.md): the flat kernel
// 329.6 / 376.8 / 329.4 us at the graded shapes against the row kernel's 337.5 / 372.9 / 346.0;
// the row kernel kept the I = 4096 shape (1%), where a row is exactly one of its blocks.
// Fallback (odd I, unaligned, over 2^31 vectors): one element a thread, a grid-stride loop.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;  // the row kernel's block and the fallback's
constexpr int kVecPerThread = 2;
constexpr int kFlatThreads = 128;  // the flat kernel: one vector a thread

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

__global__ void silu_and_mul_flat(const uint4* __restrict__ x, uint4* __restrict__ y, unsigned nvec,
                                  unsigned total) {
  const unsigned e = blockIdx.x * kFlatThreads + threadIdx.x;
  if (e >= total) return;
  const unsigned row = e / nvec, c = e - row * nvec;
  const uint4* xa = x + static_cast<size_t>(row) * 2 * nvec + c;
  const uint4 a = __ldg(xa), b = __ldg(xa + nvec);
  y[e] = gate(a, b);
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
  const bool vec = I % 8 == 0 && aligned16(x) && aligned16(y) && rows > 0;
  if (vec && I / 8 > kThreads * kVecPerThread && rows * (I / 8) <= 2147483647L) {
    const unsigned nvec = static_cast<unsigned>(I / 8);
    const unsigned total = static_cast<unsigned>(rows * (I / 8));
    silu_and_mul_flat<<<(total + kFlatThreads - 1) / kFlatThreads, kFlatThreads, 0, stream>>>(
        static_cast<const uint4*>(x), static_cast<uint4*>(y), nvec, total);
    return;
  }
  if (vec && rows <= 2147483647L) {
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
