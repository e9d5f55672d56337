"""A PTX module of the judge's own (compare_ptx.py, draw_ptx.py) loaded in the current CUDA
context through the driver with ctypes, and its kernels launched on torch's current stream.

No compiler in the sandbox: the PTX was made by scripts/gen_ptx.sh, and the driver compiles it
for the device it loads on. Every failure is a value (None, why), so that the caller can take its
torch path instead. The grid is one wave (the SMs times the blocks of `threads` that fit on one,
at most `blocks_per_sm`): the kernels walk their elements grid-stride, so blocks beyond what the
SMs hold at once would run after the others, not beside them.
"""
import ctypes
import hashlib
import threading

_ATTR_MULTIPROCESSOR_COUNT = 16  # CUdevice_attribute

# Modules already loaded (preload()), by the SHA-256 of their PTX: (context, module handle, the
# PTX buffer). The driver compiles PTX for the device as it loads it (the JIT: ~0.1-0.2 s a module
# on the H200, on the judge's clock at its first use); a warm judge loads its modules beside
# torch's import instead (cuda_early.py).
_LOADED = {}
_LOCK = threading.Lock()


def _driver():
    try:
        return ctypes.CDLL("libcuda.so.1"), None
    except OSError as e:
        return None, "no CUDA driver library (%s)" % e


def _current_context(lib):
    ctx = ctypes.c_void_p()
    rc = lib.cuCtxGetCurrent(ctypes.byref(ctx))
    return ctx.value if rc == 0 else None


def _load_data(lib, ptx):
    """((module handle, the PTX buffer), None) of `ptx` loaded (compiled) in the current context,
    or (None, why)."""
    image = ctypes.create_string_buffer(ptx.encode())
    module = ctypes.c_void_p()
    rc = lib.cuModuleLoadData(ctypes.byref(module), image)
    if rc:
        return None, "the PTX did not load (CUresult %d)" % rc
    return (module, image), None


def preload(ptx, lib=None):
    """Loads `ptx` in the calling thread's current context ahead of Module.load: None, or why not."""
    if lib is None:
        lib, why = _driver()
        if lib is None:
            return why
    try:
        ctx = _current_context(lib)
        if not ctx:
            return "no current CUDA context"
        keep, why = _load_data(lib, ptx)
        if keep is None:
            return why
    except AttributeError as e:
        return "the CUDA driver lacks %s" % e
    with _LOCK:
        _LOADED[hashlib.sha256(ptx.encode()).hexdigest()] = (ctx,) + keep
    return None


def _module_for(lib, ptx):
    """(module handle, buffer) of `ptx` in the current context: preloaded, or loaded now."""
    with _LOCK:
        hit = _LOADED.get(hashlib.sha256(ptx.encode()).hexdigest())
    if hit is not None and hit[0] == _current_context(lib):
        return hit[1:], None
    return _load_data(lib, ptx)


class Module:
    """The loaded kernels (`fns`, by name) and their one-wave grid (`blocks`, of THREADS each)."""

    def __init__(self, lib, fns, blocks, threads, keep):
        self._lib, self.fns, self.blocks, self.threads = lib, fns, blocks, threads
        self._keep = keep  # the module handle and the PTX buffer stay alive with the functions

    @classmethod
    def load(cls, ptx, names, threads, blocks_per_sm, lib=None):
        """(Module, None), or (None, why). `lib` stands in for the driver in the tests."""
        if lib is None:
            lib, why = _driver()
            if lib is None:
                return None, why
        try:
            dev, sms = ctypes.c_int(), ctypes.c_int()
            rc = lib.cuCtxGetDevice(ctypes.byref(dev))
            if rc:
                return None, "cuCtxGetDevice failed (CUresult %d): no current CUDA context" % rc
            rc = lib.cuDeviceGetAttribute(ctypes.byref(sms), _ATTR_MULTIPROCESSOR_COUNT, dev)
            if rc:
                return None, "cuDeviceGetAttribute failed (CUresult %d)" % rc
            keep, why = _module_for(lib, ptx)
            if keep is None:
                return None, why
            module = keep[0]
            fns = {}
            per_sm = blocks_per_sm
            for name in names:
                fns[name] = ctypes.c_void_p()
                rc = lib.cuModuleGetFunction(ctypes.byref(fns[name]), module, name.encode())
                if rc:
                    return None, "cuModuleGetFunction(%s) failed (CUresult %d)" % (name, rc)
                fit = ctypes.c_int()
                rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(fit), fns[name], ctypes.c_int(threads),
                                                                     ctypes.c_size_t(0))
                if rc:
                    return None, "cuOccupancyMaxActiveBlocksPerMultiprocessor failed (CUresult %d)" % rc
                per_sm = min(per_sm, fit.value)
            if per_sm < 1:
                return None, "the kernels fit no block of %d threads on an SM" % threads
        except AttributeError as e:  # a driver without one of these entry points
            return None, "the CUDA driver lacks %s" % e
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        return cls(lib, fns, max(1, sms.value) * per_sm, threads, keep), None

    def launch(self, name, args, device):
        """Launches kernel `name` over the one-wave grid on `device`'s current stream, with `args`
        (ctypes values, in the kernel's parameter order). None, or why it failed."""
        import torch  # not at the top: cuda_early's thread preloads through this module beside torch's import
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = self._lib.cuLaunchKernel(self.fns[name], self.blocks, 1, 1, self.threads, 1, 1, 0,
                                      ctypes.c_void_p(stream or None), params, None)
        return "cuLaunchKernel(%s) failed (CUresult %d)" % (name, rc) if rc else None
