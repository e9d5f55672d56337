// Block-scaled fp8 GEMM for sm_90a (issue 20; lab round 6 wrote it as cuda1, round 7 widened its
// tile to 128x192 as n192): each consumer warpgroup issues m64n192k32 wgmmas.
//
// Hypothesis: at 128x128 every k32 wgmma reads A (2 KiB) + B (4 KiB) from shared memory per
// 64 tensor cycles (96 B/clk) while TMA writes 32 KiB per stage (64 B/clk at full rate): above
// the SM's 128 B/clk of shared memory. n192 reads 8 KiB per 96 cycles (85 B/clk) and TMA fills
// 40 KiB per 768 cycles (53 B/clk), and the warpgroups issue a third fewer wgmmas and waits per
// flop. Registers (promotion every 128 products): 96 accumulators + 96 partials a thread, inside
// setmaxnreg's 232. 5 stages of 40 KiB.
//
// The tile's 192 columns straddle two of B's 128-column scale blocks: tile tn starts at
// 192*tn, i.e. at offset 0 (tn even) or 64 (tn odd) of a scale block, so n8 blocks 0-7 of the
// fragment always take the lower block's scale, 16-23 the upper's, and 8-15 the lower's when
// tn is even, the upper's when odd (a select per stage, not per element).
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
#define KZOO_STAGES 5
#endif

namespace {

constexpr int BM = 128, BN = 192, BK = 128;  // BK = the scale block: one A scale per stage
constexpr int NACC = BN / 2;                  // accumulator registers a thread (64 x BN / 128)
constexpr int STAGES = KZOO_STAGES;
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int THREADS = 384;                 // warpgroup 0: producer; 1, 2: consumers
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_M = 16;                  // tile rows per band of the grouped order
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;  // + 1024: alignment
static_assert(KZOO_PROMOTE == 128, "n192 promotes once per scale block only (registers)");
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
__device__ __forceinline__ void reg_fence(float (&d)[NACC]) {
#pragma unroll
  for (int i = 0; i < NACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64x192] (+)= A[64x32] . B[192x32]^T, e4m3 x e4m3 -> f32; scale_d 0 starts from zero, so the
// partial registers are never written by a non-wgmma instruction (ptxas would serialise).
__device__ __forceinline__ void wgmma_n192(float (&d)[96], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(scale_d));
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
// are the first row, d[4i+2..4i+3] the second. sc[c][h]: the scale product of row h (0, 1) and
// column class c (0: n8 blocks 0-7, 1: 8-15, 2: 16-23).
__device__ __forceinline__ void promote(float (&acc)[NACC], float (&p)[NACC], const float (&sc)[3][2]) {
  reg_fence(p);  // after the wait that completed p's wgmmas
#pragma unroll
  for (int i = 0; i < NACC / 4; ++i) {
    const int c = i / 8;
    acc[4 * i + 0] = fmaf(p[4 * i + 0], sc[c][0], acc[4 * i + 0]);
    acc[4 * i + 1] = fmaf(p[4 * i + 1], sc[c][0], acc[4 * i + 1]);
    acc[4 * i + 2] = fmaf(p[4 * i + 2], sc[c][1], acc[4 * i + 2]);
    acc[4 * i + 3] = fmaf(p[4 * i + 3], sc[c][1], acc[4 * i + 3]);
  }
}

// One promotion group: four chained k32 wgmmas into p (one 128-deep stage), the first from zero.
__device__ __forceinline__ void issue(float (&p)[NACC], uint64_t da, uint64_t db) {
  wg_fence();
#pragma unroll
  for (int k = 0; k < BK / 32; ++k) wgmma_n192(p, da + 2 * k, db + 2 * k, k);
  wg_commit();
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
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
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

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int cw = wg - 1;                 // consumer warpgroup: rows cw*64 .. +63 of the tile
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int frag_row = cw * 64 + warp * 16 + lane / 4;
  const int nbn = (N + 127) / 128;       // B's scale blocks along N
  float acc[NACC];
  uint32_t it = 0;

  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    const int r0 = tm * BM + frag_row;
    // Scales of this thread's two rows (rows past M read row M-1: their outputs are not stored).
    const float* sa0 = A_scale + (size_t)min(r0, M - 1) * nkb;
    const float* sa1 = A_scale + (size_t)min(r0 + 8, M - 1) * nkb;
    // The two B scale blocks under the tile's 192 columns; past N's last block read the last
    // (those columns are not stored).
    const int blo = (tn * BN) / 128;
    const float* sbl = B_scale + (size_t)blo * nkb;
    const float* sbh = B_scale + (size_t)min(blo + 1, nbn - 1) * nkb;
    const bool mid_hi = (tn & 1) != 0;  // n8 blocks 8-15 lie in the upper block when tn is odd
    float na0 = __ldg(sa0), na1 = __ldg(sa1), nbl = __ldg(sbl), nbh = __ldg(sbh);  // next K block's
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

    // One stage (one 128-deep K block, one promotion) per iteration; the stage drains
    // (wait_group 0) before its promotion (round 6: partials in flight across the back edge make
    // ptxas serialise the wgmmas). Overlap comes from the other consumer warpgroup.
    for (int kb = 0; kb < nkb; ++kb) {
      const uint32_t st = (it + kb) % STAGES;
      mbar_wait(bar_full + 8 * st, ((it + kb) / STAGES) & 1);
      float sc[3][2];
      sc[0][0] = na0 * nbl;
      sc[0][1] = na1 * nbl;
      sc[2][0] = na0 * nbh;
      sc[2][1] = na1 * nbh;
      sc[1][0] = mid_hi ? sc[2][0] : sc[0][0];
      sc[1][1] = mid_hi ? sc[2][1] : sc[0][1];
      if (kb + 1 < nkb) {  // the next block's scales: their latency hides under this stage
        na0 = __ldg(sa0 + kb + 1);
        na1 = __ldg(sa1 + kb + 1);
        nbl = __ldg(sbl + kb + 1);
        nbh = __ldg(sbh + kb + 1);
      }
      const uint32_t sa = base + st * STAGE_BYTES;
      const uint64_t da = sw128_desc(sa + cw * 64 * BK), db = sw128_desc(sa + A_BYTES);
      float p0[NACC];
      issue(p0, da, db);
      wg_wait<0>();
      // The stage's wgmmas are complete: its shared memory may be refilled while this warpgroup
      // promotes (DeepGEMM arrives here too, before the promotion).
      if (lane == 0) mbar_arrive(bar_empty + 8 * st);
      promote(acc, p0, sc);
    }
    it += nkb;

    // Epilogue: bf16 straight from the registers, masked at the edges; column pairs as one
    // 4-byte store where N is even (then every pair's address is 4-byte aligned).
    const int col0 = tn * BN + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
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
