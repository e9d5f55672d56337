// Dense bf16 GEMM for sm_90a (issue 20, lab/bf16-gemm round 3 `mc1`): out[M,N] = A[M,K] . B[N,K]^T.
// cuda1 (round 1: TMA producer warp, 4-stage mbarrier ring of 48 KiB, two m64n256k16 consumer
// warpgroups on a 128x256 tile, persistent grouped walk, TMA-store epilogue) launched as clusters
// of two CTAs on vertically adjacent tiles (tile rows 2p and 2p+1 of one tile column: a 256x256
// cluster tile, cuBLAS's nvjet 256x128 1x2 shape turned on its side). The two tiles read the same
// 256x64 box of B per k block: each CTA loads its own A box (16 KiB) and one 128-row half of B
// (16 KiB) with `cp.async.bulk.tensor ... .multicast::cluster` into both CTAs' shared memory (same
// offset, same full-barrier offset), so a CTA pulls 32 KiB a stage from L2 instead of 48.
//
// Hypothesis: at shape 1 (4096x8192x8192) cuBLAS's 2-CTA clusters are what it has and we lack; at
// ~1000 TFLOP/s the 132 SMs pull 48 KiB per 2*128*256*64 flops = ~11.7 TB/s from L2 with cuda1's
// tile, ~7.8 TB/s with the multicast. If L2->SM delivery (or L2 hit latency under that load)
// stretches some stages, the multicast removes it.
//
// Protocol (the fp8 lab's n192mc lost 33% with a cluster; NOTES round 3 has the reading):
// - full barrier (per CTA, count 1): the local producer's arrive.expect_tx of the bytes that land
//   in THIS CTA: its own A box (if the tile is inside M) + both halves of B (the upper half only if
//   it starts inside N; both CTAs share tn, so they agree). The partner's multicast may complete
//   its bytes before the local expect_tx: the tx-count goes negative and the phase cannot complete
//   while the producer's arrival is pending.
// - empty barrier (per CTA, count 2 x 8): every consumer warp of BOTH CTAs arrives (lane c on CTA
//   c's barrier through mapa), because each producer's multicast writes into the partner's stage.
//   A producer therefore refills stage s only after both CTAs read it; this also orders the
//   partner's round-r+1 bytes after this CTA's round-r full phase completed (no early complete_tx).
// - a cluster barrier after the barriers' init (no multicast or remote arrival reaches an
//   uninitialised barrier) and one before exit (no remote arrival on an exited CTA). No thread
//   returns early: barrier.cluster counts every thread of both CTAs.
// - both CTAs walk the same pair list, so they run the same number of stages in the same order.
// Boxes wholly outside the tensor (the odd last pair's second tile past M; B's upper half past N)
// are neither loaded nor expected; the stale shared memory they leave feeds only rows/columns
// that are never stored.
//
// Knobs (compile time; bf16_gemm.py passes them from the environment, each its own library):
// KZOO_MC=0: the same cluster launch and pair walk, each CTA loading its whole B box itself, the
// empty barrier local (8): the control for the cost of the pairing without multicast/lockstep.
// KZOO_CLUSTER=1: no clusters at all, cuda1's walk and kernel (the template's CL = 1 instance, also
// the fallback when the device reports no co-resident 2-CTA cluster). KZOO_STAGES, KZOO_GROUP_M
// (tile rows per band, as cuda1; the pair walk uses GROUP_M / 2 pair rows, the same band height).
//
// Shapes the TMA path cannot take (K % 8 != 0, misaligned bases) go to fallback_kernel; N % 8 != 0
// keeps the TMA loads with a masked register epilogue (no output tensor map).
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
#ifndef KZOO_MC
#define KZOO_MC 1
#endif
#ifndef KZOO_CLUSTER
#define KZOO_CLUSTER 2
#endif
static_assert(KZOO_CLUSTER == 1 || KZOO_CLUSTER == 2, "clusters of 1 or 2 CTAs");
#ifndef KZOO_RELCLUSTER
#define KZOO_RELCLUSTER 0
#endif
static_assert(KZOO_GROUP_M % 2 == 0, "the pair walk's band is GROUP_M / 2 pair rows");

