// Lab variant `cuda2` of topk-logits (issue 21): exact top-50 of each float32 row, one CTA per row,
// one read of the row from HBM and no scratch memory. cuda1's algorithm with cheaper per-row phases:
// on the H200 cuda1 ran 570 / 544 / 815 us at graded shapes 0 / 1 / 2, which a per-row fixed cost of
// ~13-19 us explains (16 waves of rows at shape 2, 4 and 2 at shapes 0 and 1). Each CTA's fixed phases
// hold its share of the SM's bandwidth idle, so they are cut:
// - the sample is the first streaming step's registers (cuda1 read it twice more, L1/L2 round trips);
// - the K largest are placed by rank (each candidate counts the larger keys: broadcast reads of the
//   buffer, one barrier) instead of a 512-key bitonic sort (45 barrier steps);
// - values come back from their keys (the key's bits invert to the value's) instead of a reload,
//   except for zeros, whose sign the key drops.
//
// Why CUDA C++: the Triton solution's candidates take their slots by a global atomic each
// (Triton has no shared-memory atomics) and a second kernel or a last-segment hand-off merges
// them; here a warp's candidates of one step take their slots in a shared-memory buffer with one
// shared atomic per warp (ballot + popc), and the CTA that streamed the row sorts them itself.
//
// Per row (blockIdx.x):
// 1. A threshold t = mean + z * std from the row's first SAMPLE columns (z from the host: about
//    E of the row's V values are >= t for normal rows; t = -inf when V <= CAP: all are taken).
// 2. The row streamed once, 16-byte loads (UNROLL in flight a thread), each value >= t appended
//    to the CTA's buffer as a 64-bit key: (order-preserving bits of the value) << 32 | ~column,
//    so a larger key is a larger value, then a lower column; -0.0 keys as +0.0 (they are equal).
//    The count goes on past CAP, to tell an overflow.
// 3. Exact check: if CAP >= count >= K, the K-th largest value is >= t, so every one of the top
//    K is in the buffer: sort it (bitonic, descending) and write the first K, the values reloaded
//    from the row (bit-exact). Otherwise (adversarial rows, ties, infinities, a threshold off its
//    estimate) the row is solved exactly here: the K-th largest value key by a 4-pass radix
//    select (8-bit digits, shared histograms), the keys above it and, of the keys equal to it,
//    the lowest columns first (a column-ordered pass), then the same sort and write.
// NaN inputs are not supported (as the solution's).
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kK = 50;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCap = 512;
constexpr int kSample = 2048;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread per step
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ uint32_t okey(float v) {
  uint32_t b = __float_as_uint(v);
  if (v == 0.0f) b = 0u;  // -0.0 == +0.0: one key, the column decides
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ uint64_t full_key(float v, uint32_t col) {
  return (static_cast<uint64_t>(okey(v)) << 32) | static_cast<uint64_t>(0xffffffffu - col);
}

__device__ __forceinline__ float4 load_stream(const float4* p) {
  float4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
               : "l"(p));
  return r;
}

// Block-wide sum of one float per thread; every thread gets it. `red` holds kWarps floats.
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red may still be read from a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s += red[w];
  return s;
}

// Appends `key` for the lanes where `take` holds: one shared atomic per warp. Every lane of the
// warp must call it (the ballot).
__device__ __forceinline__ void append(bool take, uint64_t key, uint64_t* buf, unsigned* count) {
  const unsigned m = __ballot_sync(kFull, take);
  if (m == 0) return;
  const int lane = threadIdx.x % 32;
  unsigned base = 0;
  if (lane == 0) base = atomicAdd(count, static_cast<unsigned>(__popc(m)));
  base = __shfl_sync(kFull, base, 0);
  if (take) {
    const unsigned slot = base + static_cast<unsigned>(__popc(m & ((1u << lane) - 1u)));
    if (slot < kCap) buf[slot] = key;
  }
}

