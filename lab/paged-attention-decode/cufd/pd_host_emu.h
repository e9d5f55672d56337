// CPU stand-ins for what pd_sm90.cu's kernels use, so that the kernels' own code runs on the CPU
// (pd_host_emu.cpp; lab round 7). Every CUDA thread is a cooperative fiber (ucontext); warp
// collectives (shfl, mma.sync, __syncwarp) and __syncthreads are barriers among the fibers of a
// warp / block. cp.async copies at once (wait_group has nothing to wait for). mma.sync m16n8k16
// assembles the warp's fragments by the PTX ISA's layouts (row g = lane / 4, column pair
// 2 (lane % 4); a1/a3 rows + 8, a2/a3 and b1 k + 8) and accumulates in float.
#pragma once
#include <stdint.h>
#include <string.h>
#include <math.h>

#define KZOO_DEV inline
#define KZOO_SPLIT_KERNEL void
#define KZOO_MERGE_KERNEL void
#define KZOO_SMEM uint8_t* smem = emu::smem_base
#define __restrict__
#define __forceinline__ inline

struct __nv_bfloat16 { uint16_t x; };
struct __nv_bfloat162 { __nv_bfloat16 a, b; };
struct EmuDim { int x, y, z; };
struct uint2 { uint32_t x, y; };
struct alignas(16) uint4 { uint32_t x, y, z, w; };
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace emu {
extern uint8_t* smem_base;
extern EmuDim block;
int tid();
void bar_warp();
void bar_block();
extern uint32_t xch[128][12];  // exchange slots a thread

inline float bf2f(__nv_bfloat16 v) { uint32_t u = (uint32_t)v.x << 16; float f; memcpy(&f, &u, 4); return f; }
inline uint16_t f2h(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
inline float h2f(uint16_t u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
inline float e4m3(uint8_t b) {
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return NAN;
    const float v = e == 0 ? ldexpf((float)m / 8.f, -6) : ldexpf(1.f + (float)m / 8.f, e - 7);
    return s ? -v : v;
}
}  // namespace emu

#define threadIdx (EmuDim{emu::tid(), 0, 0})
#define blockIdx (emu::block)

inline float __low2float(__nv_bfloat162 v) { return emu::bf2f(v.a); }
inline float __high2float(__nv_bfloat162 v) { return emu::bf2f(v.b); }
inline __nv_bfloat16 __float2bfloat16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return __nv_bfloat16{(uint16_t)(u >> 16)};
}
template <typename T>
inline T __ldg(const T* p) { return *p; }
inline void __syncwarp() { emu::bar_warp(); }
inline void __syncthreads() { emu::bar_block(); }
inline int emu_shfl_i(int v, int src) {
    const int t = emu::tid(), w = t & ~31;
    emu::xch[t][0] = (uint32_t)v;
    emu::bar_warp();
    const int r = (int)emu::xch[w + (src & 31)][0];
    emu::bar_warp();
    return r;
}
inline int __shfl_sync(unsigned, int v, int src) { return emu_shfl_i(v, src); }
inline float __shfl_xor_sync(unsigned, float v, int m) {
    uint32_t u; memcpy(&u, &v, 4);
    const int r = emu_shfl_i((int)u, (emu::tid() & 31) ^ m);
    float f; memcpy(&f, &r, 4);
    return f;
}

inline uint32_t smem_u32(const void* p) { return (uint32_t)((const uint8_t*)p - emu::smem_base); }
inline void cp16(uint32_t dst, const void* src, int bytes) {
    memset(emu::smem_base + dst, 0, 16);
    if (bytes) memcpy(emu::smem_base + dst, src, bytes);
}
inline void cp_commit() {}
template <int N>
inline void cp_wait() {}
inline void cvt4(uint32_t w, uint32_t& lo, uint32_t& hi) {
    uint16_t h[4];
    for (int i = 0; i < 4; ++i) h[i] = emu::f2h(emu::e4m3((w >> (8 * i)) & 0xff));  // exact
    lo = h[0] | ((uint32_t)h[1] << 16);
    hi = h[2] | ((uint32_t)h[3] << 16);
}
template <uint32_t SEL>
inline uint32_t prmt(uint32_t a, uint32_t b) {
    uint8_t src[8];
    for (int i = 0; i < 4; ++i) { src[i] = (a >> (8 * i)) & 0xff; src[4 + i] = (b >> (8 * i)) & 0xff; }
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= (uint32_t)src[(SEL >> (4 * i)) & 7] << (8 * i);
    return r;
}
inline uint32_t pack_h2(float lo, float hi) { return emu::f2h(lo) | ((uint32_t)emu::f2h(hi) << 16); }
inline void mma16816(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
    const int t = emu::tid(), w = t & ~31, lane = t & 31;
    uint32_t* x = emu::xch[t];
    x[0] = a0; x[1] = a1; x[2] = a2; x[3] = a3; x[4] = b0; x[5] = b1;
    emu::bar_warp();
    auto half = [](uint32_t r, int k) { return emu::h2f((uint16_t)(k & 1 ? r >> 16 : r & 0xffff)); };
    auto A = [&](int row, int k) {  // A[row][k]
        const int l = (row & 7) * 4 + (k & 7) / 2;
        const int reg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
        return half(emu::xch[w + l][reg], k);
    };
    auto B = [&](int k, int col) {  // B[k][col]
        const int l = col * 4 + (k & 7) / 2;
        return half(emu::xch[w + l][4 + (k >= 8 ? 1 : 0)], k);
    };
    const int g = lane >> 2, cc = lane & 3;
    float out[4];
    for (int e = 0; e < 4; ++e) {
        const int row = g + (e >= 2 ? 8 : 0), col = 2 * cc + (e & 1);
        float s = c[e];
        for (int k = 0; k < 16; ++k) s += A(row, k) * B(k, col);
        out[e] = s;
    }
    emu::bar_warp();
    for (int e = 0; e < 4; ++e) c[e] = out[e];
}
