// LayerNorm over rows of bf16, float32 statistics (mean, then the centred biased variance),
// y = (x - mean) / sqrt(var + eps) * w + b rounded once to bf16. Used at H % 8 == 0,
// 4096 <= H <= 16384 with 16-byte aligned pointers (layernorm.py checks; the Triton solution elsewhere).
//
// Why this shape (lab/layernorm/NOTES.md, round 8): the Triton kernels hold a row as float32
// with weight and bias beside it, so few programs fit an SM and a program that reduces or
// stores has no read in flight. Here:
// - a thread holds its 32 elements as 16 registers of packed bf16x2 (four 16-byte loads) and
//   converts them to float32 afresh in each pass (a shift each: cheaper than the registers);
// - a persistent grid (as many CTAs as fit at once), rows blockIdx.x, + gridDim.x, ...; each
//   CTA issues the NEXT row's loads before the current row's reductions, so every CTA has a
//   row in flight at every moment, whatever it is doing (16 KB at H = 8192, 32 KB at 16384);
// - weight and bias are staged once per CTA in shared memory and read vector by vector in the
//   last pass, so they hold no registers while rows load and never go back to L2.
#ifdef KZOO_HOST_EMU
#include "host_emu.h"  // lab/layernorm/: the CPU check runs this kernel (emulate_cuda1.py)
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#define KZOO_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

#include <cstdint>

namespace {

constexpr int kVPT = 4;         // 16-byte vectors a thread: 32 elements, 16 registers
constexpr int kMaxThreads = 512;  // H = 16384
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr float kEps = 1e-5f;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// Every thread sums the warps' partials in the same order, so every thread holds the same
// total and no second barrier is needed to broadcast it. `red` must not be rewritten before
// every thread has read it: the caller alternates two arrays (see the row loop).
__device__ __forceinline__ float block_sum(float v, float* red, int nwarps) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxWarps; ++i)
    if (i < nwarps) s += red[i];
  return s;
}

// bf16 -> float32 of a packed pair's low and high halves. Volatile, so that the compiler cannot
// merge the three passes' conversions into one set of 32 float32 registers kept live across the
// reductions (it does with plain shifts: 73-76 registers instead of 16 packed).
__device__ __forceinline__ float lo(uint32_t u) {
#ifdef KZOO_HOST_EMU
  return __uint_as_float(u << 16);
#else
  uint32_t r;
  asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(u));
  return __uint_as_float(r);
#endif
}
__device__ __forceinline__ float hi(uint32_t u) {
#ifdef KZOO_HOST_EMU
  return __uint_as_float(u & 0xffff0000u);
#else
  uint32_t r;
  asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(u));
  return __uint_as_float(r);
#endif
}

__device__ __forceinline__ uint32_t pack(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <bool kFull>
__device__ __forceinline__ void load_row(uint4 (&v)[kVPT], const uint4* __restrict__ src, int tid, int nthr, int nvec) {
#pragma unroll
  for (int k = 0; k < kVPT; ++k) {
    const int c = k * nthr + tid;
    if (kFull || c < nvec) v[k] = __ldcs(src + c);  // read once: streaming, first out of L1/L2
  }
}

// kFull: nvec == kVPT * blockDim.x (H = 4096, 8192, 12288, 16384): no thread has an idle slot.
template <bool kFull>
__global__ void __launch_bounds__(kMaxThreads, 2)
    layernorm_rows(const uint4* __restrict__ x, const uint4* __restrict__ w, const uint4* __restrict__ b,
                   uint4* __restrict__ y, int T, int nvec, int H) {
  KZOO_DYN_SMEM(uint4, wb);  // weight's nvec vectors, then bias's
  __shared__ float red[2][kMaxWarps];
  const int tid = threadIdx.x, nthr = blockDim.x, nwarps = nthr >> 5, G = gridDim.x;
  int row = blockIdx.x;
  uint4 cur[kVPT], nxt[kVPT];
  load_row<kFull>(cur, x + static_cast<size_t>(row) * nvec, tid, nthr, nvec);
  // The first row's barriers order these writes before the first read of wb.
  for (int c = tid; c < nvec; c += nthr) {
    wb[c] = __ldg(w + c);
    wb[nvec + c] = __ldg(b + c);
  }
  const float fh = static_cast<float>(H);
#pragma unroll 1
  for (; row < T; row += G) {
    const int next = row + G;
    if (next < T) load_row<kFull>(nxt, x + static_cast<size_t>(next) * nvec, tid, nthr, nvec);

    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
      if (kFull || k * nthr + tid < nvec) {
        const uint32_t* u = reinterpret_cast<const uint32_t*>(&cur[k]);
#pragma unroll
        for (int j = 0; j < 4; ++j) s += lo(u[j]) + hi(u[j]);
      }
    }
    // red[0] is next written at the following row's first reduction, which comes after this
    // row's second barrier, which every thread reaches only after reading red[0]; likewise red[1].
    const float mean = block_sum(s, red[0], nwarps) / fh;

    float q = 0.f;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
      if (kFull || k * nthr + tid < nvec) {
        const uint32_t* u = reinterpret_cast<const uint32_t*>(&cur[k]);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float d0 = lo(u[j]) - mean, d1 = hi(u[j]) - mean;
          q += d0 * d0 + d1 * d1;
        }
      }
    }
    const float rstd = 1.f / sqrtf(block_sum(q, red[1], nwarps) / fh + kEps);

    uint4* yr = y + static_cast<size_t>(row) * nvec;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
      const int c = k * nthr + tid;
      if (kFull || c < nvec) {
        const uint4 wv = wb[c], bv = wb[nvec + c];
        const uint32_t* u = reinterpret_cast<const uint32_t*>(&cur[k]);
        const uint32_t* uw = reinterpret_cast<const uint32_t*>(&wv);
        const uint32_t* ub = reinterpret_cast<const uint32_t*>(&bv);
        uint4 o;
        uint32_t* uo = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          uo[j] = pack((lo(u[j]) - mean) * rstd * lo(uw[j]) + lo(ub[j]),
                       (hi(u[j]) - mean) * rstd * hi(uw[j]) + hi(ub[j]));
        __stcs(yr + c, o);  // written once, read by the next kernel from L2 at best: evict first
      }
      // A memory fence for the compiler: without it ptxas hoists every vector's weight and
      // bias loads to the top of this pass (76 registers: 3 CTAs an SM instead of 4 at 8192).
      __syncwarp();
    }
