# Builds (or, when it is built already, loads) this package's CUDA extension.
#
# The torch C++/CUDA extension machinery (torch.utils.cpp_extension.load: nvcc and
# ninja) when ninja is installed; otherwise the same two sources compiled and
# linked by one nvcc command against torch's headers and libraries. Either way the
# products go to TORCH_EXTENSIONS_DIR, which the runner points into the run's
# workdir (W/.kzoo/run/cache): what is built belongs to this run, never to the
# package. build.py calls load() in the build step; the module calls it again at
# import, which then only loads what was built.
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig

NAME = "kzoo_rmsnorm_residual_cuda1_ext"
SOURCES = ["rmsnorm_residual_binding.cpp", "rmsnorm_residual_kernel.cu"]
HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = "9.0"


def _paths():
    return [os.path.join(HERE, s) for s in SOURCES]


def _with_ninja():
    from torch.utils.cpp_extension import load as build
    return build(name=NAME, sources=_paths(), extra_cflags=["-O3"], extra_cuda_cflags=["-O3", "-lineinfo"], verbose=False)


def _cuda_home():
    from torch.utils.cpp_extension import CUDA_HOME
    return CUDA_HOME or os.path.dirname(os.path.dirname(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"))


def _with_nvcc():
    import torch
    from torch.utils import cpp_extension as ce
    try:
        includes = ce.include_paths(device_type="cuda")
    except TypeError:  # torch before 2.6
        includes = ce.include_paths(cuda=True)
    try:
        libdirs = ce.library_paths(device_type="cuda")
    except TypeError:
        libdirs = ce.library_paths(cuda=True)
    srcs = _paths()
    digest = hashlib.sha256(b"".join(open(p, "rb").read() for p in srcs) + torch.__version__.encode()).hexdigest()[:16]
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions")
    out_dir = os.path.join(root, NAME + "_nvcc_" + digest)
    so = os.path.join(out_dir, NAME + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.exists(so):
        os.makedirs(out_dir, exist_ok=True)
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        cmd = [os.path.join(_cuda_home(), "bin", "nvcc"), "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
               "-gencode=arch=compute_90,code=sm_90", "-DTORCH_EXTENSION_NAME=" + NAME, "-DTORCH_API_INCLUDE_EXTENSION_H",
               "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-I" + sysconfig.get_paths()["include"]]
        cmd += ["-I" + p for p in includes] + ["-L" + p for p in libdirs] + ["-Xlinker", "-rpath=" + ":".join(libdirs)]
        cmd += srcs + ["-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-ltorch_python", "-lcudart",
                       "-o", so + ".tmp"]
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        os.replace(so + ".tmp", so)
    spec = importlib.util.spec_from_file_location(NAME, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load():
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", ARCH)
    import torch  # noqa: F401 - the extension's libraries come with it
    from torch.utils.cpp_extension import is_ninja_available
    return _with_ninja() if is_ninja_available() else _with_nvcc()