// The value a key was made from: okey inverted. A zero key stands for +0.0 and -0.0 alike (they tie),
// so a zero is read back from the row, bit for bit.
__device__ __forceinline__ float key_value(uint64_t key, const float* __restrict__ row, uint32_t col) {
  const uint32_t u = static_cast<uint32_t>(key >> 32);
  if (u == 0x80000000u) return row[col];
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

// Writes the kK largest of the n distinct keys buf[0, n) in descending order. Each key's place is the
// number of larger keys: every thread reads the same buf[j] at once (a shared-memory broadcast), and
// no barrier is needed between the steps, where a bitonic sort of the buffer takes 45.
__device__ void place_by_rank(const uint64_t* buf, unsigned n, const float* __restrict__ row, float* __restrict__ values,
                              int64_t* __restrict__ indices) {
  for (unsigned i = threadIdx.x; i < n; i += kThreads) {
    const uint64_t key = buf[i];
    unsigned rank = 0;
#pragma unroll 4
    for (unsigned j = 0; j < n; ++j) rank += buf[j] > key ? 1u : 0u;
    if (rank < static_cast<unsigned>(kK)) {
      const uint32_t col = 0xffffffffu - static_cast<uint32_t>(key & 0xffffffffu);
      values[rank] = key_value(key, row, col);
      indices[rank] = static_cast<int64_t>(col);
    }
  }
}

// The exact path: the top kK keys of the row into buf[0, kK) (unsorted), by radix select.
__device__ void exact_row(const float* __restrict__ row, int V, uint64_t* buf, unsigned* hist, unsigned* shared_u) {
  // shared_u: [0] the selected digit, [1] how many of the keys equal to the K-th are taken,
  // [2] slots filled, [3] equal keys seen so far (in column order), [4] all slots filled
  uint32_t prefix = 0, pmask = 0;
  if (threadIdx.x == 0) shared_u[1] = kK;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int i = threadIdx.x; i < 256; i += kThreads) hist[i] = 0;
    __syncthreads();
    for (int c = threadIdx.x; c < V; c += kThreads) {
      const uint32_t u = okey(row[c]);
      if ((u & pmask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned need = shared_u[1], acc = 0;
      int sel = 0;
      for (int d = 255; d >= 0; --d) {
        if (acc + hist[d] >= need) {
          sel = d;
          break;
        }
        acc += hist[d];
      }
      shared_u[0] = static_cast<unsigned>(sel);
      shared_u[1] = need - acc;  // the rank wanted among the keys with this digit
    }
    __syncthreads();
    prefix |= shared_u[0] << shift;
    pmask |= 255u << shift;
    __syncthreads();
  }
  const uint32_t kth = prefix;
  const unsigned take_equal = shared_u[1];  // K - (number of keys above kth)
  if (threadIdx.x == 0) {
    shared_u[2] = 0;
    shared_u[3] = 0;
  }
  __syncthreads();
  // Keys above kth (fewer than kK) in any order; keys equal to it in column order, the first
  // take_equal of them. Tiles of kThreads columns, a block-wide exclusive scan of "equal" per tile.
  unsigned* warp_eq = hist;  // hist is free now: kWarps counters
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int s = 0; s < V; s += kThreads) {
    const int c = s + threadIdx.x;
    const float v = c < V ? row[c] : 0.f;
    const uint32_t u = c < V ? okey(v) : 0u;
    const bool above = c < V && u > kth;
    const bool equal = c < V && u == kth;
    if (above) {
      const unsigned slot = atomicAdd(&shared_u[2], 1u);
      buf[slot] = full_key(v, static_cast<uint32_t>(c));
    }
    const unsigned m = __ballot_sync(kFull, equal);
    if (lane == 0) warp_eq[warp] = static_cast<unsigned>(__popc(m));
    __syncthreads();
    unsigned before = shared_u[3];
    for (int w = 0; w < warp; ++w) before += warp_eq[w];
    before += static_cast<unsigned>(__popc(m & ((1u << lane) - 1u)));
    if (equal && before < take_equal) {
      const unsigned slot = atomicAdd(&shared_u[2], 1u);
      buf[slot] = full_key(v, static_cast<uint32_t>(c));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned tile = 0;
      for (int w = 0; w < kWarps; ++w) tile += warp_eq[w];
      shared_u[3] += tile;
      // Every slot is filled (the keys above kth and the equal ones wanted): the rest of the row
      // cannot add one. Decided by one thread into shared memory: were each thread to read the
      // slot count itself, a thread already in the next tile could raise it between two readers.
      shared_u[4] = shared_u[2] >= static_cast<unsigned>(kK);
    }
    __syncthreads();
    if (shared_u[4]) break;
  }
}