namespace {

constexpr int BM = 128, BN = 256, BK = 64;   // BK bf16 = 128 bytes: one SW128 row
constexpr int NACC = BN / 2;                  // accumulator registers a thread (64 x BN / 128)
constexpr int STAGES = KZOO_STAGES;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int B_HALF = BN / 2, B_HALF_BYTES = B_BYTES / 2;  // each CTA of a pair loads one half
constexpr int THREADS = 384;                 // warpgroup 0: producer; 1, 2: consumers
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_M = KZOO_GROUP_M;        // tile rows per band of the grouped order
constexpr int EPI_BOX = 64 * 64 * 2;         // 64 rows x 64 bf16 columns, 128 B rows
constexpr int EPI_SLOTS = 2;                 // per consumer warpgroup
constexpr int EPI_BYTES = 2 * EPI_SLOTS * EPI_BOX;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8 + 1024;  // + 1024: alignment
static_assert(SMEM_BYTES <= 232448, "shared memory");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && B_HALF_BYTES % 1024 == 0,
              "SW128 atoms need 1024-byte alignment (B's upper half included)");

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

// The same box delivered to the same shared offset and mbarrier offset in every CTA of ctamask;
// each destination's barrier gets complete_tx of the box's bytes.
[[maybe_unused]] __device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                               uint16_t ctamask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "h"(ctamask) : "memory");
}

// ---- cluster ----
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of both CTAs (the non-.aligned form: warps may arrive diverged).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
// Local shared address b as seen in CTA cta's window of the cluster's shared memory (a CTA's
// window is contiguous, so b + x maps to mapa(b) + x).
__device__ __forceinline__ uint32_t mapa_cta(uint32_t b, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(b), "r"(cta));
  return remote;
}
// Arrive on an mbarrier given by its shared::cluster address. The default is CUTLASS's
// ClusterBarrier form (release at CTA scope): the stage's reads are wgmma reads already waited
// for. KZOO_RELCLUSTER=1 builds the cluster-scope release round 3 first had (the fp8 lab's n192mc
// form), which must also order the warp's other memory traffic: the suspect for both 30% losses.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t cluster_addr) {
#if KZOO_RELCLUSTER
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
#else
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
#endif
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

// Tile t of the persistent walk -> (row, column) of the walk's unit: bands of `group` unit rows,
// column by column inside a band, so the SMs' concurrent tiles share A rows and B columns in L2.
// The unit is a tile (CL = 1) or a vertical pair of tiles (CL = 2, group = GROUP_M / 2: the band
// covers the same GROUP_M tile rows as cuda1's, so the L2 footprint of the concurrent tiles is
// cuda1's).
__device__ __forceinline__ void tile_coords(int t, int units_m, int tiles_n, int group, int& um, int& tn) {
  const int width = group * tiles_n;
  const int first = (t / width) * group;
  const int rows = min(units_m - first, group);
  um = first + (t % width) % rows;
  tn = (t % width) / rows;
}

