# Builds (or loads, when built already) fp8_gemm_sm90.cu as a plain shared library for ctypes.
#
# Why not a torch extension: torch's headers triple the compile time (the judge's builds have a
# budget) and the kernel needs none of them; the launcher takes raw pointers, sizes and the
# stream. cudart is linked statically (nvcc's default), the driver's tensor-map encoder is found
# at run time (cudaGetDriverEntryPointByVersion), so the library needs no -lcuda and no
# particular libcudart next to torch. The product goes where silu_and_mul's _ext.py puts its
# own: TORCH_EXTENSIONS_DIR (the runner points it into the run's workdir) or the user's torch
# extension cache, in a folder named by a digest of the source and flags, renamed into place.
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fp8_gemm_sm90.cu")
NAME = "kzoo_fp8_blockscale_gemm"


def _nvcc():
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    try:
        from torch.utils.cpp_extension import CUDA_HOME
        if CUDA_HOME and os.path.exists(os.path.join(CUDA_HOME, "bin", "nvcc")):
            return os.path.join(CUDA_HOME, "bin", "nvcc")
    except Exception:  # noqa: BLE001 - torch without cpp_extension's CUDA lookup: PATH next
        pass
    return shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def flags(promote, stages):
    return ["-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-lineinfo", "-shared",
            "-Xcompiler", "-fPIC", "-DKZOO_PROMOTE=%d" % promote, "-DKZOO_STAGES=%d" % stages]


def load(promote, stages):
    """The built library, its entry points typed."""
    fl = flags(promote, stages)
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read() + " ".join(fl).encode()).hexdigest()[:16]
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions")
    out_dir = os.path.join(root, "%s_%s" % (NAME, digest))
    so = os.path.join(out_dir, NAME + ".so")
    if not os.path.exists(so):
        os.makedirs(out_dir, exist_ok=True)
        tmp = "%s.%d.tmp" % (so, os.getpid())
        subprocess.run([_nvcc()] + fl + [SOURCE, "-o", tmp], check=True, stdout=sys.stderr)
        os.replace(tmp, so)
    lib = ctypes.CDLL(so)
    lib.kzoo_fp8_blockscale_gemm.restype = ctypes.c_int
    lib.kzoo_fp8_blockscale_gemm.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    return lib
