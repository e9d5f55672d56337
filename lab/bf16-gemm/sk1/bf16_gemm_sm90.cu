// Dense bf16 GEMM for sm_90a (issue 20, lab/bf16-gemm round 2 `sk1`): out[M,N] = A[M,K] . B[N,K]^T,
// bf16 operands K-contiguous, fp32 accumulation in the wgmma accumulators, bf16 out.
// Round 1's `cuda1` (a TMA producer warp, a STAGES-deep mbarrier ring, two consumer warpgroups of
// m64n256k16 wgmma on a 128x256 tile, a persistent grouped grid of #SMs CTAs, the epilogue through
// shared memory and TMA stores) with a hybrid data-parallel + stream-K schedule.
//
// Why: 128x256 tiles quantise badly at the graded shapes (1024 tiles = 7.76 waves of 132 SMs,
// 2048 = 15.52 waves): the last partial wave leaves ~24-48% of the SMs idle for one tile's time
// (~3% of the kernel). Schedule (KZOO_SK 1, when tiles % G != 0 and tiles > G):
//  - the first (tiles / G - 1) * G tiles of the grouped order are walked as cuda1 walks them
//    (tile = blockIdx.x + i * G): every CTA the same number;
//  - the remaining S tiles (G < S < 2G) are split evenly by k block over all G CTAs: the
//    iteration space [0, S * KI) (KI = k blocks a tile), CTA c takes [c*S*KI/G, (c+1)*S*KI/G),
//    which it walks as pieces (tile, kb0, kb1) after its data-parallel tiles.
//  - A piece with kb0 == 0 is its tile's owner piece; only a CTA's first piece can have kb0 > 0,
//    so a CTA has at most one non-owner piece (one workspace slot a CTA). The owner meets its
//    piece at the end of its range, the other contributors at the start of theirs (or they span
//    the whole range), so they are done before the owner needs them.
//  - Non-owner piece: the fp32 fragments go to the CTA's slot (float4 a thread, consecutive
//    threads consecutive 16 bytes), __threadfence, a warpgroup barrier, then a per-(CTA,
//    warpgroup) flag is set to the call's generation with st.release.gpu. Owner piece: after its
//    own k blocks, one thread a warpgroup spins (ld.acquire.gpu) until every contributor's flag
//    holds this call's generation, a warpgroup barrier, the partials are added (ld.global.cg: L2,
//    never the non-coherent path), then the normal epilogue.
//  - The generation is a kernel argument the host bumps every call (no memset launch); the
//    workspace (G x 128 KiB) and flags (2G words) are allocated once per device by bf16_gemm.py.
//  - Spinning on another CTA is safe only if all CTAs are resident: grid == #SMs, 1 CTA/SM
//    (230 KB of shared memory, __launch_bounds__(384, 1)); contributors never wait on anyone.
// KZOO_SK 0 compiles cuda1's walk and no fixup code (the control); 2 also splits when tiles < G
// (every tile stream-K: small shapes then exercise 3+ contributors a tile; for device tests).
//
// Shapes the TMA path cannot take (K % 8 != 0: TMA's 16-byte row stride; misaligned bases) go to
// a simple shared-memory-tiled CUDA kernel (fallback_kernel); N % 8 != 0 keeps the TMA loads and
// writes the output from the registers with masks (no output tensor map). Stream-K applies to
// both TMA paths (the fixup sits before the epilogue).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <string.h>

#ifndef KZOO_STAGES
#define KZOO_STAGES 4
#endif
#ifndef KZOO_GROUP_M
#define KZOO_GROUP_M 8
#endif
#ifndef KZOO_SK
#define KZOO_SK 1
#endif

namespace {

constexpr int BM = 128, BN = 256, BK = 64;   // BK bf16 = 128 bytes: one SW128 row
constexpr int NACC = BN / 2;                  // accumulator registers a thread (64 x BN / 128)
constexpr int STAGES = KZOO_STAGES;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int THREADS = 384;                 // warpgroup 0: producer; 1, 2: consumers
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_M = KZOO_GROUP_M;        // tile rows per band of the grouped order
constexpr int SK = KZOO_SK;                  // 0 data-parallel only, 1 hybrid stream-K, 2 also tiles < G
constexpr int SLOT_FLOATS = BM * BN;         // one CTA's fp32 partial tile (128 KiB)
#ifndef KZOO_FIX_BATCH
#define KZOO_FIX_BATCH 8
#endif
constexpr int FIX_BATCH = KZOO_FIX_BATCH;    // partial loads in flight a thread (x 4 registers)
static_assert((NACC / 4) % FIX_BATCH == 0, "fixup batches");
constexpr int EPI_BOX = 64 * 64 * 2;         // 64 rows x 64 bf16 columns, 128 B rows
constexpr int EPI_SLOTS = 2;                 // per consumer warpgroup
constexpr int EPI_BYTES = 2 * EPI_SLOTS * EPI_BOX;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8 + 1024;  // + 1024: alignment
static_assert(SMEM_BYTES <= 232448, "shared memory");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "SW128 atoms need 1024-byte alignment");