// CL = 1: cuda1's kernel (no cluster instructions). CL = 2: launched with cluster dims (2, 1, 1);
// gridDim.x = 2 x the clusters that fit at once; cluster c walks pairs c, c + nclusters, ...
template <int CL>
__global__ void __launch_bounds__(THREADS, 1)
bf16_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC, int tma_store,
                 __nv_bfloat16* __restrict__ out, int M, int N, int K) {
  constexpr bool MCAST = CL == 2 && KZOO_MC;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = su32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;       // SW128 tiles need 1024-byte alignment
  const uint32_t epi = base + STAGES * STAGE_BYTES;  // the epilogue's boxes
  const uint32_t bar_full = epi + EPI_BYTES, bar_empty = bar_full + STAGES * 8;

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pairs_m = (tiles_m + CL - 1) / CL, pairs = pairs_m * tiles_n;
  const int rank = CL == 2 ? (int)cluster_rank() : 0;
  const int cid = blockIdx.x / CL, nclusters = gridDim.x / CL;
  const int nkb = (K + BK - 1) / BK;  // >= 1 (the host never launches K == 0)
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_full + 8 * s, 1);  // the local producer's expect_tx arrival
      // MCAST: one arrival per consumer warp of both CTAs (both CTAs' stages are refilled together).
      mbar_init(bar_empty + 8 * s, MCAST ? CL * CONSUMER_WARPS : CONSUMER_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmB) : "memory");
    if (tma_store) asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmC) : "memory");
  }
  if constexpr (CL == 2) cluster_sync();  // both CTAs' barriers live before any multicast / remote arrival
  else __syncthreads();

  if (wg == 0) {
    // Producer: registers go to the consumers; one thread issues every TMA load. The others fall
    // through to the exit's cluster barrier.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      // Written for the 40 registers this warpgroup keeps (setmaxnreg 40/232 is the only split
      // of the 384 x 168 allocation that gives the consumers 232): the stage index and the
      // empty-wait parity step along instead of it % STAGES and it / STAGES; per tile only the two
      // row coordinates, the byte count and two flags stay live.
      uint32_t s = 0, par = 1;  // fresh barrier: parity 1 passes at once
      for (int t = cid; t < pairs; t += nclusters) {
        int pm, tn;
        tile_coords(t, pairs_m, tiles_n, GROUP_M / CL, pm, tn);
        const int tm = CL * pm + rank;  // past M only for the odd last pair's second tile
        const bool a_in = tm < tiles_m;
        const bool hi_in = tn * BN + B_HALF < N;  // B's upper half starts inside N (same in both CTAs)
        const bool b_go = !MCAST || rank == 0 || hi_in;  // this CTA issues a B box
        // Bytes that land in this CTA, zero-filled or not; boxes wholly outside are not loaded.
        const uint32_t bytes = (a_in ? A_BYTES : 0) + (MCAST ? (hi_in ? B_BYTES : B_HALF_BYTES) : B_BYTES);
        const int ya = tm * BM, yb = tn * BN + (MCAST ? rank * B_HALF : 0);
        for (int kx = 0; kx < K; kx += BK) {
          mbar_wait(bar_empty + 8 * s, par);
          mbar_expect_tx(bar_full + 8 * s, bytes);
          const uint32_t sa = base + s * STAGE_BYTES;
          if (a_in) tma_load_2d(sa, &tmA, bar_full + 8 * s, kx, ya);
          if (b_go) {
            if constexpr (MCAST)
              tma_load_2d_mc(sa + A_BYTES + rank * B_HALF_BYTES, &tmB, bar_full + 8 * s, kx, yb, (uint16_t)3);
            else
              tma_load_2d(sa + A_BYTES, &tmB, bar_full + 8 * s, kx, yb);
          }
          if (++s == STAGES) s = 0, par ^= 1;
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;  // consumer warpgroup: rows cw*64 .. +63 of the tile
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const bool leader = (threadIdx.x % 128) == 0;
    float acc[NACC];
    uint32_t it = 0;
    // MCAST: lane c (c < 2) of each warp arrives on CTA c's empty barriers; the mapping is fixed,
    // so it is made once (one register in the consumer's tight budget, not a mapa per stage).
    const uint32_t empty_cl = MCAST ? mapa_cta(bar_empty, lane & 1) : 0;

    for (int t = cid; t < pairs; t += nclusters) {
      int pm, tn;
      tile_coords(t, pairs_m, tiles_n, GROUP_M / CL, pm, tn);
      const int tm = CL * pm + rank;  // a tile past M still runs the stages (the partner needs its
                                      // arrivals and its half of B); nothing of it is stored

      // Mainloop: stage kb's four k16 wgmmas are issued, then the group before it is waited for
      // (wait_group 1) and its stage released, so one stage's wgmmas are always queued.
      for (int kb = 0; kb < nkb; ++kb) {
        const uint32_t g = it + kb;
        const uint32_t st = g % STAGES;
        mbar_wait(bar_full + 8 * st, (g / STAGES) & 1);
        const uint32_t sa = base + st * STAGE_BYTES;
        const uint64_t da = sw128_desc(sa + cw * 64 * (BK * 2)), db = sw128_desc(sa + A_BYTES);
        wg_fence();
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) wgmma_n256(acc, da + 2 * k, db + 2 * k, (kb > 0 || k > 0) ? 1 : 0);
        wg_commit();
        if (kb > 0) {
          wg_wait<1>();
          const uint32_t off = 8 * ((g - 1) % STAGES);
          if constexpr (MCAST) {
            if (lane < CL) mbar_arrive_cluster(empty_cl + off);  // lane c: CTA c's barrier
          } else {
            if (lane == 0) mbar_arrive(bar_empty + off);
          }
        }
      }
      wg_wait<0>();
      reg_fence(acc);
      {
        const uint32_t off = 8 * ((it + nkb - 1) % STAGES);
        if constexpr (MCAST) {
          if (lane < CL) mbar_arrive_cluster(empty_cl + off);
        } else {
          if (lane == 0) mbar_arrive(bar_empty + off);
        }
      }
      it += nkb;

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
  // No CTA exits while its partner may still arrive on its empty barriers (the last stages'
  // remote arrivals) or read nothing more from it; every thread of both CTAs arrives.
  if constexpr (CL == 2) cluster_sync();
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

// Clusters of two co-resident at once on device dev (cudaOccupancyMaxActiveClusters: a GPC with
// an odd count of free SMs leaves one unpaired, so this may be below #SMs / 2); 0 when the device
// or the driver gives none (then the host runs the CL = 1 kernel, cuda1's). Cached per device.
int g_cluster_cache[64];
bool g_cluster_known[64];
int max_clusters_for(int dev) {
  int* cache = g_cluster_cache;
  bool* known = g_cluster_known;
  if (dev < 0 || dev >= 64) return 0;
  if (known[dev]) return cache[dev];
  int n = 0;
  if (KZOO_CLUSTER == 2) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    // The query answers for the kernel's current attributes: asked before the first launch set
    // the opt-in to 230 KB of dynamic shared memory, it said 0 on the H200 (session 24's smoke
    // test), and that 0 was cached.
    (void)cudaFuncSetAttribute(bf16_gemm_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms / 2 * 2);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM_BYTES;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&n, bf16_gemm_kernel<2>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();  // clear it: the CL = 1 kernel runs instead
      n = 0;
    }
  }
  cache[dev] = n > 0 ? n : 0;
  known[dev] = true;
  return cache[dev];
}

}  // namespace