#pragma unroll
    for (int k = 0; k < kVPT; ++k) cur[k] = nxt[k];
  }
}

}  // namespace

// Threads a CTA for a row of nvec vectors: kVPT vectors a thread, whole warps.
int layernorm_threads(long nvec) { return static_cast<int>(((nvec + kVPT - 1) / kVPT + 31) / 32 * 32); }

#ifndef KZOO_HOST_EMU
// Returns the grid launched (0: nothing launched: a width this kernel does not take).
int layernorm_launch(const void* x, const void* w, const void* b, void* y, long T, long H, cudaStream_t stream) {
  if (T <= 0 || H % 8 != 0 || H < 8 || layernorm_threads(H / 8) > kMaxThreads || T > 2147483647L) return 0;
  const int nvec = static_cast<int>(H / 8), threads = layernorm_threads(nvec);
  const size_t smem = static_cast<size_t>(nvec) * 2 * sizeof(uint4);
  const bool full = nvec == kVPT * threads;
  auto kernel = full ? layernorm_rows<true> : layernorm_rows<false>;
  // The attributes and the occupancy query once per (device, width): host calls between the
  // caller's start event and the launch would count as kernel time.
  struct Plan { int dev, nvec, sms, per_sm; };
  static Plan plans[64];
  static int nplans = 0;
  int dev = 0;
  cudaGetDevice(&dev);
  const Plan* plan = nullptr;
  for (int i = 0; i < nplans; ++i)
    if (plans[i].dev == dev && plans[i].nvec == nvec) plan = &plans[i];
  Plan fresh;
  if (plan == nullptr) {
    int sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    // Over 48 KB of dynamic shared memory needs the opt-in; the carve-out makes the occupancy
    // query (and the launch) see all of it.
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
    fresh = Plan{dev, nvec, sms, per_sm < 1 ? 1 : per_sm};
    if (nplans < 64) plans[nplans++] = fresh;
    plan = &fresh;
  }
  const long sms = plan->sms, per_sm = plan->per_sm;
  const long grid = T < static_cast<long>(sms) * per_sm ? T : static_cast<long>(sms) * per_sm;
  kernel<<<static_cast<unsigned>(grid), threads, smem, stream>>>(
      static_cast<const uint4*>(x), static_cast<const uint4*>(w), static_cast<const uint4*>(b), static_cast<uint4*>(y),
      static_cast<int>(T), nvec, static_cast<int>(H));
  return static_cast<int>(grid);
}
#else
// The CPU check runs the kernel's body itself for a given grid (lab/layernorm/ln_emu_cuda1.cpp).
void layernorm_emu_body(const void* x, const void* w, const void* b, void* y, int T, int nvec, int H) {
  auto kernel = nvec == kVPT * layernorm_threads(nvec) ? layernorm_rows<true> : layernorm_rows<false>;
  kernel(static_cast<const uint4*>(x), static_cast<const uint4*>(w), static_cast<const uint4*>(b),
                 static_cast<uint4*>(y), T, nvec, H);
}
#endif