__global__ void __launch_bounds__(kThreads, 8) topk_rows(const float* __restrict__ x, float* __restrict__ values,
                                                          int64_t* __restrict__ indices, int V, float z, int take_all) {
  __shared__ uint64_t buf[kCap];
  __shared__ unsigned hist[256];
  __shared__ float red[kWarps];
  __shared__ unsigned count;
  __shared__ unsigned shared_u[5];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * V;
  if (threadIdx.x == 0) count = 0;  // published by the barriers of the threshold's sums (or the one below)

  if ((V & 3) == 0) {
    // One pass over the row in steps of kThreads * kUnroll float4; step 0 is loaded before the
    // threshold is known, and its first two loads (columns [0, 2048)) are the threshold's sample.
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int n4 = V >> 2;
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = u * kThreads + threadIdx.x;
      v[u] = i < n4 ? load_stream(row4 + i) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float t = -INFINITY;
    if (!take_all) {
      // mean, then the centred sum of squares, over the first min(V, kSample) columns: cuda1's
      // threshold exactly, from registers. kSample / 4 = 2 * kThreads float4: v[0] and v[1].
      static_assert(kSample == 2 * kThreads * 4 && kUnroll >= 2, "the sample is step 0's first two loads");
      const int n = V < kSample ? V : kSample;
      const bool in0 = threadIdx.x < n4, in1 = kThreads + threadIdx.x < n4;
      float s = 0.f;
      if (in0) s += (v[0].x + v[0].y) + (v[0].z + v[0].w);
      if (in1) s += (v[1].x + v[1].y) + (v[1].z + v[1].w);
      const float mean = block_sum(s, red) / n;
      float q = 0.f;
      if (in0) {
        const float a = v[0].x - mean, b = v[0].y - mean, c = v[0].z - mean, d = v[0].w - mean;
        q += (a * a + b * b) + (c * c + d * d);
      }
      if (in1) {
        const float a = v[1].x - mean, b = v[1].y - mean, c = v[1].z - mean, d = v[1].w - mean;
        q += (a * a + b * b) + (c * c + d * d);
      }
      const float sd = sqrtf(block_sum(q, red) / n);
      t = mean + z * sd;  // NaN when the sample holds infinities: nothing passes, the exact path runs
    } else {
      __syncthreads();
    }
    for (int s = 0; s < n4; s += kThreads * kUnroll) {
      if (s != 0) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int i = s + u * kThreads + threadIdx.x;
          v[u] = i < n4 ? load_stream(row4 + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
      }
      bool any = false;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = s + u * kThreads + threadIdx.x;
        any |= i < n4 && (v[u].x >= t || v[u].y >= t || v[u].z >= t || v[u].w >= t);
      }
      if (!__any_sync(kFull, any)) continue;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = s + u * kThreads + threadIdx.x;
        const bool in = i < n4;
        const uint32_t c = static_cast<uint32_t>(i) * 4u;
        append(in && v[u].x >= t, full_key(v[u].x, c), buf, &count);
        append(in && v[u].y >= t, full_key(v[u].y, c + 1), buf, &count);
        append(in && v[u].z >= t, full_key(v[u].z, c + 2), buf, &count);
        append(in && v[u].w >= t, full_key(v[u].w, c + 3), buf, &count);
      }
    }
  } else {
    // Rows of a width that is not a multiple of 4 (the task's correctness shapes): cuda1's path.
    float t = -INFINITY;
    if (!take_all) {
      const int n = V < kSample ? V : kSample;
      float s = 0.f;
      for (int c = threadIdx.x; c < n; c += kThreads) s += row[c];
      const float mean = block_sum(s, red) / n;
      float q = 0.f;
      for (int c = threadIdx.x; c < n; c += kThreads) {
        const float d = row[c] - mean;
        q += d * d;
      }
      const float sd = sqrtf(block_sum(q, red) / n);
      t = mean + z * sd;
    } else {
      __syncthreads();
    }
    for (int s = 0; s < V; s += kThreads) {
      const int c = s + threadIdx.x;
      const float v = c < V ? row[c] : -INFINITY;
      append(c < V && v >= t, full_key(v, static_cast<uint32_t>(c)), buf, &count);
    }
  }
  __syncthreads();

  // The check, or the exact path (which leaves exactly kK keys in buf[0, kK)).
  unsigned n = count;
  if (n < static_cast<unsigned>(kK) || n > static_cast<unsigned>(kCap)) {
    __syncthreads();  // every thread has read count before the exact path reuses shared memory
    exact_row(row, V, buf, hist, shared_u);
    __syncthreads();
    n = kK;
  }
  place_by_rank(buf, n, row, values + static_cast<int64_t>(blockIdx.x) * kK, indices + static_cast<int64_t>(blockIdx.x) * kK);
}

}  // namespace

int topk_k() { return kK; }
int topk_cap() { return kCap; }

void topk_launch(const float* x, float* values, int64_t* indices, long B, long V, float z, bool take_all,
                 cudaStream_t stream) {
  topk_rows<<<static_cast<unsigned>(B), kThreads, 0, stream>>>(x, values, indices, static_cast<int>(V), z,
                                                              take_all ? 1 : 0);
}
