// Causal flash-attention prefill for sm_90a (issue 19, lab variant fa3e): fa3v3's D = 64 kernel and
// fa3v1's D = 128 kernel in one source (lab NOTES, "fa3m"), with part of the softmax's
// exponentials at D = 64 computed on the FMA pipe instead of the MUFU (ex2_poly below).
// Why: per S element the MUFU does one ex2 while the tensor cores do 4 D flops; the MUFU's 16
// ex2 a clock an SM against the tensor cores' 4096 bf16 flops a clock make them equal at D = 64
// (FlashAttention-3's paper: 256 matmul flops per exponential there), so the exponentials are a
// co-bottleneck with the GEMMs and no schedule overlaps them fully. KZOO_FA3_POLY of every 16 of a
// thread's n8 blocks take a degree-3 polynomial (FlashAttention-4's move on Blackwell): ~9
// instructions on the FMA and integer pipes each, which the issue slots (about half busy at D = 64 by
// the softmax's instruction count) have room for. D = 128 (MUFU at half the tensor time) is unchanged.
//
// The merge (KZOO_FA3_POLY 0 compiles to it alone): fa3v1 (the catalog's
// solution) with FlashAttention-3's tile for head dim <= 64 from lab variant fa3v3: at D = 64 a
// 192-row query block (BM = 192) on THREE consumer warpgroups of 64 rows each (512 threads), keys
// in blocks of 128; D = 128 is fa3v1's kernel (BM = 128, two consumers, 384 threads), the
// generalisations below written so that they compile to fa3v1's own code at two consumers.
//
// A CTA per tile (BM-query block, head x batch), or a persistent grid walking the tiles (host's
// choice); 128 (NC + 1) threads: warpgroup 0 is the producer (one thread issues every TMA load),
// warpgroups 1 .. NC are consumers owning 64 query rows each (NC = 3 at D = 64, 2 at D = 128).
// setmaxnreg: producer 24, consumers 160 (D = 64: 3 x 128 x 160 + 128 x 24 = 64512 <= 65536)
// or 240 (D = 128: 2 x 128 x 240 + 128 x 24 = 64512).
// The producer loads Q once (a [BM, 64] box per 64-column half, BM <= 256, 128B swizzle) and
// K, V tiles of 128 keys x D into a ring of STAGES stages; K and V of a stage have their own
// "full" barriers (S can start as soon as K lands), and their own "empty" barriers, each
// released by the 4 NC consumer warps (12 at D = 64, 8 at D = 128): K's once the block's S
// wgmma completed, V's once its P.V completed.
//
// Consumer loop (FA3's intra-warpgroup overlap): for key block j >= 1
//   issue S_j = Q K_j^T (SS wgmma m64n128k16, 8 (D=128) or 4 (D=64) k-steps, commit)
//   issue O += P_{j-1} V_{j-1} (RS wgmma m64nDk16: P from registers, V MN-major, 8 k-steps, commit)
//   wait<1> (S_j done) -> online softmax of S_j in registers while P.V runs
//   wait<0> (P.V done) -> release stage j-1, rescale O, convert S_j to the bf16 A fragment P_j.
// Key blocks run 0 .. nkb-1, nkb = min(ceil((m+1) BM / 128), ceil(T / 128)) (m = the query
// block): those wholly past the CTA's last row or past T are never loaded. Every consumer
// warpgroup visits all nkb blocks (one K/V ring, one arrival count, one P.V chain per
// warpgroup); a warp masks col > row in every block whose last key lies past its first row, so
// with BM = 192 a warpgroup may mask a block wholly (the block starts past the warpgroup's last
// row: e.g. m = 0, warpgroups 0 and 1 (rows 0-127) against keys 128-255). Such a block
// leaves that warpgroup's rows unchanged (max kept, factor 1, exps 0: block 0 always comes first,
// so every row's max is finite by then). Masking instead of skipping keeps the barrier counts
// and the ping-pong uniform; the waste is measured in emulate_fa3v3.txt. The mask also masks keys
// >= T of every valid row (TMA zero-fills K and V past T, a 3D map [B*H, T, D] so nothing
// crosses into the next head).
// A consumer warpgroup whose 64 rows all lie at or past T (two of three in the last query block
// at T = 4096) issues no GEMM: it only waits and arrives on the barriers as the full path does.
// Softmax: exp2 with the scale folded (x * scale*log2e - max * scale*log2e, one FFMA), running
// max and a per-thread partial row sum in fp32, the 4 lanes of a row reduced once at the end.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#ifndef KZOO_FA3_POLY
#define KZOO_FA3_POLY 4  // of each 16 n8 blocks of a thread's S row at D = 64, those whose exp2 is a polynomial
#endif
#ifndef KZOO_STAGES128
#define KZOO_STAGES128 2
#endif
#ifndef KZOO_STAGES64
#define KZOO_STAGES64 4
#endif
// FA3's ping-pong between the consumer warpgroups (named barriers 1 .. NC, round robin as FA3's
// warp scheduler barriers: warpgroup c syncs on 1 + c before its loop step's two GEMMs and
// arrives on 1 + (c + 1) % NC after issuing them), so the others' GEMMs run on the tensor cores
// while one does its softmax. At D = 64 the order is 0, 1, 2, 0, ... 0: all issue freely.
#ifndef KZOO_PINGPONG
#define KZOO_PINGPONG 1
#endif

