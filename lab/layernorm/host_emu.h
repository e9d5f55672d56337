// CPU stand-ins for what the row kernels (lab/layernorm/cuda1/layernorm_kernel.cu,
// lab/rmsnorm-residual/cuda1/rmsnorm_residual_kernel.cu) use, so that their own code runs on the
// CPU (lab round 8's CPU check; header-only: one translation unit per kernel, ln_emu_cuda1.cpp and
// lab/rmsnorm-residual/rms_emu_cuda1.cpp). Every CUDA thread is a cooperative fiber; __shfl_xor_sync,
// __syncwarp and __syncthreads are barriers among the fibers of a warp / block. Global accesses go
// through checks: a load must fall inside a registered input, a store inside a registered output,
// and every 16-byte store is counted per address (the harness asks that each is written once).
// Adapted from lab/paged-attention-decode/cufd/pd_host_emu.{h,cpp} (its fiber switch).
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define KZOO_DYN_SMEM(T, name) T* name = reinterpret_cast<T*>(emu::smem.data())

struct alignas(16) uint4 { uint32_t x, y, z, w; };
struct alignas(4) __nv_bfloat162 { uint16_t x, y; };
struct EmuDim { unsigned x, y, z; };

namespace emu {
constexpr int kMaxThreads = 1024;
struct Range { const uint8_t* p; size_t n; std::vector<uint32_t>* writes; };  // writes: a count a 16 bytes
inline std::vector<Range> reads, writes;
inline std::vector<uint8_t> smem;
inline EmuDim block, grid, bdim;
inline int cur, nthr;
inline long bad_loads, bad_stores;
inline uint32_t xch[kMaxThreads];

extern "C" void emu_switch(void** save_sp, void* new_sp);
inline void* sched_sp;
inline std::vector<void*> fsp;
inline std::vector<std::vector<char>> stacks;
inline std::vector<int> done;
inline int warp_arrived[32], warp_gen[32], blk_arrived, blk_gen;
inline void yield() { emu_switch(&fsp[cur], sched_sp); }
inline void bar_warp() {
  const int w = cur >> 5, gen = warp_gen[w];
  const int n = nthr - 32 * w < 32 ? nthr - 32 * w : 32;
  if (++warp_arrived[w] == n) { warp_arrived[w] = 0; ++warp_gen[w]; return; }
  while (warp_gen[w] == gen) yield();
}
inline void bar_block() {
  const int gen = blk_gen;
  if (++blk_arrived == nthr) { blk_arrived = 0; ++blk_gen; return; }
  while (blk_gen == gen) yield();
}
inline void (*body)(void*);
inline void* body_arg;
inline void fiber_entry() {
  body(body_arg);
  done[cur] = 1;
  for (;;) yield();
}
inline void run_block(int n, void (*fn)(void*), void* arg) {
  nthr = n; body = fn; body_arg = arg;
  fsp.assign(n, nullptr); stacks.resize(n); done.assign(n, 0);
  for (int i = 0; i < 32; ++i) warp_arrived[i] = 0;
  blk_arrived = 0;
  for (int i = 0; i < n; ++i) {
    if (stacks[i].size() < 64 * 1024) stacks[i].resize(64 * 1024);
    uintptr_t top = reinterpret_cast<uintptr_t>(stacks[i].data() + stacks[i].size()) & ~static_cast<uintptr_t>(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                              // fiber_entry's (unused) return address
    *--sp = reinterpret_cast<void*>(&fiber_entry);  // emu_switch's ret target
    for (int r = 0; r < 6; ++r) *--sp = nullptr;  // rbp rbx r12-r15
    fsp[i] = sp;
  }
  int left = n;
  while (left) {
    left = 0;
    for (cur = 0; cur < n; ++cur) {
      if (done[cur]) continue;
      emu_switch(&sched_sp, fsp[cur]);
      left += !done[cur];
    }
  }
}
inline bool in(const std::vector<Range>& rs, const void* p, size_t n, Range** hit = nullptr) {
  const uint8_t* q = static_cast<const uint8_t*>(p);
  for (auto& r : rs)
    if (q >= r.p && q + n <= r.p + r.n) {
      if (hit) *hit = const_cast<Range*>(&r);
      return true;
    }
  return false;
}
}  // namespace emu

#define threadIdx (EmuDim{static_cast<unsigned>(emu::cur), 0, 0})
#define blockIdx (emu::block)
#define gridDim (emu::grid)
#define blockDim (emu::bdim)

inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
inline uint16_t emu_f2bf(float f) {  // round to nearest even, NaN kept quiet (as cvt.rn.bf16.f32)
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{emu_f2bf(a), emu_f2bf(b)}; }

template <typename T>
inline T emu_load(const T* p) {
  if (!emu::in(emu::reads, p, sizeof(T)) && !emu::in(emu::writes, p, sizeof(T))) {
    ++emu::bad_loads;
    return T{};
  }
  return *p;
}
template <typename T>
inline T __ldg(const T* p) { return emu_load(p); }
template <typename T>
inline T __ldcs(const T* p) { return emu_load(p); }
template <typename T>
inline void emu_store(T* p, const T& v) {
  emu::Range* r = nullptr;
  if (!emu::in(emu::writes, p, sizeof(T), &r)) { ++emu::bad_stores; return; }
  const size_t off = static_cast<size_t>(reinterpret_cast<uint8_t*>(p) - r->p);
  if (off % 16 == 0 && sizeof(T) == 16) (*r->writes)[off / 16] += 1;
  else ++emu::bad_stores;  // the kernels store whole aligned 16-byte vectors only
  *p = v;
}
template <typename T>
inline void __stcs(T* p, const T& v) { emu_store(p, v); }

// cp.async copies at once (a wait has nothing to wait for); the source is checked as a load.
inline void cp_async16(uint4* dst, const uint4* src) { *dst = emu_load(src); }
inline void cp_async_commit() {}
inline void cp_async_wait_all() {}

inline void __syncwarp(unsigned = 0xffffffffu) { emu::bar_warp(); }
inline void __syncthreads() { emu::bar_block(); }
inline float __shfl_xor_sync(unsigned, float v, int m) {
  const int t = emu::cur, w = t & ~31;
  emu::xch[t] = __float_as_uint(v);
  emu::bar_warp();
  const uint32_t r = emu::xch[w + ((t & 31) ^ m)];
  emu::bar_warp();
  return __uint_as_float(r);
}

// x86-64 SysV fiber switch (pd_host_emu.cpp's): saves the callee-saved registers and the stack
// pointer. Defined once per shared object (each *_emu.cpp is one translation unit).
asm(R"(
.text
.globl emu_switch
.hidden emu_switch
.type emu_switch,@function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size emu_switch, .-emu_switch
)");
