// Block-scaled fp8 GEMM for sm_90a, lab round 10 candidate `c128`: cuBLAS's shape
// (nvjet_sm90_qqtst_128x128_128x6_2x1: a 128x128x128 tile, 6 stages, clusters of 2x1) in the
// catalog solution's kernel (producer warp + two consumer warpgroups, promotion into fp32 once
// per 128-deep scale block, persistent grouped walk, TMA-store epilogue).
//
// Hypothesis (session 24's profile): the solution waits on its operands (tensor pipe 67.5%, L2
// 71.7%, 0.48 eligible warps a scheduler); cuBLAS at 80.4% of the tensor pipe pulls less from L2
// per unit of work because two vertically adjacent tiles share B's 128x128 box through TMA
// multicast, and 6 stages give the ring more slack than our 4. Round 7's n192mc tried the cluster
// on our tile and lost 33%; NOTES.md round 10 has the reading of why and what differs here:
// - the remote empty-barrier arrival is CUTLASS's `mbarrier.arrive.shared::cluster` (release at
//   CTA scope), not n192mc's `.release.cluster`, which is a cluster-scope fence on every
//   consumer warp's every stage, in the warp's critical path (right after its wgmma wait, before
//   the promotion) and behind its in-flight scale loads and epilogue stores (KZOO_RELCLUSTER=1
//   builds n192mc's form, to isolate it);
// - 6 stages instead of 5: the two CTAs of a cluster are coupled stage by stage (a stage is
//   refilled only when both CTAs' consumers have released it), and the slack absorbs the skew;
// - the TMA-store epilogue (n192mc stored from registers, stalling the warpgroup).
//
// Tile 128x128: each consumer warpgroup owns 64 rows and issues m64n128k32 (64 accumulator + 64
// partial registers a thread). A tile column is exactly one of B's 128x128 scale blocks, so one
// B scale per stage and tile (no column classes as at 192).
// Cluster (KZOO_MC=1): CTA rank r of a cluster takes tile row 2p + r of a tile pair (p, tn); it
// loads its own A box and the 64-row half r of the pair's B box, multicast into both CTAs at the
// same shared offset and onto the same full-barrier offset. A stage's full barrier expects A +
// both halves; its empty barrier counts the consumer warps of BOTH CTAs (each warp's lane 0
// arrives on its own CTA's barrier, lane 1 on the partner's through mapa), because the partner's
// producer writes this CTA's stage too. Both CTAs walk the same pairs, so they run the same
// number of stages. Boxes wholly outside the tensor (the second tile of the last pair when the
// tile rows are odd; B's upper half past N, on which both CTAs agree) are neither loaded nor
// expected: their stale shared memory feeds only rows or columns that are never stored. A cluster
// barrier after the barriers' init (no multicast or remote arrival on an uninitialised barrier)
// and one before exit (no remote arrival on an exited CTA).
// KZOO_MC=0 builds the same kernel without the cluster (the control): 128-row B boxes, local
// arrivals only, a plain launch.
//
// Shared memory at 6 stages: 6 x 32 KiB ring + 2 warpgroups x 2 epilogue boxes of 64x64 bf16
// (8 KiB) = 224 KiB, + 96 B of barriers + 1 KiB alignment slack = 230,496 B of the 232,448
// allowed. At 7 stages only one box a warpgroup would fit beside 224 KiB - which still does not
// fit, so KZOO_STAGES <= 6 (static_assert).
// The output tensor map needs N % 8 == 0 (16-byte row stride); other N take the register epilogue.
//
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <string.h>

#ifndef KZOO_PROMOTE
#define KZOO_PROMOTE 128
#endif
#ifndef KZOO_STAGES
#define KZOO_STAGES 6
#endif
#ifndef KZOO_MC
#define KZOO_MC 1
#endif
#ifndef KZOO_RELCLUSTER
#define KZOO_RELCLUSTER 0
#endif

