// Block-scaled fp8 GEMM for sm_90a, lab round 8 `ws3`: the solution (round 7's n192) on a 192x192
// CTA tile with THREE consumer warpgroups (64 rows x 192 columns each) + the TMA producer warp.
//
// Hypothesis: round 7 measured a wider N per wgmma (n192, +9%) and a third consumer warpgroup
// (m192w3, +3-5%) separately; each attacks a different loss (shared-memory read per flop; the
// per-warpgroup drain + promotion bubble that only one other warpgroup covers). Here both at
// once. Registers: 512 threads, setmaxnreg 24 (producer) / 160 (consumers: 128 x 24 + 384 x 160 =
// 64,512 of 65,536). 96 accumulators + 96 partials (n192's 192) do not fit 160, so each scale
// block runs as two chains of four m64n96k32 wgmmas (columns 0-95, then 96-191) into one
// 48-register partial, each chain waited (wait_group 0) and promoted into its half of the
// accumulator before the next is issued: 96 + 48 = 144 live. The two other warpgroups' wgmmas
// run while one promotes. Cost: a 64x96 wgmma reads A (2 KiB) + B (3 KiB) per 48 tensor clocks,
// 5/6 of n192's shared-memory efficiency per flop but better than 128x128's; B 24 KiB + A 24 KiB a
// stage, 4 stages of 48 KiB. Wave quantisation: 1849 tiles at 8192^3 = 14.01 per CTA (15 waves).
// Fitting 160 registers (0 spills) took: the stage's four scales prefetched into L1 at its top
// and loaded into registers after each chain's wait (nothing but acc + one partial held across a
// chain), their addresses recomputed from an opaque copy of t (no hoisted offsets), 32-bit
// descriptor words joined inside the wgmma asm, the tile's coordinates recomputed for the
// epilogue. Cost: ~3 tile_coords (integer divisions) per stage per thread.
//
// Scale classes: tile column tn starts at offset 0 (tn even) or 64 (tn odd) of B's 128-column
// scale block; the fragment's global n8 block j = 12*half + i (0..23) takes the lower block's
// scale for j < 8, the upper's for j >= 16, and for 8 <= j < 16 the lower's (tn even) or the
// upper's (tn odd), as in n192.
//
// Needs K % 16 == 0 (TMA's 16-byte global stride rule) and 16-byte-aligned bases; the Python
// module sends every other shape to a dequantise-then-matmul path. Out-of-bounds rows and K
// columns arrive as zeros from TMA; the stores are masked.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#ifndef KZOO_PROMOTE
#define KZOO_PROMOTE 128
#endif
#ifndef KZOO_STAGES
#define KZOO_STAGES 4
#endif

namespace {

constexpr int BM = 192, BN = 192, BK = 128;  // BK = the scale block: one A scale per stage
constexpr int NACC = BN / 2;                  // accumulator registers a thread (64 x BN / 128)
constexpr int NH = NACC / 2;                  // partial registers a thread: one 96-column half
constexpr int STAGES = KZOO_STAGES;
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int THREADS = 512;                 // warpgroup 0: producer; 1, 2, 3: consumers
constexpr int CONSUMER_WARPS = 12;
constexpr int GROUP_M = 16;                  // tile rows per band of the grouped order
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;  // + 1024: alignment
static_assert(KZOO_PROMOTE == 128, "ws3 promotes once per scale block only (registers)");
static_assert(SMEM_BYTES <= 232448, "shared memory");

__device__ __forceinline__ uint32_t su32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// ---- mbarrier (PTX ISA 9.7.13.15) ----
__device__ __forceinline__ void mbar_init(uint32_t b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t b, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}" ::"r"(b), "r"(parity) : "memory");
}

// ---- TMA: 2D tile load, completion counted in bytes on an mbarrier ----
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}