namespace {

constexpr int BN = 128;                  // keys per block (both head dims)
constexpr int KV_HALF = BN * 64 * 2;     // one [128 keys, 64 bf16] swizzled box: 16 KiB

template <int D>
struct Cfg {
  static constexpr int NC = D == 64 ? 3 : 2;        // consumer warpgroups
  static constexpr int BM = 64 * NC;                // query rows per CTA: 192 or 128
  static constexpr int THREADS = 128 * (NC + 1);    // + the producer warpgroup: 512 or 384
  static constexpr int REG_PROD = 24, REG_CONS = NC == 3 ? 160 : 240;
  static_assert(REG_PROD * 128 + REG_CONS * 128 * NC <= 65536, "setmaxnreg split over the register file");
  static constexpr int CONS_WARPS = 4 * NC;         // arrivals on the Q / K / V "empty" barriers
  static constexpr int HALVES = D / 64;
  static constexpr int Q_HALF = BM * 64 * 2;        // one [BM rows, 64 bf16] swizzled box: 24 or 16 KiB
  static constexpr int Q_TILE = BM * D * 2, KV_TILE = BN * D * 2;
  static constexpr int STAGES = D == 128 ? KZOO_STAGES128 : KZOO_STAGES64;
  // Q + the K and V rings + 1 KiB for the 1024-B alignment + the barriers (Q full/empty, 4 per stage).
  static constexpr int SMEM = Q_TILE + 2 * STAGES * KV_TILE + 1024 + 8 * (2 + 4 * STAGES);
  static_assert(SMEM <= 232448, "shared memory: at most 227 KiB a CTA");
  static_assert(BM <= 256, "a TMA box has at most 256 rows");
  static_assert(Q_HALF % 1024 == 0 && KV_HALF % 1024 == 0, "every swizzled box 1024-B aligned");
};

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

// ---- TMA: 3D tile load (d, t, b*h), completion counted in bytes on an mbarrier ----
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      ::"r"(dst), "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// ---- wgmma descriptors (128B swizzle; every tile base is 1024-aligned so base_offset = 0) ----
// bits 0-13 start >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63
// layout (1 = SWIZZLE_128B).
// K-major (Q as A, K as B of S = Q K^T): rows of 128 B, 8-row groups 1024 B apart (SBO); LBO
// unused; a k16 step inside the 128-byte row is +32 B on the start address, the next 64-column
// half is the next 16 KiB box.
// MN-major (V as B of O += P V, V stored [keys, D], D contiguous; the instruction's transpose
// bit is set): canonical ((64 elems, m), (8 rows, k)) : ((contiguous, LBO), (128 B, SBO)): the
// 64-column halves of D are LBO = 16 KiB apart, groups of 8 keys SBO = 1024 B apart; a k16 step
// (16 keys) is +2048 B.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
         ((uint64_t)1 << 62);
}
#if KZOO_PINGPONG
// Named barriers (bar 0 is __syncthreads'): `count` threads in all, the arrivers' and the syncers'.
__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}
#endif
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// The registers "change" here: no read of them moves above the wgmma wait before this point
// (to the compiler the wgmma asm wrote them synchronously).
template <int N>
__device__ __forceinline__ void reg_fence(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- wgmma (generated operand lists) ----
// D[64x128] (+)= A[64x16] (smem, K-major) . B[128x16]^T (smem, K-major), bf16 -> f32.
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

// D[64x128] += A[64x16] (registers, bf16x2) . B[16x128] (smem, MN-major: the transpose bit), bf16 -> f32.
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// D[64x64] += A[64x16] (registers, bf16x2) . B[16x64] (smem, MN-major: the transpose bit), bf16 -> f32.
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

template <int D>
__device__ __forceinline__ void wgmma_pv(float (&o)[D / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (D == 128) wgmma_rs_n128(o, a, db, 1);
  else wgmma_rs_n64(o, a, db, 1);
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// 2^x for x <= 0 (or -inf) on the FMA pipe: x = j + f with j the nearest integer (1.5 * 2^23 added
// and taken away: the sum's low mantissa bits hold j), f in [-0.5, 0.5], 2^f by a degree-3
// polynomial fitted for relative error (7.5e-5 at most, lab/flash-attention-prefill/emulate_fa3e.py;
// P is rounded to bf16, 3.9e-3, after), 2^j added to its exponent bits. Clamped at -125 so the
// exponent stays normal: a masked score gives 2^-125.5, not 0 -- 1e-38 of a value, nothing in bf16
// sums of O(1) terms.
__device__ __forceinline__ float ex2_poly(float x) {
  x = fmaxf(x, -125.f);
  const float t = x + 12582912.f;
  const float f = x - (t - 12582912.f);
  float p = fmaf(0.0551713214f, f, 0.2426105423f);
  p = fmaf(p, f, 0.6932609856f);
  p = fmaf(p, f, 0.9999281094f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// S = Q K^T for one key block: D/16 chained k16 wgmmas, the first from zero (Q's and K's
// second 64-column halves are their next boxes: Q_HALF and KV_HALF on).
template <int D>
__device__ __forceinline__ void issue_s(float (&s)[64], uint32_t q, uint32_t k) {
#pragma unroll
  for (int t = 0; t < D / 16; ++t) {
    const uint32_t in_row = (t % 4) * 32;
    wgmma_ss_n128(s, desc_sw128(q + (t / 4) * Cfg<D>::Q_HALF + in_row, 16, 1024),
                  desc_sw128(k + (t / 4) * KV_HALF + in_row, 16, 1024), t);
  }
}
// O += P V for one key block: 8 k16 steps over the 128 keys; P's A fragment of step t is
// p[4t .. 4t+3].
template <int D>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[32], uint32_t v) {
#pragma unroll
  for (int t = 0; t < BN / 16; ++t) {
    const uint32_t a[4] = {p[4 * t], p[4 * t + 1], p[4 * t + 2], p[4 * t + 3]};
    wgmma_pv<D>(o, a, desc_sw128(v + t * 2048, KV_HALF, 1024));
  }
}

// Online softmax of one S block (fragment of m64n128: thread l of warp w holds rows w*16 + l/4
// (+8); for n8 block i, s[4i + 2h + c] is row h's column 8i + 2(l%4) + c). Masks col > row when
// `diag`; returns the rescale factor of each row's previous state; leaves exp'd values in s.
template <int POLY>  // n8 blocks i (of 16) with (i * POLY) % 16 < POLY take ex2_poly: POLY of them, spread
__device__ __forceinline__ void softmax_block(float (&s)[64], float (&mx)[2], float (&l)[2], float (&fac)[2],
                                              bool diag, int row0, int col0, float sl2) {
  if (diag) {
#pragma unroll
    for (int i = 0; i < 16; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < 2; ++c)
          if (col0 + 8 * i + c > row0 + 8 * h) s[4 * i + 2 * h + c] = -INFINITY;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = mx[h];
#pragma unroll
    for (int i = 0; i < 16; ++i) m = fmaxf(m, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
    m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2));
    // Block 0 (processed first) has column 0 <= every row, so m is finite from the first block
    // on (a row wholly masked in a later block, BM = 192, keeps its old max: fac = 1, exps 0);
    // the guard keeps -inf - -inf out all the same.
    const float ms = (m == -INFINITY) ? 0.f : m * sl2;
    fac[h] = ex2(mx[h] * sl2 - ms);  // mx = -inf at the start: factor 0
    mx[h] = m;
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float x = fmaf(s[4 * i + 2 * h + c], sl2, -ms);
        const float e = (i * POLY) % 16 < POLY ? ex2_poly(x) : ex2(x);
        s[4 * i + 2 * h + c] = e;
        sum += e;
      }
    l[h] = fmaf(l[h], fac[h], sum);
  }
}

// S accumulator (fp32, two n8 blocks per k16 step) -> the A-operand fragment of m64k16 in
// registers: a0 = (row, k 2(l%4)+{0,1}), a1 = (row+8, same k), a2 = (row, k+8), a3 = (row+8, k+8).
__device__ __forceinline__ void to_p(const float (&s)[64], uint32_t (&p)[32]) {
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    p[4 * t + 0] = pack_bf16(s[8 * t + 0], s[8 * t + 1]);
    p[4 * t + 1] = pack_bf16(s[8 * t + 2], s[8 * t + 3]);
    p[4 * t + 2] = pack_bf16(s[8 * t + 4], s[8 * t + 5]);
    p[4 * t + 3] = pack_bf16(s[8 * t + 6], s[8 * t + 7]);
  }
}

// Key blocks query block mb visits: up to its last row's ((mb+1) BM - 1), and none starting at
// or past T. Producer and consumers both use this.
template <int D>
__device__ __forceinline__ int num_kb(int mb, int T) {
  if constexpr (Cfg<D>::BM == BN) return mb + 1;  // D = 128: fa3v1's count (the same value: mb < ceil(T / BN))
  const int diag = ((mb + 1) * Cfg<D>::BM + BN - 1) / BN, tail = (T + BN - 1) / BN;
  return diag < tail ? diag : tail;
}
// Block j needs the causal mask in a warp whose first row is r: its last key lies past r
// (block edges are multiples of 128 and warpgroup edges of 64: in fact warpgroup-uniform).
__device__ __forceinline__ bool crosses(int j, int r) { return (j + 1) * BN - 1 > r; }

// Tile t -> (head x batch, query block): a head's query blocks adjacent (its K/V shared in L2),
// heaviest (last) query block first.
__device__ __forceinline__ void tile_coords(int t, int nmb, int& bh, int& mb) {
  bh = t / nmb;
  mb = nmb - 1 - (t - bh * nmb);
}

// Tiles blockIdx.x, +gridDim.x, ...: the host launches one CTA per tile (grid = tiles, the
// default) or a persistent grid of one CTA per SM. Stage uses are counted across tiles (`it`)
// and Q's barriers flip once per tile, so the mbarrier phases carry over.
template <int D>
__global__ void __launch_bounds__(Cfg<D>::THREADS, 1)
fa3_fwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
               const __grid_constant__ CUtensorMap tmV, __nv_bfloat16* __restrict__ out, int T, int tiles,
               float sl2) {
  using C = Cfg<D>;
  constexpr int S = C::STAGES, BM = C::BM;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (su32(smem_raw) + 1023) & ~1023u;
  const uint32_t sQ = base, sK = base + C::Q_TILE, sV = sK + S * C::KV_TILE;
  const uint32_t bar_q = sV + S * C::KV_TILE, bar_qe = bar_q + 8, bar_k = bar_qe + 8, bar_v = bar_k + 8 * S,
                 bar_ek = bar_v + 8 * S, bar_ev = bar_ek + 8 * S;

  const int nmb = (T + BM - 1) / BM;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    mbar_init(bar_qe, C::CONS_WARPS);  // Q read by every warpgroup's last S: one arrival per consumer warp
    for (int s = 0; s < S; ++s) {
      mbar_init(bar_k + 8 * s, 1);
      mbar_init(bar_v + 8 * s, 1);
      mbar_init(bar_ek + 8 * s, C::CONS_WARPS);  // K slot free: one arrival per consumer warp after its S
      mbar_init(bar_ev + 8 * s, C::CONS_WARPS);  // V slot free: one arrival per consumer warp after its P.V
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmQ) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmK) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmV) : "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(C::REG_PROD));
    if (threadIdx.x != 0) return;
    uint32_t it = 0, tc = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++tc) {
      int bh, mb;
      tile_coords(tile, nmb, bh, mb);
      const int nkb = num_kb<D>(mb, T);  // causal skipping
      mbar_wait(bar_qe, (tc & 1) ^ 1);  // the previous tile's Q fully read (fresh: passes)
      mbar_expect_tx(bar_q, C::Q_TILE);  // the full box counts, rows past T zero-filled or not
#pragma unroll
      for (int h = 0; h < C::HALVES; ++h) tma_load_3d(sQ + h * C::Q_HALF, &tmQ, bar_q, h * 64, mb * BM, bh);
      for (int j = 0; j < nkb; ++j) {
        const uint32_t u = it + j, s = u % S;
        const uint32_t k = sK + s * C::KV_TILE, v = sV + s * C::KV_TILE;
        // K and V slots are freed separately (FA3's two pipelines): K_j's slot as soon as S_{j-S}
        // completed, V's after P_{j-S} V_{j-S}; fresh barriers: parity 1 passes at once.
        mbar_wait(bar_ek + 8 * s, ((u / S) & 1) ^ 1);
        mbar_expect_tx(bar_k + 8 * s, C::KV_TILE);  // the full box counts, zero-filled or not
#pragma unroll
        for (int h = 0; h < C::HALVES; ++h) tma_load_3d(k + h * KV_HALF, &tmK, bar_k + 8 * s, h * 64, j * BN, bh);
        mbar_wait(bar_ev + 8 * s, ((u / S) & 1) ^ 1);
        mbar_expect_tx(bar_v + 8 * s, C::KV_TILE);
#pragma unroll
        for (int h = 0; h < C::HALVES; ++h) tma_load_3d(v + h * KV_HALF, &tmV, bar_v + 8 * s, h * 64, j * BN, bh);
      }
      it += nkb;
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(C::REG_CONS));
  const int cw = wg - 1;  // 0 .. NC-1
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int wrow = cw * 64 + warp * 16;             // this warp's first row inside the BM-row block
  const int rloc = wrow + lane / 4;                 // this thread's row inside the block (and +8)
  const uint32_t q = sQ + cw * 64 * 128;            // this warpgroup's 64 rows of each Q half box
  uint32_t it = 0, tc = 0;

  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++tc) {
    int bh, mb;
    tile_coords(tile, nmb, bh, mb);
    const int nkb = num_kb<D>(mb, T);
    const int row0 = mb * BM + rloc;  // absolute query row
    const int wr0 = mb * BM + wrow;   // the warp's first absolute row: the mask decision

    float o[D / 2], s[64], mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, fac[2];
    uint32_t p[32];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    mbar_wait(bar_q, tc & 1);
#if KZOO_PINGPONG
    // Ping-pong, round robin 0 -> 1 -> .. -> NC-1 -> 0: warpgroup 0 issues first. Counts, per
    // tile: each warpgroup syncs once per loop step (nkb - 1 times) on its barrier (1 + cw);
    // warpgroup c < NC-1 arrives on 2 + c after each of its steps (nkb - 1), the last one
    // (NC-1) on 1 once here and after each step but its last (1 + nkb - 2): every phase
    // completes inside the tile and none is left open (no arrival when nkb == 1). Each barrier
    // has 256 threads: the arriving warpgroup's and the syncing one's.
    if (cw == C::NC - 1 && nkb > 1) named_arrive(1, 256);
#endif
    // A warpgroup whose 64 rows all lie at or past T (the last query block when T % BM <= 128,
    // e.g. T = 4096: rows 4096-4223 of block 21, two warpgroups of three) has nothing to store:
    // it issues no GEMM and no softmax, and only keeps the hand-offs of the full path, in the
    // same order: each full barrier waited before the matching empty arrival (an early arrival
    // would count toward the previous use's phase), Q released with the last K, and the ping-pong
    // syncs / arrivals of every loop step. Warpgroup-uniform; its rows' stores are skipped anyway.
    if (C::NC == 3 && mb * BM + cw * 64 >= T) {  // D = 64 only: at D = 128 fa3v1 computes those rows unstored
      for (int j = 0; j < nkb; ++j) {
        const uint32_t u = it + j, st = u % S;
        mbar_wait(bar_k + 8 * st, (u / S) & 1);
        if (j > 0) {
          const uint32_t sp = (u - 1) % S;
          mbar_wait(bar_v + 8 * sp, ((u - 1) / S) & 1);
#if KZOO_PINGPONG
          named_sync(1 + cw, 256);
          if ((C::NC == 2 ? cw == 0 : cw < C::NC - 1) || j < nkb - 1) named_arrive(C::NC == 2 ? 2 - cw : (cw < C::NC - 1 ? 2 + cw : 1), 256);
#endif
          __syncwarp();
          if (lane == 0) mbar_arrive(bar_ek + 8 * st);
          if (j == nkb - 1 && lane == 0) mbar_arrive(bar_qe);
          if (lane == 0) mbar_arrive(bar_ev + 8 * sp);
        } else {
          __syncwarp();
          if (lane == 0) mbar_arrive(bar_ek + 8 * st);
          if (nkb == 1 && lane == 0) mbar_arrive(bar_qe);
        }
      }
      const uint32_t u = it + nkb - 1, sp = u % S;
      mbar_wait(bar_v + 8 * sp, (u / S) & 1);
      __syncwarp();
      if (lane == 0) mbar_arrive(bar_ev + 8 * sp);
      it += nkb;
      continue;
    }
    // Prologue: S_0 and its softmax.
    {
      const uint32_t s0 = it % S;
      mbar_wait(bar_k + 8 * s0, (it / S) & 1);
      wg_fence();
      issue_s<D>(s, q, sK + s0 * C::KV_TILE);
      wg_commit();
      wg_wait<0>();
      reg_fence(s);
      if (lane == 0) mbar_arrive(bar_ek + 8 * s0);     // K_0 read
      if (nkb == 1 && lane == 0) mbar_arrive(bar_qe);  // the tile's last S: Q may be replaced
      softmax_block<D == 64 ? KZOO_FA3_POLY : 0>(s, mx, l, fac, C::NC == 2 ? nkb == 1 : crosses(0, wr0), row0, 2 * (lane % 4), sl2);
      to_p(s, p);
    }

    for (int j = 1; j < nkb; ++j) {
      const uint32_t u = it + j, st = u % S, sp = (u - 1) % S;
      // Both waits first: V_{j-1} was loaded before K_j, and no wait (a branch) sits between the
      // two issues (ptxas otherwise injects a warpgroup.arrive before the second, C7519).
      mbar_wait(bar_k + 8 * st, (u / S) & 1);
      mbar_wait(bar_v + 8 * sp, ((u - 1) / S) & 1);
#if KZOO_PINGPONG
      named_sync(1 + cw, 256);
#endif
      wg_fence();
      issue_s<D>(s, q, sK + st * C::KV_TILE);
      wg_commit();
      issue_pv<D>(o, p, sV + sp * C::KV_TILE);
      wg_commit();
#if KZOO_PINGPONG
      if ((C::NC == 2 ? cw == 0 : cw < C::NC - 1) || j < nkb - 1) named_arrive(C::NC == 2 ? 2 - cw : (cw < C::NC - 1 ? 2 + cw : 1), 256);
#endif
      wg_wait<1>();  // S_j complete; P_{j-1} V_{j-1} may still run
      reg_fence(s);
      if (lane == 0) mbar_arrive(bar_ek + 8 * st);          // K_j read
      if (j == nkb - 1 && lane == 0) mbar_arrive(bar_qe);  // the tile's last S: Q may be replaced
      softmax_block<D == 64 ? KZOO_FA3_POLY : 0>(s, mx, l, fac, C::NC == 2 ? j == nkb - 1 : crosses(j, wr0), row0, j * BN + 2 * (lane % 4), sl2);
      wg_wait<0>();  // P_{j-1} V_{j-1} complete: V_{j-1}'s slot free, O and P writable
      reg_fence(o);
      reg_fence(s);
      if (lane == 0) mbar_arrive(bar_ev + 8 * sp);
#pragma unroll
      for (int i = 0; i < D / 8; ++i) {
        o[4 * i + 0] *= fac[0];
        o[4 * i + 1] *= fac[0];
        o[4 * i + 2] *= fac[1];
        o[4 * i + 3] *= fac[1];
      }
      to_p(s, p);
    }
    {
      const uint32_t u = it + nkb - 1, sp = u % S;
      mbar_wait(bar_v + 8 * sp, (u / S) & 1);
      wg_fence();
      issue_pv<D>(o, p, sV + sp * C::KV_TILE);
      wg_commit();
      wg_wait<0>();
      reg_fence(o);
      if (lane == 0) mbar_arrive(bar_ev + 8 * sp);
    }
    it += nkb;

    // Epilogue: the 4 lanes of a row hold partial sums; O / l rounded to bf16, rows >= T dropped.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tsum = l[h];
      tsum += __shfl_xor_sync(0xffffffff, tsum, 1);
      tsum += __shfl_xor_sync(0xffffffff, tsum, 2);
      const float inv = 1.f / tsum;
      const int r = row0 + 8 * h;
      if (r >= T) continue;
      __nv_bfloat16* orow = out + ((size_t)bh * T + r) * D + 2 * (lane % 4);
#pragma unroll
      for (int i = 0; i < D / 8; ++i)
        *reinterpret_cast<__nv_bfloat162*>(orow + 8 * i) =
            __floats2bfloat162_rn(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv);
    }
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult qr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &qr) == cudaSuccess &&
        qr == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }
  return fn;
}