namespace {

constexpr int BM = 128, BN = 128, BK = 128;  // BK = the scale block: one A scale per stage
constexpr int NACC = BN / 2;                  // accumulator registers a thread (64 x BN / 128)
constexpr int CLUSTER = KZOO_MC ? 2 : 1;      // CTAs per cluster, stacked along M
constexpr int B_BOX = BN / CLUSTER;           // rows of B each CTA loads (and multicasts)
constexpr int STAGES = KZOO_STAGES;
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int B_BOX_BYTES = B_BOX * BK;
constexpr int THREADS = 384;                 // warpgroup 0: producer; 1, 2: consumers
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_ROWS = 16 / CLUSTER;     // walk rows (tile pairs with the cluster) per band: 16 tile rows
// Epilogue staging: per consumer warpgroup EPI_SLOTS boxes of 64 rows x 64 bf16 columns (128 B
// rows, 128-byte swizzle, 1024-aligned), after the ring.
constexpr int EPI_BOX = 64 * 64 * 2;
constexpr int SMEM_LIMIT = 232448;
constexpr int SMEM_FIXED = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;  // + 1024: alignment
constexpr int EPI_SLOTS = SMEM_FIXED + 2 * (BN / 64) * EPI_BOX <= SMEM_LIMIT ? BN / 64 : 1;
constexpr int EPI_BYTES = 2 * EPI_SLOTS * EPI_BOX;
constexpr int SMEM_BYTES = SMEM_FIXED + EPI_BYTES;
static_assert(KZOO_PROMOTE == 128, "c128 promotes once per scale block only (registers)");
static_assert(SMEM_BYTES <= SMEM_LIMIT, "shared memory: at most 6 stages");
static_assert(B_BOX_BYTES % 1024 == 0, "each half of B starts on a 1024-byte swizzle atom");

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

// ---- cluster ----
__device__ __forceinline__ uint32_t cluster_rank() {
#if KZOO_MC
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
// Every thread of both CTAs (non-.aligned: warps may arrive diverged).
__device__ __forceinline__ void cluster_sync() {
#if KZOO_MC
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
#endif
}
#if KZOO_MC
// Arrive on the mbarrier at local shared address b as mapped into CTA cta of the cluster.
// Release at CTA scope, as CUTLASS's ClusterBarrier::arrive(cta_id) and DeepGEMM do: the stage's
// reads are wgmma reads, complete at the wait_group before this; a cluster-scope release would
// fence this warp's other memory traffic on every stage (n192mc's form: KZOO_RELCLUSTER=1).
__device__ __forceinline__ void mbar_arrive_remote(uint32_t b, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(b), "r"(cta));
#if KZOO_RELCLUSTER
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
#else
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
#endif
}

#endif  // KZOO_MC

// ---- TMA: 2D tile load, completion counted in bytes on an mbarrier ----
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
#if KZOO_MC
// The same, delivered to the same shared offset and mbarrier offset in every CTA of ctamask.
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                               uint16_t ctamask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "h"(ctamask) : "memory");
}

#endif  // KZOO_MC
// ---- TMA store of a shared-memory box (bulk async-group completion, PTX ISA 9.7.9.25) ----
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"((uint64_t)map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// The generic-proxy writes to shared memory made visible to the async proxy (TMA) that reads them.
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Named barrier of one consumer warpgroup (ids 1, 2; 0 is __syncthreads); immediate ids, so
// ptxas reserves three barriers, not sixteen.
__device__ __forceinline__ void wg_bar(int cw) {
  if (cw == 0) asm volatile("bar.sync 1, 128;" ::: "memory");
  else asm volatile("bar.sync 2, 128;" ::: "memory");
}
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// ---- wgmma ----
// Shared-memory matrix descriptor, K-major operand with 128B swizzle: start address >> 4 in
// bits 0-13, leading byte offset (unused for swizzled K-major; 1) in 16-29, stride byte
// offset 1024 B (8 rows of 128 B) >> 4 in 32-45, layout 1 (SWIZZLE_128B) in 62-63. The ring's
// stages are 1024-aligned, so the base offset (49-51) is 0; a k32 step inside the 128-byte
// row is +32 B on the start address (as CUTLASS's descriptor iterator and DeepGEMM do). B's two
// 64-row halves (one per CTA of the cluster) lie back to back, 8 KiB = 8 swizzle atoms each, so
// the 128 rows read as one box with the same descriptor.
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

// D[64x128] (+)= A[64x32] . B[128x32]^T, e4m3 x e4m3 -> f32; scale_d 0 starts from zero, so the
// partial registers are never written by a non-wgmma instruction (ptxas would serialise).
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

