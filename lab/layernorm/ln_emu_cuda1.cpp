// layernorm_kernel.cu's kernel on the CPU (emulate_cuda1.py calls it through ctypes).
// Build (from lab/layernorm/): g++ -O1 -std=c++17 -shared -fPIC -DKZOO_HOST_EMU -I. ln_emu_cuda1.cpp -o ln_emu.so
#include "host_emu.h"
#include "cuda1/layernorm_kernel.cu"

namespace {
struct Args { const void *x, *w, *b; void* y; int T, nvec, H; };
void body(void* p) {
  Args& a = *static_cast<Args*>(p);
  layernorm_emu_body(a.x, a.w, a.b, a.y, a.T, a.nvec, a.H);
}
}  // namespace

// Runs the grid the launcher would (G persistent CTAs of layernorm_threads(H / 8) threads).
// writes_out: one count a 16 bytes of y. Returns bad loads * 1000000 + bad stores, or -1.
extern "C" long kzoo_ln_emu(const void* x, const void* w, const void* b, void* y, int T, int H, int G,
                            uint32_t* writes_out, int* threads_out) {
  if (H % 8 != 0 || T < 1 || G < 1) return -1;
  const int nvec = H / 8, threads = layernorm_threads(nvec);
  if (threads > 512) return -1;
  *threads_out = threads;
  const size_t row = static_cast<size_t>(H) * 2, total = row * T;
  std::vector<uint32_t> wr(total / 16, 0);
  emu::reads = {{static_cast<const uint8_t*>(x), total, nullptr}, {static_cast<const uint8_t*>(w), row, nullptr},
                {static_cast<const uint8_t*>(b), row, nullptr}};
  emu::writes = {{static_cast<const uint8_t*>(y), total, &wr}};
  emu::bad_loads = emu::bad_stores = 0;
  Args a{x, w, b, y, T, nvec, H};
  emu::grid = EmuDim{static_cast<unsigned>(G), 1, 1};
  emu::bdim = EmuDim{static_cast<unsigned>(threads), 1, 1};
  for (int blk = 0; blk < G; ++blk) {
    emu::block = EmuDim{static_cast<unsigned>(blk), 0, 0};
    emu::smem.assign(static_cast<size_t>(nvec) * 32, 0xff);  // NaN where nothing was staged
    emu::run_block(threads, body, &a);
  }
  memcpy(writes_out, wr.data(), wr.size() * 4);
  return emu::bad_loads * 1000000 + emu::bad_stores;
}
