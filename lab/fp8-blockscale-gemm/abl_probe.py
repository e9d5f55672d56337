#!/usr/bin/env python3
"""Where the fp8 solution's time goes: the catalog kernel with one part taken out at a time.

Issue 20 asks 70% of the fp8 roofline; the solution (128x192 tile, two consumer warpgroups, each
k-block drained and promoted) sits at 60%, cuBLAS at 68%. Ten rounds of redesign (lab NOTES) moved
it little and two models failed: L2 bytes (c128: fewer bytes, slower) and the consumers idling in
step (pp: level). This probe measures instead of modelling. Each variant is the catalog's own
source with named parts removed (patched here by anchor, so it always ablates what ships), timed
at the graded shapes by CUDA events in one process beside the intact kernel and cuBLAS:

  base        the solution as shipped (checked bit-identical to the catalog module's output)
  nopromote   the promotion's FFMAs gone (the partial read by an empty fence after its wait)
  noscale     no scale loads (every scale 1.0)
  noepi       no epilogue stores (the accumulators kept alive by a never-true store)
  noload      no TMA loads and no full-barrier waits: the consumers compute on stale shared
              memory, so operand delivery is out and what is left is the consumers' own loop
  noload_nopromote         the tensor work and its per-k-block drain alone
  noload_nopromote_nodrain the tensor work alone, one wait per tile: the issue structure's peak
  noload_noscale           the consumers' loop without any global load

Only base computes the product; the others' outputs are garbage by design. What the differences
say: base - noload = operand delivery not hidden; noload - noload_nopromote = the promotion not
hidden by the other warpgroup; noload_nopromote - ..._nodrain = the drain's own cost. ptxas's
report for every variant (registers, spills, wgmma serialisation warnings) goes to stderr, and
cuobjdump's SASS of base and noload where the device has cuobjdump (the FFMA/QGMMA interleave).

  python3 lab/fp8-blockscale-gemm/abl_probe.py [--out DIR] [--only a,b] [--build-only]
"""
import argparse
import concurrent.futures
import ctypes
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # the catalog modules it loads stay without __pycache__ (kzoo validate refuses one)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SOLUTION = os.path.join(ROOT, "catalog", "solutions", "gpu", "h200", "gemm", "blockscale", "fp8",
                        "fp8_blockscale_gemm_eager", "src")
EAGER = os.path.join(ROOT, "catalog", "kernel_data", "h200", "gemm", "blockscale", "fp8",
                     "fp8_blockscale_gemm_eager", "src")

# (anchor, replacement) pairs; every anchor must occur exactly once in the solution's source.
PATCHES = {
    "nopromote": [("      promote(acc, p0, sc);\n", "      reg_fence(p0);  // abl: no promotion\n")],
    "noscale": [
        ("    float na0 = __ldg(sa0), na1 = __ldg(sa1), nbl = __ldg(sbl), nbh = __ldg(sbh);",
         "    float na0 = 1.f, na1 = 1.f, nbl = 1.f, nbh = 1.f;  // abl: no scale loads\n"
         "    (void)sa0; (void)sa1; (void)sbl; (void)sbh;"),
        ("      if (kb + 1 < nkb) {  // the next block's scales",
         "      if (false) {  // abl: no scale loads"),
    ],
    "noepi": [("    if (tma_store) {\n      // Epilogue through shared memory and TMA",
               "    {  // abl: no epilogue; the sum keeps the promotion alive, the store never happens\n"
               "      float keep = 0.f;\n"
               "#pragma unroll\n"
               "      for (int i = 0; i < NACC; ++i) keep += acc[i];\n"
               "      if (keep == 1.2345e-38f) out[threadIdx.x] = __float2bfloat16_rn(keep);\n"
               "      continue;\n"
               "    }\n"
               "    if (tma_store) {\n      // Epilogue through shared memory and TMA")],
    "noload": [
        ("    if (threadIdx.x != 0) return;\n    uint32_t it = 0;",
         "    return;  // abl: no loads\n    uint32_t it = 0;"),
        ("      mbar_wait(bar_full + 8 * st, ((it + kb) / STAGES) & 1);\n",
         "      // abl: no full-barrier wait\n"),
    ],
    "nodrain": [  # after nopromote: nothing may read a partial in flight (ptxas would serialise)
        ("      reg_fence(p0);  // abl: no promotion\n", ""),
        ("      wg_wait<0>();\n      // The stage's wgmmas are complete",
         "      // abl: no drain per k-block (one at the tile's end)\n      // The stage's wgmmas are complete"),
        ("    it += nkb;\n", "    wg_wait<0>();\n    it += nkb;\n"),
    ],
}
VARIANTS = {
    "base": [],
    "nopromote": ["nopromote"],
    "noscale": ["noscale"],
    "noepi": ["noepi"],
    "noload": ["noload"],
    "noload_nopromote": ["noload", "nopromote"],
    "noload_nopromote_nodrain": ["noload", "nopromote", "nodrain"],
    "noload_noscale": ["noload", "noscale"],
}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def source(variant, text):
    """The solution's source with the variant's patches applied; refuses an anchor that is not
    there exactly once (the solution changed: the probe must follow it, not guess)."""
    for part in VARIANTS[variant]:
        for anchor, repl in PATCHES[part]:
            n = text.count(anchor)
            if n != 1:
                raise SystemExit("abl_probe.py: patch %s of %s: anchor found %d times, not once: %r"
                                 % (part, variant, n, anchor[:60]))
            text = text.replace(anchor, repl)
    return text