// ---- wgmma ----
// Shared-memory matrix descriptor, K-major operand with 128B swizzle: start address >> 4 in
// bits 0-13, leading byte offset (unused for swizzled K-major; 1) in 16-29, stride byte
// offset 1024 B (8 rows of 128 B) >> 4 in 32-45, layout 1 (SWIZZLE_128B) in 62-63. The ring's
// stages are 1024-aligned, so the base offset (49-51) is 0; a k32 step inside the 128-byte
// row is +32 B on the start address (as CUTLASS's descriptor iterator and DeepGEMM do).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// Tells the compiler the registers change here, so no read of them moves across a wgmma wait
// (the asm statements of the wgmma write them "synchronously" as far as it knows).
template <int R>
__device__ __forceinline__ void reg_fence(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64x96] (+)= A[64x32] . B[96x32]^T, e4m3 x e4m3 -> f32; scale_d 0 starts from zero, so the
// partial registers are never written by a non-wgmma instruction (ptxas would serialise).
// da, db: the descriptors' low words (start address, LBO); the high word (SBO 1024, SWIZZLE_128B)
// is the constant 0x40000040, joined inside the asm so that no 64-bit descriptor is kept live
// per k step (registers: 160 a consumer thread).
__device__ __forceinline__ void wgmma_n96(float (&d)[NH], uint32_t da, uint32_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n.reg .b64 da, db;\nsetp.ne.b32 p, %50, 0;\n"
      "mov.b64 da, {%48, 0x40000040};\nmov.b64 db, {%49, 0x40000040};\n"
      "wgmma.mma_async.sync.aligned.m64n96k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, da, db, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(da), "r"(db), "r"(scale_d));
}

// Tile t of the persistent walk -> (tile row, tile column): bands of GROUP_M tile rows, column
// by column inside a band, so the SMs' concurrent tiles share A rows and B columns in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int width = GROUP_M * tiles_n;
  const int first = (t / width) * GROUP_M;
  const int rows = min(tiles_m - first, GROUP_M);
  tm = first + (t % width) % rows;
  tn = (t % width) / rows;
}

// Accumulator fragment of m64nNk32 (PTX ISA "wgmma register fragment D"): thread l of warp w
// holds rows w*16 + l/4 (+8) and, for each n8 block i, columns i*8 + 2*(l%4) + {0,1}; d[4i..4i+1]
// are the first row, d[4i+2..4i+3] the second. Half H's partial (n8 blocks 0-11 of an m64n96)
// lands in acc's n8 blocks 12H..12H+11, so acc has n192's layout (the epilogue is n192's).
// Column classes: 0 = global n8 blocks 0-7 (lower B scale block), 1 = 8-15 (lower when tn is
// even, upper when odd), 2 = 16-23 (upper).
template <int H>
__device__ __forceinline__ void promote_half(float (&acc)[NACC], float (&p)[NH], float lo0, float lo1, float hi0,
                                             float hi1) {
  // lo*: the scales of the half's first class (H = 0: class 0, H = 1: class 1), hi*: of its
  // second (class 1, class 2); n8 block i < 8 - 4H is in the first class.
  reg_fence(p);  // after the wait that completed p's wgmmas
#pragma unroll
  for (int i = 0; i < NH / 4; ++i) {
    const int j = 12 * H + i;
    const bool first = i < 8 - 4 * H;
    const float s0 = first ? lo0 : hi0, s1 = first ? lo1 : hi1;
    acc[4 * j + 0] = fmaf(p[4 * i + 0], s0, acc[4 * j + 0]);
    acc[4 * j + 1] = fmaf(p[4 * i + 1], s0, acc[4 * j + 1]);
    acc[4 * j + 2] = fmaf(p[4 * i + 2], s1, acc[4 * j + 2]);
    acc[4 * j + 3] = fmaf(p[4 * i + 3], s1, acc[4 * j + 3]);
  }
}

// One promotion group: four chained k32 wgmmas into p (one 96-column half of one 128-deep
// stage), the first from zero.
__device__ __forceinline__ void issue(float (&p)[NH], uint32_t da, uint32_t db) {
  wg_fence();
#pragma unroll
  for (int k = 0; k < BK / 32; ++k) wgmma_n96(p, da + 2 * k, db + 2 * k, k);
  wg_commit();
}

