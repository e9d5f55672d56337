// Lab variant `flat1k` of silu-and-mul (issue 21, round 2): y[t, i] = silu(x[t, i]) * x[t, I + i].
// Round 2: `flat` (below) with torch.compile's program size: its pointwise kernel (read from the
// sources the compile part kept, session 22) takes 1024 elements a program on 4 warps -- one
// 16-byte vector of each half a thread -- and ran 324.0 / 371.6 / 324.5 us (session 21) against flat's
// 338.1 / 386.1 / 338.2 (session 22), both by events. So: 128 threads a block, one vector a thread
// (flat: 256 x 2).
// Round 1's note follows.
//
// Hypothesis: the solution's 2-D grid (a block per row and 512-vector column block) leaves
// threads idle where a row's vectors are not a multiple of 512 (I = 14336: the 4th block of
// every row half empty, 1/8 of the launched threads), and walks the rows column block by
// column block. Here one 1-D grid covers y's vectors in memory order: block b handles vectors
// [512 b, 512 b + 512) of the flat output, each thread two of them (256 apart), each split into
// (row, column) by one 32-bit division; rows cross block boundaries freely, so no thread is idle
// but in the last block. Same 16-byte loads and stores, the same float32 maths (bit-identical).
// Fallback (I % 8 != 0, unaligned, or more than 2^31 vectors): the solution's element loop.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 128;  // round 2: torch.compile's 4 warps
constexpr int kVecPerThread = 1;  // round 2: 1024 elements a block

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

__global__ void silu_and_mul_flat(const uint4* __restrict__ x, uint4* __restrict__ y, unsigned nvec, unsigned total) {
  const unsigned first = blockIdx.x * (kThreads * kVecPerThread) + threadIdx.x;
  uint4 a[kVecPerThread], b[kVecPerThread];
  unsigned e[kVecPerThread];
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    e[k] = first + k * kThreads;
    if (e[k] < total) {
      const unsigned row = e[k] / nvec, c = e[k] - row * nvec;
      const uint4* xa = x + static_cast<size_t>(row) * 2 * nvec + c;
      a[k] = __ldg(xa);
      b[k] = __ldg(xa + nvec);
    }
  }
#pragma unroll
  for (int k = 0; k < kVecPerThread; ++k) {
    if (e[k] < total) y[e[k]] = gate(a[k], b[k]);
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
  if (I % 8 == 0 && aligned16(x) && aligned16(y) && rows > 0 && rows * (I / 8) <= 2147483647L) {
    const unsigned nvec = static_cast<unsigned>(I / 8);
    const unsigned total = static_cast<unsigned>(rows * (I / 8));
    const unsigned per_block = kThreads * kVecPerThread;
    silu_and_mul_flat<<<(total + per_block - 1) / per_block, kThreads, 0, stream>>>(static_cast<const uint4*>(x),
                                                                                   static_cast<uint4*>(y), nvec, total);
    return;
  }
  const int64_t n = static_cast<int64_t>(rows) * I;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;
  silu_and_mul_any<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), rows, I);
}