// Walk index t -> (walk row, tile column): bands of GROUP_ROWS walk rows, column by column inside
// a band, so the SMs' concurrent tiles share A rows and B columns in L2. With the cluster a walk
// row is a pair of tile rows (2p, 2p+1).
__device__ __forceinline__ void walk_coords(int t, int rows_total, int tiles_n, int& pm, int& tn) {
  const int width = GROUP_ROWS * tiles_n;
  const int first = (t / width) * GROUP_ROWS;
  const int rows = min(rows_total - first, GROUP_ROWS);
  pm = first + (t % width) % rows;
  tn = (t % width) / rows;
}

// Accumulator fragment of m64nNk32 (PTX ISA "wgmma register fragment D"): thread l of warp w
// holds rows w*16 + l/4 (+8) and, for each n8 block i, columns i*8 + 2*(l%4) + {0,1}; d[4i..4i+1]
// are the first row, d[4i+2..4i+3] the second. s0, s1: the scale products of the two rows (one
// B scale block under the whole tile).
__device__ __forceinline__ void promote(float (&acc)[NACC], float (&p)[NACC], float s0, float s1) {
  reg_fence(p);  // after the wait that completed p's wgmmas
#pragma unroll
  for (int i = 0; i < NACC / 4; ++i) {
    acc[4 * i + 0] = fmaf(p[4 * i + 0], s0, acc[4 * i + 0]);
    acc[4 * i + 1] = fmaf(p[4 * i + 1], s0, acc[4 * i + 1]);
    acc[4 * i + 2] = fmaf(p[4 * i + 2], s1, acc[4 * i + 2]);
    acc[4 * i + 3] = fmaf(p[4 * i + 3], s1, acc[4 * i + 3]);
  }
}

// One promotion group: four chained k32 wgmmas into p (one 128-deep stage), the first from zero.
__device__ __forceinline__ void issue(float (&p)[NACC], uint64_t da, uint64_t db) {
  wg_fence();
#pragma unroll
  for (int k = 0; k < BK / 32; ++k) wgmma_n128(p, da + 2 * k, db + 2 * k, k);
  wg_commit();
}

