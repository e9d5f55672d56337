# Builds (or loads, when built already) fa3_sm90.cu as a plain shared library for ctypes, the
# fp8 block-scale GEMM solution's recipe: no torch headers (compile time), cudart static, the
# driver's tensor-map encoder found at run time (no -lcuda); the product goes to
# TORCH_EXTENSIONS_DIR (or the user's torch extension cache) in a folder named by a digest of
# the source and flags, renamed into place.
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fa3_sm90.cu")
NAME = "kzoo_fa3_prefill"


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


def flags(stages128, stages64, pingpong):
    return ["-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-lineinfo", "-shared",
            "-Xcompiler", "-fPIC", "-DKZOO_STAGES128=%d" % stages128, "-DKZOO_STAGES64=%d" % stages64,
            "-DKZOO_PINGPONG=%d" % pingpong]


def load(stages128, stages64, pingpong):
    """The built library, its entry points typed."""
    fl = flags(stages128, stages64, pingpong)
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
    lib.kzoo_fa3_prefill.restype = ctypes.c_int
    lib.kzoo_fa3_prefill.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4 + [ctypes.c_void_p]
    return lib
