// Runs pd_sm90.cu's kernels on the CPU (lab round 7's CPU check; emulate_r7.py calls it through
// ctypes). Build: g++ -O1 -std=c++17 -shared -fPIC -DKZOO_PD_HOST_EMU pd_host_emu.cpp -o ...
// One block at a time; its 128 (pd_split) or 128 (pd_merge) threads are fibers switched at every
// barrier (round-robin, emu_switch below), so the kernels' own index arithmetic, fragments, swizzles, shuffles and
// pipeline bookkeeping execute as written.
#include <stdint.h>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include "pd_host_emu.h"

// x86-64 SysV fiber switch: saves the callee-saved registers and the stack pointer (glibc's
// swapcontext makes a signal-mask system call at every switch: ~100x slower here).
extern "C" void emu_switch(void** save_sp, void* new_sp);
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

namespace emu {
uint8_t* smem_base;
EmuDim block;
uint32_t xch[128][12];
static int cur, nthr;
static void* sched_sp;
static std::vector<void*> fsp;
static std::vector<std::vector<char>> stacks;
static std::vector<int> done;
static int warp_arrived[4], warp_gen[4], blk_arrived, blk_gen;
int tid() { return cur; }
static void yield() { emu_switch(&fsp[cur], sched_sp); }
void bar_warp() {
    const int w = cur >> 5, gen = warp_gen[w];
    if (++warp_arrived[w] == 32) { warp_arrived[w] = 0; ++warp_gen[w]; return; }
    while (warp_gen[w] == gen) yield();
}
void bar_block() {
    const int gen = blk_gen;
    if (++blk_arrived == nthr) { blk_arrived = 0; ++blk_gen; return; }
    while (blk_gen == gen) yield();
}
static void (*body)(void*);
static void* body_arg;
static void fiber_entry() {
    body(body_arg);
    done[cur] = 1;
    for (;;) yield();
}
static void run_block(int n, void (*fn)(void*), void* arg) {
    nthr = n; body = fn; body_arg = arg;
    fsp.assign(n, nullptr); stacks.resize(n); done.assign(n, 0);
    for (int i = 0; i < 4; ++i) warp_arrived[i] = 0;
    blk_arrived = 0;
    for (int i = 0; i < n; ++i) {
        if (stacks[i].size() < 256 * 1024) stacks[i].resize(256 * 1024);
        uintptr_t top = ((uintptr_t)(stacks[i].data() + stacks[i].size())) & ~(uintptr_t)15;
        void** sp = (void**)top;
        *--sp = nullptr;                         // fiber_entry's (unused) return address
        *--sp = (void*)&fiber_entry;             // emu_switch's ret target
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
}  // namespace emu

#include "pd_sm90.cu"

namespace {
struct Args {
    const void *q, *kc, *vc, *ks, *vs, *bt, *sl;
    float *po, *pm, *pl;
    void* out;
    int B, HQ, HK, D, NBLK, CH, S, G;
};
template <int D, bool G16>
void split_body(void* p) {
    Args& a = *(Args*)p;
    pd_split<D, G16>((const __nv_bfloat16*)a.q, (const uint8_t*)a.kc, (const uint8_t*)a.vc, (const float*)a.ks,
                     (const float*)a.vs, (const int*)a.bt, (const int*)a.sl, a.po, a.pm, a.pl, a.HQ, a.HK, a.G,
                     a.NBLK, a.CH, a.S, 1.4426950408889634f / sqrtf((float)D));
}
template <int D>
void merge_body(void* p) {
    Args& a = *(Args*)p;
    pd_merge<D>(a.po, a.pm, a.pl, (__nv_bfloat16*)a.out, a.B * a.HQ, a.S);
}
}  // namespace

extern "C" int kzoo_pd_emu(const void* q, const void* kc, const void* vc, const void* ks, const void* vs,
                           const void* bt, const void* sl, void* po, void* pm, void* pl, void* out, int B, int HQ,
                           int HK, int D, int NBLK, int CH, int S) {
    Args a{q, kc, vc, ks, vs, bt, sl, (float*)po, (float*)pm, (float*)pl, out, B, HQ, HK, D, NBLK, CH, S, HQ / HK};
    if (CH < 1 || CH > 128 || a.G < 1 || a.G > 16 || HQ != a.G * HK || (D != 64 && D != 128)) return -2;
    const int ring = NWARP * NST * 2 * PAGE * D, mrg = (NWARP * 16 * D + 2 * NWARP * 16) * 4;
    std::vector<uint8_t> sm((ring > mrg ? ring : mrg) + 128);
    for (int b = 0; b < B; ++b)
        for (int sp = 0; sp < S; ++sp)
            for (int h = 0; h < HK; ++h) {
                emu::block = EmuDim{h, sp, b};
                memset(sm.data(), 0xff, sm.size());  // garbage (0xff = fp8 NaN) where nothing was copied
                emu::smem_base = sm.data();
                void (*fn)(void*) = D == 128 ? (a.G > 8 ? split_body<128, true> : split_body<128, false>)
                                             : (a.G > 8 ? split_body<64, true> : split_body<64, false>);
                emu::run_block(NWARP * 32, fn, &a);
            }
    const int rows = B * HQ;
    for (int blk = 0; blk < (rows + 3) / 4; ++blk) {
        emu::block = EmuDim{blk, 0, 0};
        emu::run_block(128, D == 128 ? merge_body<128> : merge_body<64>, &a);
    }
    return 0;
}