def build(variant, text, flags, nvcc, folder):
    """(variant, path of its .so, ptxas's report) for one variant."""
    cu = os.path.join(folder, variant + ".cu")
    with open(cu, "w") as f:
        f.write(text)
    so = os.path.join(folder, variant + ".so")
    run = subprocess.run([nvcc] + flags + ["-Xptxas", "-v", cu, "-o", so], capture_output=True, text=True)
    if run.returncode:
        raise SystemExit("abl_probe.py: %s failed to build:\n%s" % (variant, run.stderr[-3000:]))
    report = [l.strip() for l in run.stderr.splitlines() if "registers" in l or "spill" in l or "warning" in l.lower()]
    return variant, so, report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="folder for abl.jsonl and the SASS")
    ap.add_argument("--only", default="", help="comma-separated variants (default all)")
    ap.add_argument("--build-only", action="store_true", help="build and report ptxas, time nothing")
    args = ap.parse_args()
    names = [v for v in VARIANTS if not args.only or v in args.only.split(",")]
    with open(os.path.join(SOLUTION, "fp8_gemm_sm90.cu")) as f:
        original = f.read()
    bld = _load(os.path.join(SOLUTION, "_build.py"), "_abl_build")
    # The solution's build settings, read from its module's text (importing it needs torch).
    with open(os.path.join(SOLUTION, "fp8_blockscale_gemm.py")) as f:
        settings = dict(re.findall(r"^(PROMOTE|STAGES) = (\d+)", f.read(), re.M))
    if set(settings) != {"PROMOTE", "STAGES"}:
        raise SystemExit("abl_probe.py: the solution's module no longer sets PROMOTE and STAGES: follow it")
    flags = bld.flags(int(settings["PROMOTE"]), int(settings["STAGES"]))
    sol_py = None if args.build_only else _load(os.path.join(SOLUTION, "fp8_blockscale_gemm.py"), "_abl_solution")
    texts = {v: source(v, original) for v in names}  # every anchor checked before any build
    digest = hashlib.sha256(original.encode()).hexdigest()[:12]
    folder = tempfile.mkdtemp(prefix="kzoo-fp8-abl-%s-" % digest)
    libs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for variant, so, report in pool.map(lambda v: build(v, texts[v], flags, bld._nvcc(), folder), names):
            libs[variant] = so
            print("ptxas %s: %s" % (variant, " | ".join(report)), file=sys.stderr, flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        if shutil.which("cuobjdump"):
            for v in ("base", "noload"):
                if v in libs:
                    with open(os.path.join(args.out, "sass_%s.txt" % v), "w") as f:
                        subprocess.run(["cuobjdump", "-sass", libs[v]], stdout=f, stderr=subprocess.STDOUT)
    if args.build_only:
        print(json.dumps({"built": names, "folder": folder}))
        return 0

    import torch
    task = json.load(open(os.path.join(ROOT, "catalog", "tasks", "fp8-blockscale-gemm", "task.json")))
    eager = _load(os.path.join(EAGER, "fp8_blockscale_gemm.py"), "_abl_eager")
    fns = {}
    for v, so in libs.items():
        lib = ctypes.CDLL(so)
        lib.kzoo_fp8_blockscale_gemm.restype = ctypes.c_int
        lib.kzoo_fp8_blockscale_gemm.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 3 + [ctypes.c_void_p]

        def call(A, sa, B, sb, lib=lib):
            M, K = A.shape
            N = B.shape[0]
            out = torch.empty(M, N, dtype=torch.bfloat16, device=A.device)
            rc = lib.kzoo_fp8_blockscale_gemm(A.data_ptr(), sa.data_ptr(), B.data_ptr(), sb.data_ptr(), out.data_ptr(),
                                              M, N, K, torch.cuda.current_stream().cuda_stream)
            if rc:
                raise RuntimeError("launch failed: %d" % rc)
            return out
        fns[v] = call
    fns["cublas"] = eager.fp8_blockscale_gemm
    out = open(os.path.join(args.out, "abl.jsonl"), "w") if args.out else None
    roof = task["workloads"]["synthetic"]["roofline_us"]
    for M, N, K in task["workloads"]["synthetic"]["graded"]:
        g = torch.Generator(device="cuda").manual_seed(M + N + K)
        A = (torch.randn(M, K, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
        B = (torch.randn(N, K, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
        nkb = -(-K // 128)
        sa = torch.pow(2.0, torch.randint(-3, 3, (M, nkb), device="cuda", generator=g).float())
        sb = torch.pow(2.0, torch.randint(-3, 3, (-(-N // 128), nkb), device="cuda", generator=g).float())
        if "base" in fns:
            same = torch.equal(fns["base"](A, sa, B, sb), sol_py.fp8_blockscale_gemm(A, sa, B, sb))
            print(json.dumps({"shape": [M, N, K], "base_equals_solution": same}), flush=True)
        for v, fn in fns.items():
            try:
                for _ in range(3):
                    fn(A, sa, B, sb)
                times = []
                for _ in range(15):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    fn(A, sa, B, sb)
                    e1.record()
                    e1.synchronize()
                    times.append(e0.elapsed_time(e1) * 1e3)
                times.sort()
                rec = {"shape": [M, N, K], "variant": v, "us": round(times[len(times) // 2], 1),
                       "spread_us": round(times[-2] - times[1], 1), "pct_roofline": round(100 * roof / times[len(times) // 2], 1)}
            except Exception as e:  # noqa: BLE001 - a variant that fails is a result
                rec = {"shape": [M, N, K], "variant": v, "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