__device__ __forceinline__ uint32_t su32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// ---- mbarrier ----
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

// ---- TMA ----
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"((uint64_t)map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read1() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Named barrier of one consumer warpgroup (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void wg_bar(int cw) {
  if (cw == 0) asm volatile("bar.sync 1, 128;" ::: "memory");
  else asm volatile("bar.sync 2, 128;" ::: "memory");
}
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// ---- wgmma ----
// Shared-memory matrix descriptor, K-major operand, 128B swizzle: start address >> 4 (bits 0-13),
// leading byte offset 1 (unused for swizzled K-major, 16-29), stride byte offset 1024 B >> 4 (8
// rows of 128 B, 32-45), base offset 0 (stages 1024-aligned), layout SWIZZLE_128B = 1 (62-63).
// A k16 step of bf16 inside the 128-byte row is +32 B on the start address (+2 encoded).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// The registers change here as far as the compiler knows: no read of acc moves above the wait.
__device__ __forceinline__ void reg_fence(float (&d)[NACC]) {
#pragma unroll
  for (int i = 0; i < NACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64x256] (+)= A[64x16] . B[256x16]^T, bf16 x bf16 -> f32, both K-major (transpose immediates
// 0); scale_d 0 starts from zero (the accumulators are never zeroed by ordinary instructions).
__device__ __forceinline__ void wgmma_n256(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127},"
      " %128, %129, p, 1, 1, 0, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
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

// ---- stream-K fixup: cross-CTA flags and the fp32 partials ----
__device__ __forceinline__ void st_release_gpu(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Another CTA wrote these in this kernel: L2 (.cg), never the non-coherent path (.nc / __ldg).
__device__ __forceinline__ float4 ld_cg_f4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_f4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// One CTA's work list, walked identically by the producer thread and both consumer warpgroups:
// its data-parallel tiles (t = cta, cta + G, ... < dp_tiles), then its stream-K range of the
// iteration space [0, (tiles - dp_tiles) * nkb) as pieces (tile, kb0, kb1). dp_tiles == tiles
// is cuda1's walk. 32-bit arithmetic (the producer runs under setmaxnreg 40): the host splits only
// when sk_iters * G < 2^31.
struct Walk {
  int nkb, dp_tiles, grid, t, sk_iters, k, k_end;
  __device__ __forceinline__ Walk(int tiles, int nkb_, int dp, int g, int cta)
      : nkb(nkb_), dp_tiles(dp), grid(g), t(cta), sk_iters((tiles - dp) * nkb_) {
    k = begin(cta);
    k_end = begin(cta + 1);
  }
  __device__ __forceinline__ int begin(int c) const { return sk_iters * c / grid; }
  __device__ __forceinline__ bool next(int& tile, int& kb0, int& kb1) {
    if (t < dp_tiles) {
      tile = t;
      kb0 = 0;
      kb1 = nkb;
      t += grid;
      return true;
    }
    if (SK == 0 || k >= k_end) return false;
    const int q = k / nkb;
    kb0 = k - q * nkb;
    kb1 = min(nkb, kb0 + (k_end - k));
    tile = dp_tiles + q;
    k += kb1 - kb0;
    return true;
  }
};

__global__ void __launch_bounds__(THREADS, 1)
bf16_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC, int tma_store,
                 __nv_bfloat16* __restrict__ out, int M, int N, int K, int dp_tiles,
                 float* __restrict__ ws, unsigned* __restrict__ flags, unsigned gen) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = su32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;       // SW128 tiles need 1024-byte alignment
  const uint32_t epi = base + STAGES * STAGE_BYTES;  // the epilogue's boxes
  const uint32_t bar_full = epi + EPI_BYTES, bar_empty = bar_full + STAGES * 8;

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int nkb = (K + BK - 1) / BK;  // >= 1 (the host never launches K == 0)
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_full + 8 * s, 1);                // the producer's expect_tx arrival
      mbar_init(bar_empty + 8 * s, CONSUMER_WARPS);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmB) : "memory");
    if (tma_store) asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmC) : "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // Producer: registers go to the consumers; one thread issues every TMA load.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x != 0) return;
    uint32_t it = 0;
    Walk w(tiles, nkb, dp_tiles, gridDim.x, blockIdx.x);
    int t, kb0, kb1;
    while (w.next(t, kb0, kb1)) {
      int tm, tn;
      tile_coords(t, tiles_m, tiles_n, tm, tn);
      for (int kb = kb0; kb < kb1; ++kb, ++it) {
        const uint32_t s = it % STAGES, round = it / STAGES;
        mbar_wait(bar_empty + 8 * s, (round & 1) ^ 1);  // fresh barrier: parity 1 passes at once
        mbar_expect_tx(bar_full + 8 * s, STAGE_BYTES);   // the full boxes count, zero-filled or not
        const uint32_t sa = base + s * STAGE_BYTES;
        tma_load_2d(sa, &tmA, bar_full + 8 * s, kb * BK, tm * BM);
        tma_load_2d(sa + A_BYTES, &tmB, bar_full + 8 * s, kb * BK, tn * BN);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int cw = wg - 1;  // consumer warpgroup: rows cw*64 .. +63 of the tile
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int wtid = threadIdx.x % 128;
  const bool leader = wtid == 0;
  float acc[NACC];
  uint32_t it = 0;
  Walk w(tiles, nkb, dp_tiles, gridDim.x, blockIdx.x);
  int t, kb0, kb1;

  while (w.next(t, kb0, kb1)) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    const int n = kb1 - kb0;

    // Mainloop: stage j's four k16 wgmmas are issued, then the group before it is waited for
    // (wait_group 1) and its stage released, so one stage's wgmmas are always queued. The first
    // wgmma of a piece has scale-d 0: a piece starting at kb0 > 0 starts from zero too.
    for (int j = 0; j < n; ++j) {
      const uint32_t g = it + j;
      const uint32_t st = g % STAGES;
      mbar_wait(bar_full + 8 * st, (g / STAGES) & 1);
      const uint32_t sa = base + st * STAGE_BYTES;
      const uint64_t da = sw128_desc(sa + cw * 64 * (BK * 2)), db = sw128_desc(sa + A_BYTES);
      wg_fence();
#pragma unroll
      for (int k = 0; k < BK / 16; ++k) wgmma_n256(acc, da + 2 * k, db + 2 * k, (j > 0 || k > 0) ? 1 : 0);
      wg_commit();
      if (j > 0) {
        wg_wait<1>();
        if (lane == 0) mbar_arrive(bar_empty + 8 * ((g - 1) % STAGES));
      }
    }
    wg_wait<0>();
    reg_fence(acc);
    if (lane == 0) mbar_arrive(bar_empty + 8 * ((it + n - 1) % STAGES));
    it += n;

    if constexpr (SK != 0) {
      // Slot layout (this warpgroup's 64x256 half): float4 j of thread wtid at (j * 128 + wtid) * 4,
      // so each float4 step of the warpgroup is 2 KiB of consecutive addresses.
      if (kb0 > 0) {
        // Non-owner piece (only ever a CTA's first piece): publish the partial, no epilogue.
        float* slot = ws + (size_t)blockIdx.x * SLOT_FLOATS + cw * (SLOT_FLOATS / 2) + 4 * wtid;
#pragma unroll
        for (int j = 0; j < NACC / 4; ++j)
          st_f4(slot + j * 512, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        __threadfence();
        wg_bar(cw);
        if (leader) st_release_gpu(flags + 2 * blockIdx.x + cw, gen);
        continue;
      }
      if (kb1 < nkb) {
        // Owner piece of a split tile: add every later CTA whose range starts inside this tile
        // (empty ranges contribute nothing and publish nothing).
        const int tile_end = (t - dp_tiles + 1) * nkb;
        for (int c = blockIdx.x + 1; c < (int)gridDim.x; ++c) {
          const int b = w.begin(c);
          if (b >= tile_end) break;
          if (w.begin(c + 1) == b) continue;
          if (leader) {
            const unsigned* f = flags + 2 * c + cw;
            while (ld_acquire_gpu(f) != gen) {
            }
          }
          wg_bar(cw);
          const float* slot = ws + (size_t)c * SLOT_FLOATS + cw * (SLOT_FLOATS / 2) + 4 * wtid;
          // FIX_BATCH loads issued before their adds: the asm loads keep their order, so one
          // load then its adds would leave one L2 round trip in flight at a time.
#pragma unroll
          for (int j0 = 0; j0 < NACC / 4; j0 += FIX_BATCH) {
            float4 v[FIX_BATCH];
#pragma unroll
            for (int j = 0; j < FIX_BATCH; ++j) v[j] = ld_cg_f4(slot + (j0 + j) * 512);
#pragma unroll
            for (int j = 0; j < FIX_BATCH; ++j) {
              acc[4 * (j0 + j)] += v[j].x;
              acc[4 * (j0 + j) + 1] += v[j].y;
              acc[4 * (j0 + j) + 2] += v[j].z;
              acc[4 * (j0 + j) + 3] += v[j].w;
            }
          }
        }
      }
    }

    // Accumulator fragment of m64nNk16 (PTX ISA "wgmma register fragment D"): thread l of warp w
    // holds rows w*16 + l/4 (+8) and, for n8 block j, columns 8j + 2*(l%4) + {0,1}; acc[4j..4j+1]
    // the first row, acc[4j+2..4j+3] the second.
    if (tma_store) {
      // Box b = the tile's columns 64b..64b+63 of this warpgroup's 64 rows; n8 block j = 8b + i
      // goes to 16-byte chunk i ^ (row % 8) of its 128-byte row (the SWIZZLE_128B layout).
      const uint32_t ebase = epi + cw * (EPI_SLOTS * EPI_BOX);
      const int er = warp * 16 + lane / 4;
#pragma unroll
      for (int b = 0; b < BN / 64; ++b) {
        const uint32_t slot = ebase + (b % EPI_SLOTS) * EPI_BOX;
        if (leader) bulk_wait_read1();  // the slot's previous box (two stores ago) has been read
        wg_bar(cw);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = er + 8 * h;
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const int j = 8 * b + i;
            __nv_bfloat162 v = __floats2bfloat162_rn(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            st_shared_b32(slot + r * 128 + ((i ^ (r & 7)) << 4) + 4 * (lane % 4), *reinterpret_cast<uint32_t*>(&v));
          }
        }
        fence_async_smem();
        wg_bar(cw);
        const int x = tn * BN + 64 * b, y = tm * BM + cw * 64;
        if (leader) {
          if (x < N && y < M) tma_store_2d(&tmC, slot, x, y);  // TMA clips a box crossing N or M
          bulk_commit();  // an empty group when skipped: wait_group counts stay uniform
        }
      }
      continue;
    }

    // Register epilogue (N % 8 != 0): bf16 straight from the registers, masked at the edges.
    const int r0 = tm * BM + cw * 64 + warp * 16 + lane / 4;
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
  // The last boxes' reads of shared memory must finish before the CTA exits.
  if (tma_store && leader) bulk_wait0();
}

// Fallback for shapes the TMA path cannot take (K % 8 != 0, misaligned bases): 64x64 output
// tiles, 256 threads each computing 4x4 outputs, 32-deep K slices staged as float in shared
// memory with bounds checks (zeros past M, N, K). Only the small correctness shapes take it.
constexpr int FB_T = 64, FB_K = 32;
__global__ void __launch_bounds__(256)
fallback_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                __nv_bfloat16* __restrict__ out, int M, int N, int K) {
  __shared__ float As[FB_K][FB_T + 1], Bs[FB_K][FB_T + 1];
  const int m0 = blockIdx.y * FB_T, n0 = blockIdx.x * FB_T;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float c[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += FB_K) {
    for (int e = threadIdx.x; e < FB_T * FB_K; e += 256) {
      const int r = e / FB_K, k = e % FB_K;
      const int gk = k0 + k;
      As[k][r] = (m0 + r < M && gk < K) ? __bfloat162float(A[(size_t)(m0 + r) * K + gk]) : 0.f;
      Bs[k][r] = (n0 + r < N && gk < K) ? __bfloat162float(B[(size_t)(n0 + r) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < FB_K; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i], b[i] = Bs[k][tx + 16 * i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) c[i][j] = fmaf(a[i], b[j], c[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = m0 + ty + 16 * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + tx + 16 * j;
      if (col < N) out[(size_t)r * N + col] = __float2bfloat16_rn(c[i][j]);
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

// [rows, K] bf16, K contiguous, box [box_rows, 64 elements = 128 bytes], 128B swizzle, zeros
// out of bounds (rows past `rows`, columns past K).
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
  cuuint32_t estr[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// out [M, N] bf16, N contiguous, box [64 rows, 64 columns], 128B swizzle; needs N % 8 == 0 (the
// 16-byte global stride rule) and a 16-byte-aligned base.
bool make_out_map(CUtensorMap* map, void* ptr, int M, int N) {
  auto fn = encode_fn();
  if (!fn || N % 8 || (uintptr_t)ptr % 16) return false;
  cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};
  cuuint64_t strides[1] = {(cuuint64_t)N * 2};
  cuuint32_t box[2] = {64, 64};
  cuuint32_t estr[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The stream-K split's first tile: (tiles / G - 1) * G data-parallel tiles, the rest (between G
// and 2G tiles) stream-K; tiles when the walk stays data-parallel (an even split, too few tiles,
// KZOO_SK 0, or no workspace for G slots). KZOO_SK 2 also splits tiles < G (all stream-K).
int sk_dp_tiles(int tiles, int nkb, int grid, bool have_ws) {
  if (SK == 0 || !have_ws || tiles % grid == 0) return tiles;
  const int dp = tiles < grid ? (SK == 2 ? 0 : tiles) : (tiles / grid - 1) * grid;
  if ((long long)(tiles - dp) * nkb * grid >= (1LL << 31)) return tiles;  // Walk's 32-bit range
  return dp;
}

}  // namespace

// Returns 0 on success or a cudaError_t. path (optional): 1 TMA kernel + TMA store, 2 TMA kernel +
// register epilogue, 3 the fallback kernel (for the lab's checks); sk (optional): 1 when the call
// split tiles by stream-K. ws: ws_slots x 128 KiB of fp32 partials, flags: 2 x ws_slots words
// (zeroed once at allocation), gen: this call's generation (never 0, never the previous call's):
// without them (null, or fewer slots than SMs) the walk stays data-parallel.
extern "C" int kzoo_bf16_gemm(const void* A, const void* B, void* out, int M, int N, int K, void* stream,
                              int* path, void* ws, int ws_slots, void* flags, unsigned gen, int* sk) {
  static int num_sms = 0, resident = 0;
  if (!num_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev);
    cudaError_t e = cudaFuncSetAttribute(bf16_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) { num_sms = 0; return (int)e; }
    // CTAs an SM can hold (1 here: 230 KB of shared memory, 168 x 384 registers); stream-K's
    // grid of num_sms is then all resident at once.
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, bf16_gemm_kernel, THREADS, SMEM_BYTES) != cudaSuccess)
      resident = 0;
  }
  if (sk) *sk = 0;
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  CUtensorMap ma, mb, mc;
  const bool tma_ok = K % 8 == 0 && (uintptr_t)A % 16 == 0 && (uintptr_t)B % 16 == 0 &&
                      make_map(&ma, A, M, K, BM) && make_map(&mb, B, N, K, BN);
  if (!tma_ok) {
    dim3 grid((N + FB_T - 1) / FB_T, (M + FB_T - 1) / FB_T);
    fallback_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>((const __nv_bfloat16*)A, (const __nv_bfloat16*)B,
                                                            (__nv_bfloat16*)out, M, N, K);
    if (path) *path = 3;
    return (int)cudaGetLastError();
  }
  memset(&mc, 0, sizeof(mc));
  const int tma_store = make_out_map(&mc, out, M, N) ? 1 : 0;  // else the register epilogue
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  // Stream-K spins on other CTAs' flags: the grid must be exactly the SM count (one CTA an SM,
  // all resident) and every CTA must own a slot.
  const bool have_ws = ws && flags && gen && ws_slots >= num_sms && resident >= 1;
  const int dp_tiles = sk_dp_tiles(tiles, (K + BK - 1) / BK, num_sms, have_ws);
  const int grid = dp_tiles < tiles ? num_sms : (tiles < num_sms ? tiles : num_sms);
  bf16_gemm_kernel<<<grid, THREADS, SMEM_BYTES, (cudaStream_t)stream>>>(
      ma, mb, mc, tma_store, (__nv_bfloat16*)out, M, N, K, dp_tiles, (float*)ws, (unsigned*)flags, gen);
  if (path) *path = tma_store ? 1 : 2;
  if (sk) *sk = dp_tiles < tiles ? 1 : 0;
  return (int)cudaGetLastError();
}

// The build's knobs and the workspace a device needs (slot_floats fp32 a slot, one slot an SM).
extern "C" int kzoo_bf16_config(int* stages, int* group_m, int* smem, int* sk, int* slot_floats) {
  *stages = STAGES;
  *group_m = GROUP_M;
  *smem = SMEM_BYTES;
  *sk = SK;
  *slot_floats = SLOT_FLOATS;
  return 0;
}