__global__ void __launch_bounds__(THREADS, 1)
fp8_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                const __grid_constant__ CUtensorMap tmC, int tma_store,
                const float* __restrict__ A_scale, const float* __restrict__ B_scale,
                __nv_bfloat16* __restrict__ out, int M, int N, int K) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = su32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;  // SW128 tiles need 1024-byte alignment
  const uint32_t epi = base + STAGES * STAGE_BYTES;  // the epilogue's boxes
  const uint32_t bar_full = epi + EPI_BYTES, bar_empty = bar_full + STAGES * 8;
  // The multicast lands at the same offsets in the partner: both CTAs must compute the same
  // base, which they do (same kernel, same static shared memory, same dynamic size).

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int rows_walk = (tiles_m + CLUSTER - 1) / CLUSTER, walk_len = rows_walk * tiles_n;
  const uint32_t rank = cluster_rank();
  const int cid = blockIdx.x / CLUSTER, nclusters = gridDim.x / CLUSTER;
  const int nkb = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_full + 8 * s, 1);                          // the producer's expect_tx arrival
      mbar_init(bar_empty + 8 * s, CLUSTER * CONSUMER_WARPS);  // each consumer warp of every CTA
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmB) : "memory");
    if (tma_store) asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmC) : "memory");
  }
  __syncthreads();
  cluster_sync();  // both CTAs' barriers initialised before any multicast or remote arrival

  if (wg == 0) {
    // Producer: registers go to the consumers; one thread issues every TMA load. The other
    // threads stay (no early return) for the cluster barrier before exit.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      uint32_t it = 0;
      for (int t = cid; t < walk_len; t += nclusters) {
        int pm, tn;
        walk_coords(t, rows_walk, tiles_n, pm, tn);
        const int tm = pm * CLUSTER + (int)rank;  // == tiles_m: the odd pair's second tile, past M
        // Boxes wholly outside the tensor are not loaded and not expected; both CTAs compute
        // hi_in alike (it depends on tn and N only).
        const bool a_in = tm < tiles_m;
        const bool hi_in = CLUSTER == 1 || tn * BN + B_BOX < N;
        const uint32_t tx = (a_in ? A_BYTES : 0) + (CLUSTER == 1 ? B_BYTES : (hi_in ? 2 : 1) * B_BOX_BYTES);
        const bool b_mine = rank == 0 || hi_in;
        for (int kb = 0; kb < nkb; ++kb, ++it) {
          const uint32_t s = it % STAGES, round = it / STAGES;
          // Every consumer warp that reads stage s (both CTAs' with the cluster: the multicast
          // writes the partner's copy too) has released it.
          mbar_wait(bar_empty + 8 * s, (round & 1) ^ 1);  // fresh barrier: parity 1 passes at once
          mbar_expect_tx(bar_full + 8 * s, tx);           // a partly outside box counts whole (zero fill)
          const uint32_t sa = base + s * STAGE_BYTES;
          if (a_in) tma_load_2d(sa, &tmA, bar_full + 8 * s, kb * BK, tm * BM);
#if KZOO_MC
          if (b_mine)
            tma_load_2d_mc(sa + A_BYTES + rank * B_BOX_BYTES, &tmB, bar_full + 8 * s, kb * BK,
                           tn * BN + (int)rank * B_BOX, (uint16_t)((1u << CLUSTER) - 1));
#else
          (void)b_mine;
          tma_load_2d(sa + A_BYTES, &tmB, bar_full + 8 * s, kb * BK, tn * BN);
#endif
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;                 // consumer warpgroup: rows cw*64 .. +63 of the tile
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int frag_row = cw * 64 + warp * 16 + lane / 4;
    float acc[NACC];
    uint32_t it = 0;

    for (int t = cid; t < walk_len; t += nclusters) {
      int pm, tn;
      walk_coords(t, rows_walk, tiles_n, pm, tn);
      const int tm = pm * CLUSTER + (int)rank;  // may be tiles_m (wholly past M) when tiles_m is odd
      const int r0 = tm * BM + frag_row;
      // Scales of this thread's two rows (rows past M read row M-1: their outputs are not stored)
      // and of the tile column's one B scale block.
      const float* sa0 = A_scale + (size_t)min(r0, M - 1) * nkb;
      const float* sa1 = A_scale + (size_t)min(r0 + 8, M - 1) * nkb;
      const float* sb = B_scale + (size_t)tn * nkb;
      float na0 = __ldg(sa0), na1 = __ldg(sa1), nb = __ldg(sb);  // the next K block's
#pragma unroll
      for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

      // One stage (one 128-deep K block, one promotion) per iteration; the stage drains
      // (wait_group 0) before its promotion (round 6: partials in flight across the back edge make
      // ptxas serialise the wgmmas). Overlap comes from the other consumer warpgroup.
      for (int kb = 0; kb < nkb; ++kb) {
        const uint32_t st = (it + kb) % STAGES;
        mbar_wait(bar_full + 8 * st, ((it + kb) / STAGES) & 1);
        const float s0 = na0 * nb, s1 = na1 * nb;
        if (kb + 1 < nkb) {  // the next block's scales: their latency hides under this stage
          na0 = __ldg(sa0 + kb + 1);
          na1 = __ldg(sa1 + kb + 1);
          nb = __ldg(sb + kb + 1);
        }
        const uint32_t sa = base + st * STAGE_BYTES;
        const uint64_t da = sw128_desc(sa + cw * 64 * BK), db = sw128_desc(sa + A_BYTES);
        float p0[NACC];
        issue(p0, da, db);
        wg_wait<0>();
        // The stage's wgmmas are complete: its producers may refill it while this warpgroup
        // promotes. Lane 0 releases this CTA's copy; with the cluster lane 1 releases the
        // partner's (whose producer's multicast writes this CTA's copy too).
        if (lane == 0) mbar_arrive(bar_empty + 8 * st);
#if KZOO_MC
        if (lane == 1) mbar_arrive_remote(bar_empty + 8 * st, rank ^ 1u);
#endif
        promote(acc, p0, s0, s1);
      }
      it += nkb;

      if (tma_store) {
        // Epilogue through shared memory and TMA: box b holds the tile's columns 64b..64b+63 of
        // this warpgroup's 64 rows; fragment n8 block j = 8b + i goes to 16-byte chunk i of its
        // 128-byte row, swizzled (chunk i ^ (row % 8), the layout SWIZZLE_128B reads back).
        const uint32_t ebase = epi + cw * (EPI_SLOTS * EPI_BOX);
        const bool leader = (threadIdx.x % 128) == 0;
        const int er = warp * 16 + lane / 4;  // row within the warpgroup's 64 (+8 for h = 1)
#pragma unroll
        for (int b = 0; b < BN / 64; ++b) {
          const uint32_t slot = ebase + (b % EPI_SLOTS) * EPI_BOX;
          if (b % EPI_SLOTS == 0) {  // the region's earlier stores must have read it
            if (leader) bulk_wait_read0();
            wg_bar(cw);
          }
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
            if (x < N && y < M) tma_store_2d(&tmC, slot, x, y);  // TMA clips a box that crosses N or M
            bulk_commit();
          }
        }
        continue;
      }

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
    // The last boxes' reads of shared memory must finish before the CTA exits.
    if (tma_store && (threadIdx.x % 128) == 0) bulk_wait0();
  }  // consumers
  cluster_sync();  // no CTA exits while its partner may still arrive on its barriers or multicast into it
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

}  // namespace

// Clusters resident at once, per device (a GPC may leave an SM unpaired, so this can be below
// SMs / 2); without the cluster, one CTA per SM. 0 until the device's first launch.
constexpr int MAX_DEV = 64;
static int max_clusters[MAX_DEV] = {};

// Returns 0 on success, a cudaError_t, or -1 when a tensor map could not be made.
extern "C" int kzoo_fp8_blockscale_gemm(const void* A, const float* A_scale, const void* B, const float* B_scale,
                                        void* out, int M, int N, int K, void* stream) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return (int)e;
  if (dev < 0 || dev >= MAX_DEV) return (int)cudaErrorInvalidDevice;
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = SMEM_BYTES;
  cfg.stream = (cudaStream_t)stream;
#if KZOO_MC
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CLUSTER;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
#endif
  if (!max_clusters[dev]) {
    int num_sms = 0;
    cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev);
    e = cudaFuncSetAttribute(fp8_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) return (int)e;
    int n = num_sms / CLUSTER;
#if KZOO_MC
    cfg.gridDim = dim3(n * CLUSTER);
    int occ = 0;
    e = cudaOccupancyMaxActiveClusters(&occ, fp8_gemm_kernel, &cfg);
    if (e != cudaSuccess) return (int)e;
    if (occ > 0) n = occ;
#endif
    max_clusters[dev] = n > 0 ? n : 1;
  }
  CUtensorMap ma, mb, mc;
  if (!make_map(&ma, A, M, K, BM) || !make_map(&mb, B, N, K, B_BOX)) return -1;
  memset(&mc, 0, sizeof(mc));
  const int tma_store = make_out_map(&mc, out, M, N) ? 1 : 0;  // else the register epilogue
  const int walk_len = ((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER * ((N + BN - 1) / BN);
  cfg.gridDim = dim3((walk_len < max_clusters[dev] ? walk_len : max_clusters[dev]) * CLUSTER);
  e = cudaLaunchKernelEx(&cfg, fp8_gemm_kernel, ma, mb, mc, tma_store, A_scale, B_scale, (__nv_bfloat16*)out, M, N, K);
  return e != cudaSuccess ? (int)e : (int)cudaGetLastError();
}

extern "C" int kzoo_fp8_config(int* promote, int* stages) {
  *promote = KZOO_PROMOTE;
  *stages = STAGES;
  return 0;
}


// The launch shape for the lab's logs: CTAs a cluster, clusters resident on the current device
// (0 before its first launch), dynamic shared memory a CTA.
extern "C" int kzoo_fp8_grid(int* cluster, int* clusters, int* smem) {
  int dev = 0;
  cudaGetDevice(&dev);
  *cluster = CLUSTER;
  *clusters = dev >= 0 && dev < MAX_DEV ? max_clusters[dev] : 0;
  *smem = SMEM_BYTES;
  return 0;
}
