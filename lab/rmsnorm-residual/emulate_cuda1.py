"""CPU check of round 8's `cuda1` (lab/rmsnorm-residual/cuda1): no GPU, no nvcc run here.

The kernel's own code (cuda1/rmsnorm_residual_kernel.cu) compiled for the CPU with g++ -DKZOO_HOST_EMU,
lab/layernorm/host_emu.h and rms_emu_cuda1.cpp (every CUDA thread a fiber; shuffles and barriers among the fibers; every global
load checked against the inputs' bytes, every store against y's, and counted per 16 bytes), run
through the package's own entry (rmsnorm_residual.py's _device: the CUDA-or-Triton choice as written) with
the extension replaced by this model. Widths that go to the Triton solution run under
lab/rows_cpu_check.py's model of triton.language. Checks, per run: relative Frobenius against the
task's reference (kzoo_judge's inputs, reference and comparator; tolerance 1e-2) and the board's
elementwise bound (atol 1e-2 + rtol 1e-2) ratio <= 1, over y and the in-place residual (the task's
relative-frobenius-tuple-max); the residual bit-identical to the reference's bf16(residual + x); for
the kernel, every 16 bytes of y and of the residual written exactly once, no load or store outside
its tensor. Grids: the launcher's min(T, 132 x CTAs an SM) at 2 CTAs an SM (the H = 16384
occupancy) and small persistent grids (each CTA many rows).
Negative controls: the kernel's source with one fault each must fail.

usage: /usr/bin/python3 lab/rmsnorm-residual/emulate_cuda1.py   (log: lab/rmsnorm-residual/emulate_cuda1.txt)
"""
import ctypes
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CAND = os.path.join(HERE, "cuda1")
sys.path.insert(0, os.path.join(ROOT, "judge"))
sys.path.insert(0, os.path.join(ROOT, "lab"))
from kzoo_judge import compare, inputs, reference  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402
import rows_cpu_check  # noqa: E402 - its model of triton.language, for the Triton widths

N_SM = 132


def build(src_text=None, tag="ok"):
    """The emulation library; src_text replaces the kernel's source (negative controls)."""
    d = tempfile.mkdtemp(prefix="rms_emu_%s_" % tag)
    inc = ["-I" + HERE, "-I" + os.path.join(ROOT, "lab", "layernorm")]
    if src_text is not None:
        os.makedirs(os.path.join(d, "cuda1"))
        with open(os.path.join(d, "cuda1", "rmsnorm_residual_kernel.cu"), "w") as f:
            f.write(src_text)
        inc = ["-I" + d] + inc  # the faulty kernel is found first
    cpp = os.path.join(HERE, "rms_emu_cuda1.cpp")
    if src_text is not None:  # a copy beside the faulty kernel: "cuda1/..." resolves there first
        cpp2 = os.path.join(d, "rms_emu_cuda1.cpp")
        with open(cpp) as f, open(cpp2, "w") as g:
            g.write(f.read())
        cpp = cpp2
    so = os.path.join(d, "rms_emu.so")
    subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-DKZOO_HOST_EMU"] + inc + [cpp, "-o", so],
                   check=True)
    lib = ctypes.CDLL(so)
    lib.kzoo_rms_emu.restype = ctypes.c_long
    return lib