// The addresses of one stage's scales for this thread: its two rows' A scales (rows past M read
// row M-1: their outputs are not stored) and the two B scale blocks under the tile's 192 columns
// (past N's last block the last: those columns are not stored). Computed from an opaque copy of
// t, so the compiler cannot hoist them out of the K loop into registers the partials need.
__device__ __forceinline__ void scale_ptrs(const float* (&sp)[4], int t, int kb, int M, int N, int K, int frag_row,
                                           const float* A_scale, const float* B_scale) {
  int zz = 0;
  asm volatile("" : "+r"(t), "+r"(zz));
  const int Mz = M + zz, Nz = N + zz, nkb = (K + zz + BK - 1) / BK;
  int tm, tn;
  tile_coords(t, (Mz + BM - 1) / BM, (Nz + BN - 1) / BN, tm, tn);
  const int r0 = tm * BM + frag_row, blo = (tn * BN) / 128;
  sp[0] = A_scale + min(r0, Mz - 1) * nkb + kb;
  sp[1] = A_scale + min(r0 + 8, Mz - 1) * nkb + kb;
  sp[2] = B_scale + blo * nkb + kb;
  sp[3] = B_scale + min(blo + 1, (Nz + 127) / 128 - 1) * nkb + kb;
}
// Whether the tile's n8 blocks 8-15 lie in the upper B scale block (tile column odd).
__device__ __forceinline__ bool scale_mid_hi(int t, int M, int N) {
  int tm, tn;
  tile_coords(t, (M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  return (tn & 1) != 0;
}

__global__ void __launch_bounds__(THREADS, 1)
fp8_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                const float* __restrict__ A_scale, const float* __restrict__ B_scale,
                __nv_bfloat16* __restrict__ out, int M, int N, int K) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = su32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;  // SW128 tiles need 1024-byte alignment
  const uint32_t bar_full = base + STAGES * STAGE_BYTES, bar_empty = bar_full + STAGES * 8;

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int nkb = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_full + 8 * s, 1);                 // the producer's expect_tx arrival
      mbar_init(bar_empty + 8 * s, CONSUMER_WARPS);   // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmB) : "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // Producer: registers go to the consumers; one thread issues every TMA load.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (threadIdx.x != 0) return;
    uint32_t it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      tile_coords(t, tiles_m, tiles_n, tm, tn);
      for (int kb = 0; kb < nkb; ++kb, ++it) {
        const uint32_t s = it % STAGES, round = it / STAGES;
        mbar_wait(bar_empty + 8 * s, (round & 1) ^ 1);  // fresh barrier: parity 1 passes at once
        mbar_expect_tx(bar_full + 8 * s, STAGE_BYTES);   // the full box counts, zero-filled or not
        const uint32_t sa = base + s * STAGE_BYTES;
        tma_load_2d(sa, &tmA, bar_full + 8 * s, kb * BK, tm * BM);
        tma_load_2d(sa + A_BYTES, &tmB, bar_full + 8 * s, kb * BK, tn * BN);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 160;");
  const int cw = wg - 1;                 // consumer warpgroup 0-2: rows cw*64 .. +63 of the tile
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int frag_row = cw * 64 + warp * 16 + lane / 4;
  float acc[NACC];
  uint32_t it = 0;

  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

    // One stage (one 128-deep K block, two promotions) per iteration; the stage drains
    // (wait_group 0) before each half's promotion (round 6: partials in flight across the back
    // edge make ptxas serialise the wgmmas). Overlap comes from the two other consumer warpgroups.
    // The stage's own scales are loaded at its top (no prefetch a block ahead, as n192 does: four
    // fewer live registers); their latency hides under the first chain and its wait.
    for (int kb = 0; kb < nkb; ++kb) {
      const uint32_t st = (it + kb) % STAGES;
      // This stage's four scales: pulled into L1 now, loaded into registers only after the
      // first chain's wait (four registers fewer while the wgmmas run: 160 a consumer thread).
      {
        const float* sp[4];
        scale_ptrs(sp, t, kb, M, N, K, frag_row, A_scale, B_scale);
#pragma unroll
        for (int q = 0; q < 4; ++q) asm volatile("prefetch.global.L1 [%0];" ::"l"(sp[q]) : "memory");
      }
      mbar_wait(bar_full + 8 * st, ((it + kb) / STAGES) & 1);
      const uint32_t sa = base + st * STAGE_BYTES;
      const uint32_t da = (uint32_t)sw128_desc(sa + cw * 64 * BK), db = (uint32_t)sw128_desc(sa + A_BYTES);
      {
        float p0[NH];  // columns 0-95 (B rows 0-95 of the stage): classes 0 and 1
        issue(p0, da, db);
        wg_wait<0>();
        const float* sp[4];
        scale_ptrs(sp, t, kb, M, N, K, frag_row, A_scale, B_scale);
        const float a0 = __ldg(sp[0]), a1 = __ldg(sp[1]), bl = __ldg(sp[2]), bh = __ldg(sp[3]);
        const bool mid_hi = scale_mid_hi(t, M, N);
        const float l0 = a0 * bl, l1 = a1 * bl;
        promote_half<0>(acc, p0, l0, l1, mid_hi ? a0 * bh : l0, mid_hi ? a1 * bh : l1);
        // Half 0's FMAs stay above half 1's issue: p0 and p1 never live together (registers).
        reg_fence(acc);
      }
      {
        float p1[NH];  // columns 96-191: B rows 96-191, 12 swizzle atoms (12 KiB) further; classes 1, 2
        issue(p1, da, db + ((96 * BK) >> 4));
        wg_wait<0>();
        // The stage's wgmmas are complete: its shared memory may be refilled while this
        // warpgroup promotes (DeepGEMM arrives here too, before the promotion).
        if (lane == 0) mbar_arrive(bar_empty + 8 * st);
        const float* sp[4];  // loaded again (L1 hits): nothing held across the chain
        scale_ptrs(sp, t, kb, M, N, K, frag_row, A_scale, B_scale);
        const float a0 = __ldg(sp[0]), a1 = __ldg(sp[1]), bl = __ldg(sp[2]), bh = __ldg(sp[3]);
        const bool mid_hi = scale_mid_hi(t, M, N);
        const float h0 = a0 * bh, h1 = a1 * bh;
        promote_half<1>(acc, p1, mid_hi ? h0 : a0 * bl, mid_hi ? h1 : a1 * bl, h0, h1);
      }
    }
    it += nkb;

    // Epilogue: bf16 straight from the registers, masked at the edges; column pairs as one
    // 4-byte store where N is even (then every pair's address is 4-byte aligned). The tile's
    // coordinates are computed again (not kept live across the K loop: registers).
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    const int r0e = tm * BM + frag_row;
    const int col0 = tn * BN + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0e + 8 * h;
      if (r >= M) continue;
      __nv_bfloat16* orow = out + (size_t)r * N;
#pragma unroll
      for (int i = 0; i < NACC / 4; ++i) {
        const int col = col0 + 8 * i;
        const float v0 = acc[4 * i + 2 * h], v1 = acc[4 * i + 2 * h + 1];
        if ((N & 1) == 0) {
          if (col < N) *reinterpret_cast<__nv_bfloat162*>(orow + col) = __floats2bfloat162_rn(v0, v1);
        } else {
          if (col < N) orow[col] = __float2bfloat16_rn(v0);
          if (col + 1 < N) orow[col + 1] = __float2bfloat16_rn(v1);
        }
      }
    }
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    // The driver's entry point through the runtime: no -lcuda at link time.
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// [rows, K] uint8, K contiguous, box [box_rows, 128 bytes], 128B swizzle, zeros out of bounds.
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)K};
  cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
  cuuint32_t estr[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(ptr), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace

// Returns 0 on success, a cudaError_t, or -1 when a tensor map could not be made.
extern "C" int kzoo_fp8_blockscale_gemm(const void* A, const float* A_scale, const void* B, const float* B_scale,
                                        void* out, int M, int N, int K, void* stream) {
  static int num_sms = 0;
  if (!num_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev);
    cudaError_t e = cudaFuncSetAttribute(fp8_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) { num_sms = 0; return (int)e; }
  }
  CUtensorMap ma, mb;
  if (!make_map(&ma, A, M, K, BM) || !make_map(&mb, B, N, K, BN)) return -1;
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const int grid = tiles < num_sms ? tiles : num_sms;
  fp8_gemm_kernel<<<grid, THREADS, SMEM_BYTES, (cudaStream_t)stream>>>(ma, mb, A_scale, B_scale,
                                                                       (__nv_bfloat16*)out, M, N, K);
  return (int)cudaGetLastError();
}

extern "C" int kzoo_fp8_config(int* promote, int* stages) {
  *promote = KZOO_PROMOTE;
  *stages = STAGES;
  return 0;
}
