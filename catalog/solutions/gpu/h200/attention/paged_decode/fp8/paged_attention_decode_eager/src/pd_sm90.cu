// Paged-attention decode over an fp8 KV cache, hand-written flash-decoding for sm_90a
// (lab round 7, candidate `cufd`; lab/paged-attention-decode/NOTES.md, "Round 7").
//
// Pass 1 (pd_split): one CTA of 4 warps per (KV head, split, sequence). Every warp owns whole
// 16-token pages of the split (pages start + warp + 4 i) and runs its own pipeline: a ring of
// NST stages in shared memory, one page of K and V (2 x 16 x D bytes) a stage, gathered by
// cp.async 16-byte copies through the block table (the warp's page ids are loaded once into one
// register a lane and handed out by shfl), cp.async.wait_group + __syncwarp, no CTA barrier in
// the loop. Each page: S = Q K^T and O += P V on mma.sync m16n8k16 (fp16 in, fp32 accumulate),
// the query group padded to 16 rows, online softmax in base 2 in registers. fp8 -> fp16 by
// cvt.rn.f16x2.e4m3x2 (exact). The contraction index of each product is permuted so that every
// operand is read from shared memory in whole words:
//  - Q K^T contracts over d: lane (g = lane/4, c = lane%4) takes the 16-byte chunks c, c+4 of
//    its token's row; k-step j reads word j%4 of chunk c + 4 (j/4): bytes 0,1 are the k slots
//    2c, 2c+1 and bytes 2,3 the slots 2c+8, 2c+9. Q's fragments use the same d order.
//  - P V contracts over tokens: lane reads one word (d = 32 jj + 4 g .. +3) of the rows 2c,
//    2c+1, 2c+8, 2c+9 and pairs the rows' bytes with two prmt, which gives the B fragments of
//    4 n-tiles at once (n-tile 4 jj + i, column g is d = 32 jj + 4 g + i).
//  Shared rows are XOR-swizzled by 16-byte chunk so that both reads are free of bank conflicts
//  at D = 128. At the end the 4 warps' states merge through shared memory into one partial
//  (unnormalised output x v_scale, max, sum) per (row, split).
// Pass 2 (pd_merge): one warp per (sequence, query head) merges the splits (log-sum-exp).
#ifdef KZOO_PD_HOST_EMU
// CPU execution of this file's kernels (lab/paged-attention-decode/cufd/pd_host_emu.cpp): the CUDA
// built-ins and the PTX helpers below are replaced by cooperative-fiber versions there.
#include "pd_host_emu.h"
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#define KZOO_DEV __device__ __forceinline__
#define KZOO_SPLIT_KERNEL __global__ void __launch_bounds__(NWARP * 32, D == 128 ? 3 : 4)
#define KZOO_MERGE_KERNEL __global__ void __launch_bounds__(128)
#define KZOO_SMEM extern __shared__ __align__(128) uint8_t smem[]


#endif

#ifndef KZOO_PD_NST
#define KZOO_PD_NST 4
#endif