class EmuKernels:
    """Stands in for the extension: the launcher's grid, the kernel's body on the CPU."""

    def __init__(self, lib):
        self.lib, self.per_sm, self.grid_cap, self.log = lib, 4, None, []

    def rmsnorm_residual(self, x, r, w, y):
        T, H = x.shape
        G = min(T, N_SM * self.per_sm)
        if self.grid_cap:
            G = min(G, self.grid_cap)
        y.view(torch.int16).fill_(-1)  # 0xffff: a NaN wherever nothing is written
        wy = torch.zeros(T * H * 2 // 16, dtype=torch.int32)
        wr = torch.zeros(T * H * 2 // 16, dtype=torch.int32)
        thr = ctypes.c_int(0)
        bad = self.lib.kzoo_rms_emu(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(r.data_ptr()),
                                    ctypes.c_void_p(w.data_ptr()), ctypes.c_void_p(y.data_ptr()), T, H, G,
                                    ctypes.c_void_p(wy.data_ptr()), ctypes.c_void_p(wr.data_ptr()),
                                    ctypes.byref(thr))
        self.log.append(dict(G=G, threads=thr.value, bad=bad, once=bool((wy == 1).all()) and bool((wr == 1).all()),
                             nwrites=(int(min(wy.min(), wr.min())), int(max(wy.max(), wr.max())))))


def load_candidate():
    rows_cpu_check._install_stubs()
    sys.path.insert(0, CAND)
    spec = importlib.util.spec_from_file_location("cand_rms_cuda1", os.path.join(CAND, "rmsnorm_residual.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod._kernels is None and mod._tri is not None  # no CUDA here; the Triton model is installed
    tri = mod._tri
    tri.range = rows_cpu_check.range
    tri._num_sms = lambda dev: N_SM
    return mod


def main():
    t00 = time.time()
    task = task_mod.load(os.path.join(ROOT, "catalog/tasks/rmsnorm-residual/task.json"))
    ref = reference.load(task)
    specs = reference.expected_specs(task)
    w = task.workloads["synthetic"]
    mod = load_candidate()
    lib = build()
    kern = EmuKernels(lib)
    mod._kernels = kern
    fails, worst = 0, [0.0, 0.0]

    def one(dims, seed, per_sm=2, cap=None, shift=0.0, k=None, quiet=False):
        nonlocal fails
        k = k or kern
        k.per_sm, k.grid_cap = per_sm, cap
        mod._kernels = k
        x = list(inputs.make_inputs(task, task.bind(w, list(dims)), seed, "cpu"))
        if shift:
            x[1] = (x[1].float() + shift).to(torch.bfloat16)
        exp = reference.run(ref, task, x)
        n0 = len(k.log)
        t0 = time.time()
        args = [t.clone() for t in x]
        y = mod._device(*args)
        got = [y, args[1]]  # y, then the residual updated in place
        cuda = len(k.log) > n0
        m = compare.measure(got, exp, specs, task.comparator, task.row_pass)
        v = compare.compare(got, exp, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False,
                            bound=(0.01, 0.01))
        br = v.bound_ratio or 0.0
        exact_r = torch.equal(args[1].view(torch.int16), exp[1].view(torch.int16))
        ok = m <= task.tolerance and br <= 1.0 and not torch.isnan(y.float()).any() and exact_r
        info = "triton"
        if cuda:
            L = k.log[-1]
            ok = ok and L["bad"] == 0 and L["once"]
            info = "cuda G=%d x %d thr, writes/16B %s, bad %d" % (L["G"], L["threads"], L["nwrites"], L["bad"])
        if not quiet:
            fails += not ok
            worst[0], worst[1] = max(worst[0], m), max(worst[1], br)
            print("%-14s %-40s shift %-4g %s rel-frob %.3g bound %.3g residual exact %s [%.1f s]" % (
                str(tuple(dims)), info, shift, "ok  " if ok else "FAIL", m, br, exact_r, time.time() - t0),
                flush=True)
        return ok, cuda

    print("== correctness and measure shapes (task.json), per_sm 2")
    for i, dims in enumerate(w["correctness"] + w["measure"]):
        for s in range(2):
            one(dims, 100 * i + s)
    print("== edge shapes: CUDA-path widths at T = 1, 3, 133 (grid 133 one-row CTAs), small persistent grids")
    edges = []
    for H in (16384, 8200, 16376, 12288, 10000):
        for T in (1, 3, 133):
            edges.append(((T, H), 2, None))
    for H in (16384, 8200, 16376):
        edges.append(((61, H), 2, 5))   # 5 CTAs: 12-13 rows each, the prefetch across rows
        edges.append(((40, H), 1, 40))  # one row each
        edges.append(((9, H), 1, 2))
    edges.append(((400, 16384), 1, None))  # G = 132: 3-4 rows a CTA
    for i, (dims, per_sm, cap) in enumerate(edges):
        one(dims, 7000 + i, per_sm, cap)
    print("== widths beside the CUDA path's limits (Triton): 8192, 16392, 8193, 4096")
    for i, dims in enumerate([(3, 8192), (3, 16392), (2, 8193), (5, 4096)]):
        one(dims, 8000 + i)
    print("== shifted residual (+ 3: large values, the rounding of h to bf16 matters more)")
    for i, dims in enumerate([(3, 16384), (133, 8200)]):
        one(dims, 9000 + i, shift=3.0)
    print("== graded width 16384, a slice of rows (T = 2 x 132 x 2 + 3: every CTA 2-3 rows)")
    one((2 * 132 * 2 + 3, 16384), 9101, 2)
    print("checks: worst relative-Frobenius %.3g, worst bound ratio %.3g" % tuple(worst))

    print("== negative controls (each must FAIL)")
    src = open(os.path.join(CAND, "rmsnorm_residual_kernel.cu")).read()
    controls = {
        "residual not written back": ("        __stcs(rr + c, h[k]);\n", "\n"),
        "block sum over one warp too few": ("if (i < nwarps) s += red[i];", "if (i < nwarps - 1) s += red[i];"),
        "mean over the CTA's slots, not H": ("const float fh = static_cast<float>(H);",
                                             "const float fh = static_cast<float>(nthr * 32);"),
        "next residual prefetched before this one is read": (
            "    float s = 0.f;\n    cp_async_wait_all();\n",
            "    float s = 0.f;\n    cp_async_wait_all();\n    if (row + G < T) load_row<kFull>(nx, rbuf, x + "
            "static_cast<size_t>(row + G) * nvec, res + static_cast<size_t>(row + G) * nvec, tid, nthr, nvec);\n"),
    }
    caught = 0
    for name, (a, b) in controls.items():
        assert src.count(a) == 1, name
        kb = EmuKernels(build(src.replace(a, b), "neg"))
        res = [one(d, 9500 + j, 2, cap, shift, k=kb, quiet=True)[0]
               for j, (d, cap, shift) in enumerate([((3, 16384), None, 0.0), ((61, 16384), 5, 3.0),
                                                    ((133, 8200), None, 0.0)])]
        ok = not all(res)
        caught += ok
        print("control %-40s %s (runs passing: %d of %d)" % (name, "caught" if ok else "NOT CAUGHT", sum(res),
                                                           len(res)))
    fails += len(controls) - caught
    mod._kernels = kern
    print("time %.0f s" % (time.time() - t00))
    print("FAILURES: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
