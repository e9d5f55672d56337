// LayerNorm over rows of a bf16 matrix, float32 math, one thread block per row.
//
// Fast path (H % 8 == 0, 16-byte aligned, H <= 8 * VPT * threads): each thread
// keeps VPT 16-byte vectors (8 bf16 each) of the row in registers; the mean is a
// block reduction of the sums, the variance a second block reduction of the
// centred squares from the same registers, so the row crosses HBM once.
// Fallback (ragged or very wide rows): the same maths reading the row from global
// memory three times (it is small or rare; L1/L2 serve the repeats).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block, returned to every thread. `scratch` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < warps ? scratch[lane] : 0.f;
  return warp_sum(t);
}

__device__ __forceinline__ void unpack(const uint4& u, float (&f)[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 t = __bfloat1622float2(p[j]);
    f[2 * j] = t.x;
    f[2 * j + 1] = t.y;
  }
}

__device__ __forceinline__ uint4 pack(const float (&f)[8]) {
  uint4 u;
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int j = 0; j < 4; ++j) p[j] = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
  return u;
}

template <int VPT>
__global__ void layernorm_vec(const uint4* __restrict__ x, const uint4* __restrict__ w, const uint4* __restrict__ b,
                              uint4* __restrict__ y, int H, float eps) {
  __shared__ float scratch[32];
  const int nvec = H / 8;
  const int64_t row = blockIdx.x;
  const uint4* xr = x + row * nvec;
  float v[VPT][8];
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < nvec) {
      unpack(__ldg(xr + idx), v[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += v[i][j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[i][j] = 0.f;
    }
  }
  const float mean = block_sum(sum, scratch) / H;
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < nvec) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float c = v[i][j] - mean;
        sq += c * c;
      }
    }
  }
  const float rstd = rsqrtf(block_sum(sq, scratch) / H + eps);
  uint4* yr = y + row * nvec;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < nvec) {
      float wf[8], bf[8], o[8];
      unpack(__ldg(w + idx), wf);
      unpack(__ldg(b + idx), bf);
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = (v[i][j] - mean) * rstd * wf[j] + bf[j];
      yr[idx] = pack(o);
    }
  }
}

__global__ void layernorm_any(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                              const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ y, int H, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * H;
  float sum = 0.f;
  for (int i = threadIdx.x; i < H; i += blockDim.x) sum += __bfloat162float(xr[i]);
  const float mean = block_sum(sum, scratch) / H;
  float sq = 0.f;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    const float c = __bfloat162float(xr[i]) - mean;
    sq += c * c;
  }
  const float rstd = rsqrtf(block_sum(sq, scratch) / H + eps);
  __nv_bfloat16* yr = y + row * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x)
    yr[i] = __float2bfloat16_rn((__bfloat162float(xr[i]) - mean) * rstd * __bfloat162float(w[i]) + __bfloat162float(b[i]));
}

template <int VPT>
void launch_vec(const void* x, const void* w, const void* b, void* y, long rows, int H, float eps, int threads,
                cudaStream_t s) {
  layernorm_vec<VPT><<<rows, threads, 0, s>>>(static_cast<const uint4*>(x), static_cast<const uint4*>(w),
                                               static_cast<const uint4*>(b), static_cast<uint4*>(y), H, eps);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void layernorm_launch(const void* x, const void* w, const void* b, void* y, long rows, int H, float eps,
                      cudaStream_t stream) {
  const int nvec = H / 8;
  const bool vec = H % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(b) && aligned16(y);
  if (vec && nvec <= 8 * 1024) {
    // About four vectors per thread, 32..1024 threads, VPT rounded up to 1, 2, 4 or 8.
    int threads = ((nvec + 3) / 4 + 31) / 32 * 32;
    threads = threads < 32 ? 32 : threads > 1024 ? 1024 : threads;
    const int need = (nvec + threads - 1) / threads;
    if (need <= 1) return launch_vec<1>(x, w, b, y, rows, H, eps, threads, stream);
    if (need <= 2) return launch_vec<2>(x, w, b, y, rows, H, eps, threads, stream);
    if (need <= 4) return launch_vec<4>(x, w, b, y, rows, H, eps, threads, stream);
    return launch_vec<8>(x, w, b, y, rows, H, eps, threads, stream);
  }
  layernorm_any<<<rows, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w),
                                          static_cast<const __nv_bfloat16*>(b), static_cast<__nv_bfloat16*>(y), H, eps);
}