namespace {

constexpr int PAGE = 16;
constexpr int NWARP = 4;
constexpr int NST = KZOO_PD_NST;

#ifndef KZOO_PD_HOST_EMU
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// 4 fp8 bytes -> 2 x f16x2 (byte 0 -> lo.x, 1 -> lo.y, 2 -> hi.x, 3 -> hi.y)
__device__ __forceinline__ void cvt4(uint32_t w, uint32_t& lo, uint32_t& hi) {
    asm("{\n.reg .b16 a, b;\nmov.b32 {a, b}, %2;\ncvt.rn.f16x2.e4m3x2 %0, a;\ncvt.rn.f16x2.e4m3x2 %1, b;\n}\n"
        : "=r"(lo), "=r"(hi) : "r"(w));
}
template <uint32_t SEL>
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "n"(SEL));
    return r;
}
__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
__device__ __forceinline__ void mma16816(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

// Chunk positions in a shared row (16-byte chunks; NCH = D / 16 of them).
template <int D>
KZOO_DEV int kpos(int x, int row) { return D == 128 ? (x ^ ((row & 1) << 2)) : x; }
template <int D>
KZOO_DEV int vpos(int x, int row) { return x ^ ((((row >> 1) & 3) << 1) & (D / 16 - 1)); }

template <int D, bool G16>
KZOO_SPLIT_KERNEL
pd_split(const __nv_bfloat16* __restrict__ q, const uint8_t* __restrict__ kc, const uint8_t* __restrict__ vc,
         const float* __restrict__ ks, const float* __restrict__ vs, const int* __restrict__ bt,
         const int* __restrict__ sl, float* __restrict__ po, float* __restrict__ pm, float* __restrict__ pl,
         int HQ, int HK, int G, int NBLK, int CH, int S, float sm_scale_log2) {
    constexpr int NCH = D / 16;  // 16-byte chunks a row
    constexpr int PB = PAGE * D; // bytes of one page of one head
    constexpr int KS = D / 16;   // k-steps of Q K^T
    constexpr int NT = D / 8;    // n-tiles of P V
    constexpr int CPL = PAGE * NCH / 32;  // 16-byte copies a lane a page (K, and again V)
    KZOO_SMEM;

    const int h = blockIdx.x, sp = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, c = lane & 3;
    uint8_t* ring = smem + warp * (NST * 2 * PB);

    // The warp's page ids (one a lane, step = lane) are loaded before seq_lens is known, bounded by
    // the table's width only, so the two loads overlap; ids past the sequence are never used.
    const int p0 = sp * CH;
    const int* btrow = bt + (size_t)b * NBLK;
    const int pl_ = p0 + warp + NWARP * lane;
    int myid = 0;
    if (pl_ < min(p0 + CH, NBLK)) myid = __ldg(btrow + pl_);
    const int n = __ldg(sl + b);
    const int npv = min((n + PAGE - 1) / PAGE, NBLK);
    const int p1 = min(p0 + CH, npv);
    const int nit = p1 > p0 + warp ? (p1 - p0 - warp + NWARP - 1) / NWARP : 0;  // <= 32 (CH <= 128)

    const size_t rowstride = (size_t)HK * D;
    auto issue = [&](int i) {
        if (i < nit) {
            const int pid = __shfl_sync(0xffffffffu, myid, i);
            const int valid = n - (p0 + warp + NWARP * i) * PAGE;  // >= 1
            const size_t base = ((size_t)pid * PAGE * HK + h) * D;
            const uint32_t sk = smem_u32(ring + (i % NST) * 2 * PB), sv = sk + PB;
#pragma unroll
            for (int k = 0; k < CPL; ++k) {
                const int idx = lane + 32 * k, row = idx / NCH, x = idx % NCH;
                const int bytes = row < valid ? 16 : 0;
                const size_t off = base + row * rowstride + x * 16;
                cp16(sk + row * D + kpos<D>(x, row) * 16, kc + off, bytes);
                cp16(sv + row * D + vpos<D>(x, row) * 16, vc + off, bytes);
            }
        }
        cp_commit();
    };
#pragma unroll
    for (int s = 0; s < NST - 1; ++s) issue(s);

    // Q fragments (row g; row g + 8 only when the group has more than 8 rows), d permuted.
    uint32_t qa[KS][2], qb[KS][2];
    {
        const __nv_bfloat16* q0 = q + ((size_t)b * HQ + (size_t)h * G + g) * D;
        const __nv_bfloat16* q8 = q0 + 8 * D;
#pragma unroll
        for (int j = 0; j < KS; ++j) {
            const int d0 = 16 * (c + 4 * (j >> 2)) + 4 * (j & 3);
            qa[j][0] = qa[j][1] = qb[j][0] = qb[j][1] = 0;
            if (g < G) {
                const uint2 u = *reinterpret_cast<const uint2*>(q0 + d0);
                const __nv_bfloat162 x0 = *reinterpret_cast<const __nv_bfloat162*>(&u.x);
                const __nv_bfloat162 x1 = *reinterpret_cast<const __nv_bfloat162*>(&u.y);
                qa[j][0] = pack_h2(__low2float(x0), __high2float(x0));
                qa[j][1] = pack_h2(__low2float(x1), __high2float(x1));
            }
            if (G16 && g + 8 < G) {
                const uint2 u = *reinterpret_cast<const uint2*>(q8 + d0);
                const __nv_bfloat162 x0 = *reinterpret_cast<const __nv_bfloat162*>(&u.x);
                const __nv_bfloat162 x1 = *reinterpret_cast<const __nv_bfloat162*>(&u.y);
                qb[j][0] = pack_h2(__low2float(x0), __high2float(x0));
                qb[j][1] = pack_h2(__low2float(x1), __high2float(x1));
            }
        }
    }
    const float qk_scale = sm_scale_log2 * __ldg(ks);

    float m0 = -INFINITY, l0 = 0.f, m8 = -INFINITY, l8 = 0.f;
    float acc[NT][4];
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;

    for (int it = 0; it < nit; ++it) {
        issue(it + NST - 1);
        cp_wait<NST - 1>();
        __syncwarp();
        const uint8_t* kb = ring + (it % NST) * 2 * PB;
        const uint8_t* vb = kb + PB;
        const int valid = n - (p0 + warp + NWARP * it) * PAGE;

        float s[2][4];
#pragma unroll
        for (int t = 0; t < 2; ++t) {
            s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.f;
            const int row = 8 * t + g;
#pragma unroll
            for (int i = 0; i < NCH / 4; ++i) {
                const uint4 w = *reinterpret_cast<const uint4*>(kb + row * D + kpos<D>(c + 4 * i, row) * 16);
                const uint32_t ww[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
                for (int wd = 0; wd < 4; ++wd) {
                    const int j = 4 * i + wd;
                    uint32_t b0, b1;
                    cvt4(ww[wd], b0, b1);
                    mma16816(s[t], qa[j][0], G16 ? qb[j][0] : 0u, qa[j][1], G16 ? qb[j][1] : 0u, b0, b1);
                }
            }
        }
        // Scale, mask the page's tail, online softmax (row g: s[t][0..1]; row g + 8: s[t][2..3]).
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int tok = 8 * t + 2 * c + (e & 1);
                s[t][e] = tok < valid ? s[t][e] * qk_scale : -INFINITY;
            }
        float mx = fmaxf(fmaxf(s[0][0], s[0][1]), fmaxf(s[1][0], s[1][1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn0 = fmaxf(m0, mx);  // finite: token 0 of a page is always valid
        const float al0 = exp2f(m0 - mn0);
        float p[2][4];
        p[0][0] = exp2f(s[0][0] - mn0); p[0][1] = exp2f(s[0][1] - mn0);
        p[1][0] = exp2f(s[1][0] - mn0); p[1][1] = exp2f(s[1][1] - mn0);
        l0 = l0 * al0 + (p[0][0] + p[0][1]) + (p[1][0] + p[1][1]);
        m0 = mn0;
        float al8 = 1.f;
        p[0][2] = p[0][3] = p[1][2] = p[1][3] = 0.f;
        if (G16) {
            float mx8 = fmaxf(fmaxf(s[0][2], s[0][3]), fmaxf(s[1][2], s[1][3]));
            mx8 = fmaxf(mx8, __shfl_xor_sync(0xffffffffu, mx8, 1));
            mx8 = fmaxf(mx8, __shfl_xor_sync(0xffffffffu, mx8, 2));
            const float mn8 = fmaxf(m8, mx8);
            al8 = exp2f(m8 - mn8);
            p[0][2] = exp2f(s[0][2] - mn8); p[0][3] = exp2f(s[0][3] - mn8);
            p[1][2] = exp2f(s[1][2] - mn8); p[1][3] = exp2f(s[1][3] - mn8);
            l8 = l8 * al8 + (p[0][2] + p[0][3]) + (p[1][2] + p[1][3]);
            m8 = mn8;
        }
        const uint32_t pa0 = pack_h2(p[0][0], p[0][1]);  // row g, tokens 2c, 2c+1
        const uint32_t pa2 = pack_h2(p[1][0], p[1][1]);  // row g, tokens 2c+8, 2c+9
        const uint32_t pa1 = G16 ? pack_h2(p[0][2], p[0][3]) : 0u;
        const uint32_t pa3 = G16 ? pack_h2(p[1][2], p[1][3]) : 0u;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            acc[t][0] *= al0; acc[t][1] *= al0;
            if (G16) { acc[t][2] *= al8; acc[t][3] *= al8; }
        }
        // P V: rows 2c, 2c+1, 2c+8, 2c+9; word d = 32 jj + 4 g .. + 3.
        const int r0 = 2 * c, r1 = r0 + 1, r2 = r0 + 8, r3 = r0 + 9;
#pragma unroll
        for (int jj = 0; jj < D / 32; ++jj) {
            const int x = 2 * jj + (g >> 2), wo = 4 * (g & 3);
            const uint32_t A0 = *reinterpret_cast<const uint32_t*>(vb + r0 * D + vpos<D>(x, r0) * 16 + wo);
            const uint32_t A1 = *reinterpret_cast<const uint32_t*>(vb + r1 * D + vpos<D>(x, r1) * 16 + wo);
            const uint32_t A2 = *reinterpret_cast<const uint32_t*>(vb + r2 * D + vpos<D>(x, r2) * 16 + wo);
            const uint32_t A3 = *reinterpret_cast<const uint32_t*>(vb + r3 * D + vpos<D>(x, r3) * 16 + wo);
            uint32_t lb[4], hb[4];  // B fragment regs of n-tiles 4 jj + i: lb = tokens 2c,2c+1; hb = 2c+8,2c+9
            cvt4(prmt<0x5140>(A0, A1), lb[0], lb[1]);
            cvt4(prmt<0x7362>(A0, A1), lb[2], lb[3]);
            cvt4(prmt<0x5140>(A2, A3), hb[0], hb[1]);
            cvt4(prmt<0x7362>(A2, A3), hb[2], hb[3]);
#pragma unroll
            for (int i = 0; i < 4; ++i) mma16816(acc[4 * jj + i], pa0, pa1, pa2, pa3, lb[i], hb[i]);
        }
        __syncwarp();
    }
    cp_wait<0>();
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    if (G16) {
        l8 += __shfl_xor_sync(0xffffffffu, l8, 1);
        l8 += __shfl_xor_sync(0xffffffffu, l8, 2);
    }
    __syncthreads();  // every warp is past its ring: reuse it for the merge of the warps
    float* sacc = reinterpret_cast<float*>(smem);        // [NWARP][16][D]
    float* sm_m = sacc + NWARP * 16 * D;                // [NWARP][16]
    float* sm_l = sm_m + NWARP * 16;                    // [NWARP][16]
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int d = 32 * (t >> 2) + 4 * (2 * c + e) + (t & 3);
            sacc[(warp * 16 + g) * D + d] = acc[t][e];
            if (G16) sacc[(warp * 16 + g + 8) * D + d] = acc[t][2 + e];
        }
    if (c == 0) {
        sm_m[warp * 16 + g] = m0; sm_l[warp * 16 + g] = l0;
        sm_m[warp * 16 + g + 8] = G16 ? m8 : -INFINITY; sm_l[warp * 16 + g + 8] = G16 ? l8 : 0.f;
    }
    __syncthreads();
    const float vscale = __ldg(vs);
    for (int idx = threadIdx.x; idx < G * D; idx += NWARP * 32) {
        const int r = idx / D, d = idx % D;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < NWARP; ++w) M = fmaxf(M, sm_m[w * 16 + r]);
        float o = 0.f, L = 0.f;
        if (M != -INFINITY) {
#pragma unroll
            for (int w = 0; w < NWARP; ++w) {
                const float mw = sm_m[w * 16 + r];
                const float wt = mw == -INFINITY ? 0.f : exp2f(mw - M);
                o += wt * sacc[(w * 16 + r) * D + d];
                L += wt * sm_l[w * 16 + r];
            }
        }
        const size_t part = ((size_t)b * HQ + (size_t)h * G + r) * S + sp;
        po[part * D + d] = o * vscale;
        if (d == 0) { pm[part] = M; pl[part] = L; }
    }
}

template <int D>
KZOO_MERGE_KERNEL pd_merge(const float* __restrict__ po, const float* __restrict__ pm,
                                                const float* __restrict__ pl, __nv_bfloat16* __restrict__ out,
                                                int rows, int S) {
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;
    const size_t r = row;
    float M = -INFINITY;
    for (int s = lane; s < S; s += 32) M = fmaxf(M, pm[r * S + s]);
#pragma unroll
    for (int o = 16; o; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    float o[D / 32], L = 0.f;
#pragma unroll
    for (int i = 0; i < D / 32; ++i) o[i] = 0.f;
    if (M != -INFINITY) {
        for (int s = 0; s < S; ++s) {
            const float m = pm[r * S + s];
            if (m == -INFINITY) continue;
            const float w = exp2f(m - M);
            L += w * pl[r * S + s];
#pragma unroll
            for (int i = 0; i < D / 32; ++i) o[i] += w * po[(r * S + s) * D + lane + 32 * i];
        }
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
    for (int i = 0; i < D / 32; ++i) out[r * D + lane + 32 * i] = __float2bfloat16(o[i] * inv);
}

#ifndef KZOO_PD_HOST_EMU
template <int D, bool G16>
int smem_bytes() {
    const int ring = NWARP * NST * 2 * PAGE * D;
    const int mrg = (NWARP * 16 * D + 2 * NWARP * 16) * 4;
    return ring > mrg ? ring : mrg;
}

template <int D, bool G16>
int launch(const void* q, const void* kc, const void* vc, const void* ks, const void* vs, const void* bt,
           const void* sl, float* po, float* pm, float* pl, void* out, int B, int HQ, int HK, int NBLK, int CH,
           int S, cudaStream_t st) {
    static bool attr = false;
    const int sm = smem_bytes<D, G16>();
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(pd_split<D, G16>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    const int G = HQ / HK;
    dim3 grid(HK, S, B);
    pd_split<D, G16><<<grid, NWARP * 32, sm, st>>>(
        (const __nv_bfloat16*)q, (const uint8_t*)kc, (const uint8_t*)vc, (const float*)ks, (const float*)vs,
        (const int*)bt, (const int*)sl, po, pm, pl, HQ, HK, G, NBLK, CH, S, 1.4426950408889634f / sqrtf((float)D));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    const int rows = B * HQ;
    pd_merge<D><<<(rows + 3) / 4, 128, 0, st>>>(po, pm, pl, (__nv_bfloat16*)out, rows, S);
    return (int)cudaGetLastError();
}

template <int D, bool G16>
int occupancy() {
    const int sm = smem_bytes<D, G16>();
    cudaFuncSetAttribute(pd_split<D, G16>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, pd_split<D, G16>, NWARP * 32, sm) != cudaSuccess) return -1;
    return n;
}

#endif  // KZOO_PD_HOST_EMU
}  // namespace

#ifndef KZOO_PD_HOST_EMU

extern "C" int kzoo_pd_occupancy(int D, int G) {
    if (D == 128) return G > 8 ? occupancy<128, true>() : occupancy<128, false>();
    if (D == 64) return G > 8 ? occupancy<64, true>() : occupancy<64, false>();
    return -1;
}

// q bf16 [B, HQ, D]; kc, vc fp8 [NB, 16, HK, D]; ks, vs float[1]; bt int32 [B, NBLK]; sl int32 [B];
// po float [B*HQ*S, D], pm, pl float [B*HQ*S]; out bf16 [B, HQ, D]. CH pages a split (<= 128).
extern "C" int kzoo_pd_decode(const void* q, const void* kc, const void* vc, const void* ks, const void* vs,
                              const void* bt, const void* sl, void* po, void* pm, void* pl, void* out, int B,
                              int HQ, int HK, int D, int NBLK, int CH, int S, void* stream) {
    cudaStream_t st = (cudaStream_t)stream;
    const int G = HQ / HK;
    if (CH < 1 || CH > 128 || G < 1 || G > 16 || HQ != G * HK) return -2;
    float *a = (float*)po, *m = (float*)pm, *l = (float*)pl;
    if (D == 128)
        return G > 8 ? launch<128, true>(q, kc, vc, ks, vs, bt, sl, a, m, l, out, B, HQ, HK, NBLK, CH, S, st)
                     : launch<128, false>(q, kc, vc, ks, vs, bt, sl, a, m, l, out, B, HQ, HK, NBLK, CH, S, st);
    if (D == 64)
        return G > 8 ? launch<64, true>(q, kc, vc, ks, vs, bt, sl, a, m, l, out, B, HQ, HK, NBLK, CH, S, st)
                     : launch<64, false>(q, kc, vc, ks, vs, bt, sl, a, m, l, out, B, HQ, HK, NBLK, CH, S, st);
    return -3;
}
#endif  // KZOO_PD_HOST_EMU
