// rmsnorm_residual_kernel.cu's kernel on the CPU (emulate_cuda1.py calls it through ctypes).
// Build (from lab/rmsnorm-residual/): g++ -O1 -std=c++17 -shared -fPIC -DKZOO_HOST_EMU -I../layernorm
//   rms_emu_cuda1.cpp -o rms_emu.so   (the CPU stand-ins are lab/layernorm/host_emu.h, shared)
#include "host_emu.h"
#include "cuda1/rmsnorm_residual_kernel.cu"

namespace {
struct Args { const void* x; void* r; const void* w; void* y; int T, nvec, H; };
void body(void* p) {
  Args& a = *static_cast<Args*>(p);
  rmsnorm_residual_emu_body(a.x, a.r, a.w, a.y, a.T, a.nvec, a.H);
}
}  // namespace

// Runs the grid the launcher would (G persistent CTAs of rmsnorm_residual_threads(H / 8) threads).
// writes_y, writes_r: one count a 16 bytes of y and of the residual. Returns bad loads * 1000000 +
// bad stores, or -1.
extern "C" long kzoo_rms_emu(const void* x, void* r, const void* w, void* y, int T, int H, int G, uint32_t* writes_y,
                             uint32_t* writes_r, int* threads_out) {
  if (H % 8 != 0 || T < 1 || G < 1) return -1;
  const int nvec = H / 8, threads = rmsnorm_residual_threads(nvec);
  if (threads > 512) return -1;
  *threads_out = threads;
  const size_t row = static_cast<size_t>(H) * 2, total = row * T;
  std::vector<uint32_t> wy(total / 16, 0), wr(total / 16, 0);
  emu::reads = {{static_cast<const uint8_t*>(x), total, nullptr}, {static_cast<const uint8_t*>(w), row, nullptr}};
  emu::writes = {{static_cast<const uint8_t*>(y), total, &wy}, {static_cast<const uint8_t*>(r), total, &wr}};
  emu::bad_loads = emu::bad_stores = 0;
  Args a{x, r, w, y, T, nvec, H};
  emu::grid = EmuDim{static_cast<unsigned>(G), 1, 1};
  emu::bdim = EmuDim{static_cast<unsigned>(threads), 1, 1};
  for (int blk = 0; blk < G; ++blk) {
    emu::block = EmuDim{static_cast<unsigned>(blk), 0, 0};
    emu::smem.assign(static_cast<size_t>(nvec) * 32, 0xff);  // NaN where nothing was staged
    emu::run_block(threads, body, &a);
  }
  memcpy(writes_y, wy.data(), wy.size() * 4);
  memcpy(writes_r, wr.data(), wr.size() * 4);
  return emu::bad_loads * 1000000 + emu::bad_stores;
}