// [BH, T, D] bf16, D contiguous; box [1, rows, 64] (rows: BM for Q, 128 for K and V; at most
// 256), 128B swizzle (64 bf16 = 128 B inner box), zeros out of bounds.
bool make_map(CUtensorMap* map, const void* ptr, int BH, int T, int D, int rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)T, (cuuint64_t)BH};
  cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)T * D * 2};
  cuuint32_t box[3] = {64, (cuuint32_t)rows, 1};
  cuuint32_t estr[3] = {1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(ptr), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int D>
int launch(const void* q, const void* k, const void* v, void* o, int BH, int T, int persistent, cudaStream_t stream) {
  static int num_sms = 0;
  if (!num_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev);
    cudaError_t e = cudaFuncSetAttribute(fa3_fwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<D>::SMEM);
    if (e != cudaSuccess) { num_sms = 0; return (int)e; }
  }
  CUtensorMap mq, mk, mv;
  constexpr int BM = Cfg<D>::BM;
  if (!make_map(&mq, q, BH, T, D, BM) || !make_map(&mk, k, BH, T, D, BN) || !make_map(&mv, v, BH, T, D, BN)) return -1;
  const float sl2 = 1.4426950408889634f / sqrtf((float)D);
  const long long tiles = (long long)((T + BM - 1) / BM) * BH;
  if (tiles >= (1LL << 31)) return -2;
  const int grid = persistent && tiles > num_sms ? num_sms : (int)tiles;
  fa3_fwd_kernel<D><<<grid, Cfg<D>::THREADS, Cfg<D>::SMEM, stream>>>(mq, mk, mv, (__nv_bfloat16*)o, T, (int)tiles, sl2);
  return (int)cudaGetLastError();
}

}  // namespace

// q, k, v, o: [B*H, T, D] bf16 contiguous, 16-byte aligned; D 64 or 128; persistent: one CTA
// per SM walking the tiles (else one CTA per tile). Returns 0, a cudaError_t, -1 (no tensor
// map) or -2 (shape not taken).
extern "C" int kzoo_fa3_prefill(const void* q, const void* k, const void* v, void* o, int BH, int T, int D,
                                int persistent, void* stream) {
  if (BH <= 0 || T <= 0 || BH > 65535) return -2;
  if (D == 128) return launch<128>(q, k, v, o, BH, T, persistent, (cudaStream_t)stream);
  if (D == 64) return launch<64>(q, k, v, o, BH, T, persistent, (cudaStream_t)stream);
  return -2;
}

extern "C" int kzoo_fa3_config(int* stages128, int* stages64, int* pingpong, int* bm64) {
  *stages128 = Cfg<128>::STAGES;
  *stages64 = Cfg<64>::STAGES;
  *pingpong = KZOO_PINGPONG;
  *bm64 = Cfg<64>::BM;
  return 0;
}