static int g_last_clusters = 0;  // grid / 2 of the last cluster launch, 0 when it ran without clusters

// Returns 0 on success or a cudaError_t. path (optional): 1 TMA kernel + TMA store, 2 TMA kernel +
// register epilogue, 3 the fallback kernel (for the lab's checks).
extern "C" int kzoo_bf16_gemm(const void* A, const void* B, void* out, int M, int N, int K, void* stream,
                              int* path) {
  static int num_sms[64];
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= 64) return (int)cudaErrorInvalidDevice;
  if (!num_sms[dev]) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaError_t e = cudaFuncSetAttribute(bf16_gemm_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(bf16_gemm_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) return (int)e;
    num_sms[dev] = sms;
  }
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  g_last_clusters = 0;
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
  if (path) *path = tma_store ? 1 : 2;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int nclusters = max_clusters_for(dev);
  CUtensorMap mbh;  // B in 128-row boxes: each CTA of a pair loads one half
  if (nclusters > 0 && (!KZOO_MC || make_map(&mbh, B, N, K, B_HALF))) {
    const int pairs = (tiles_m + 1) / 2 * tiles_n;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(2 * (pairs < nclusters ? pairs : nclusters));
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM_BYTES;
    cfg.stream = (cudaStream_t)stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelEx(&cfg, bf16_gemm_kernel<2>, ma, KZOO_MC ? mbh : mb, mc, tma_store,
                                       (__nv_bfloat16*)out, M, N, K);
    if (e == cudaSuccess) {
      g_last_clusters = (int)cfg.gridDim.x / 2;
      return (int)cudaGetLastError();
    }
    // A cluster launch refused although the query allowed it (another context holding SMs, a
    // partitioned device): clear the error, stop trying on this device, run cuda1's launch.
    (void)cudaGetLastError();
    g_cluster_cache[dev] = 0;
  }
  const int tiles = tiles_m * tiles_n;
  const int grid = tiles < num_sms[dev] ? tiles : num_sms[dev];
  bf16_gemm_kernel<1><<<grid, THREADS, SMEM_BYTES, (cudaStream_t)stream>>>(ma, mb, mc, tma_store,
                                                                           (__nv_bfloat16*)out, M, N, K);
  return (int)cudaGetLastError();
}

extern "C" int kzoo_bf16_config(int* stages, int* group_m, int* smem) {
  *stages = STAGES;
  *group_m = GROUP_M;
  *smem = SMEM_BYTES;
  return 0;
}

// mc: KZOO_MC; cluster: KZOO_CLUSTER; max_clusters: the occupancy query's answer on the current
// device (0: no clusters, cuda1's kernel); last: clusters of the last launch (0: it ran without).
extern "C" int kzoo_bf16_mc_info(int* mc, int* cluster, int* max_clusters, int* last) {
  int dev = 0;
  cudaGetDevice(&dev);
  *mc = KZOO_MC;
  *cluster = KZOO_CLUSTER;
  *max_clusters = max_clusters_for(dev);
  *last = g_last_clusters;
  return 0;
}
