#!/usr/bin/env python3
"""The fused draw's kernel alone (draw_fused.py), and variants of it, on the GPU: each one's time
for a 2^29-element bf16 set in rows of 8192 (CUDA events, best of 7) at several blocks an SM, the
exact kernel's known answers, and how far a variant's float32 values lie from the exact kernel's
(2^24 elements; a variant's bf16 elements that differ).

A variant is a PTX module made here by scripts/gen_ptx.sh with EXTRA flags, carried to the device:
  EXTRA=-DKZOO_DRAW_APPROX DST=.device/draw_approx_ptx.py bash scripts/gen_ptx.sh draw
Usage (GPU machine, repository root):
  python3 scripts/gpu/draw_probe.py [--variant approx=.device/draw_approx_ptx.py ...] [--blocks-per-sm 8 ...]
"""
import argparse
import ctypes
import importlib.util
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", default=[], help="NAME=PATH of a gen_ptx.sh module (repeatable)")
    ap.add_argument("--blocks-per-sm", type=int, action="append", help="default 4, 8 and 16")
    a = ap.parse_args()
    import torch
    from kzoo_judge import draw_fused, draw_ptx, ptx_module
    torch.zeros(1, device="cuda")  # the context the modules load in
    names = list(draw_fused.KERNELS.values())
    ptxs = {"exact": draw_ptx.PTX}
    for v in a.variant:
        name, path = v.split("=", 1)
        spec = importlib.util.spec_from_file_location("variant_" + name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        ptxs[name] = mod.PTX

    def drawer(module):
        def draw(out, scale, key, cols):
            k0, k1 = draw_fused.key_words(key)
            why = module.launch(draw_fused.KERNELS[out.dtype], [
                ctypes.c_void_p(out.data_ptr()), ctypes.c_int64(out.numel()), ctypes.c_int64(max(1, cols)),
                ctypes.c_void_p(scale.data_ptr() if scale is not None else 0), ctypes.c_uint32(k0), ctypes.c_uint32(k1)], out.device)
            if why:
                raise RuntimeError(why)
        return draw

    print("draw_probe: %s" % torch.cuda.get_device_name(0), flush=True)
    n, cols = 1 << 29, 8192
    out = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    scale = torch.exp2(torch.rand(n // cols, device="cuda") * 2 - 1)
    small = 1 << 24
    exact_f32 = exact_bf16 = None
    for name, ptx in ptxs.items():
        for bps in a.blocks_per_sm or [4, 8, 16]:
            module, why = ptx_module.Module.load(ptx, names, draw_fused.THREADS, bps)
            if module is None:
                print("draw_probe: %-8s %2d blocks/SM: %s" % (name, bps, why), flush=True)
                continue
            draw = drawer(module)
            best = float("inf")
            for _ in range(7):
                t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0.record()
                draw(out, scale, 12345, cols)
                t1.record()
                torch.cuda.synchronize()
                best = min(best, t0.elapsed_time(t1))
            extra = ""
            if name == "exact":
                extra = "; known answers %s" % (draw_fused.known_answers(draw, "cuda") == draw_fused.KNOWN_SHA256)
            print("draw_probe: %-8s %2d blocks/SM (grid %d): %.3f ms, %.0f GB/s%s"
                  % (name, bps, module.blocks, best, n * 2 / best / 1e6, extra), flush=True)
        f32 = torch.empty(small, dtype=torch.float32, device="cuda")
        bf16 = torch.empty(small, dtype=torch.bfloat16, device="cuda")
        draw(f32, None, 99, small)
        draw(bf16, None, 99, small)
        if name == "exact":
            exact_f32, exact_bf16 = f32, bf16
            continue
        d = (f32 - exact_f32).abs()
        big = exact_f32.abs() >= 0.01
        print("draw_probe: %-8s against exact (2^24, float32): max |d| %.3e (where |z| >= 0.01: %.3e relative), mean |d| "
              "%.3e; max |z| %.4f against %.4f; bf16 elements that differ %d"
              % (name, float(d.max()), float((d[big] / exact_f32[big].abs()).max()), float(d.mean()),
                 float(f32.abs().max()), float(exact_f32.abs().max()), int((bf16 != exact_bf16).sum())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
