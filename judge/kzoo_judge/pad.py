"""The launch pad that holds the whole device (GPU; docs/JUDGE.md, "The launch pad").

Before each timed call's start event the child keeps the device busy, so that the host's
launch of the call overlaps that wait instead of opening the window on an idle device.
`torch.cuda._sleep` did it with one thread: kernels a call put on a side stream of its own
ran on the other SMs beside it, before the start event and in no window (H200, 2026-12-02:
`test_exploits.GpuTricks.test_side_stream` timed such a call at under 0.9x the honest one
with a 1000 us pad). This pad is a kernel whose blocks take every thread slot of every SM
for its length, so nothing else can start on the device until it ends: a side stream's
kernels then begin with the call's own, inside the window whose device end
(timing.window_ns) counts them.

The kernel is PTX loaded through the CUDA driver (ctypes: no compiler in the sandbox, no
Triton for the eager packages), launched on the caller's stream. Every failure is a value:
the child then times without a pad, which can only read high (the launch inside the window).
"""
import ctypes

# Spins until its own start + ns on the global timer; nanosleep keeps 2048 threads an SM
# from hammering the issue slots (and the power budget) while they wait.
PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry kzoo_pad(.param .u64 kzoo_pad_ns)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [kzoo_pad_ns];
    mov.u64 %rd2, %globaltimer;
    add.s64 %rd3, %rd2, %rd1;
$Lspin:
    nanosleep.u32 256;
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p1, %rd4, %rd3;
    @%p1 bra $Lspin;
    ret;
}

.visible .entry kzoo_mark()
{
    ret;
}
"""

# The kernels' names as the device's activity records give them (spans.py).
PAD_NAME = "kzoo_pad"
MARK_NAME = "kzoo_mark"

BLOCK_THREADS = 1024
_ATTR_MULTIPROCESSOR_COUNT = 16  # CUdevice_attribute
_ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39


def grid(sm_count, threads_per_sm, blocks_per_sm, block_threads=BLOCK_THREADS):
    """Blocks to launch so that every SM's thread slots are all taken, or None when the
    kernel's occupancy leaves room for another kernel's warps beside it (then it would not
    hold the device, and a pad that does not is worse than none: it hides work)."""
    if sm_count < 1 or blocks_per_sm < 1 or blocks_per_sm * block_threads < threads_per_sm:
        return None
    return sm_count * blocks_per_sm


class ExclusivePad:
    """One loaded pad kernel for the current CUDA context. `load()` -> (pad, None) or
    (None, why), called once that context exists (the child's setup, after its first
    allocation); `launch(us, stream)` -> None or why it failed."""

    def __init__(self, lib, fn, blocks, keep, mark):
        self._lib, self._fn, self.blocks, self._mark = lib, fn, blocks, mark
        self._keep = keep  # the module handle and the PTX buffer stay alive with the function

    @classmethod
    def load(cls):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            return None, "no CUDA driver library (%s)" % e
        try:
            dev = ctypes.c_int()
            rc = lib.cuCtxGetDevice(ctypes.byref(dev))
            if rc:
                return None, "cuCtxGetDevice failed (CUresult %d): no current CUDA context" % rc
            sms, per_sm = ctypes.c_int(), ctypes.c_int()
            for out, attr in ((sms, _ATTR_MULTIPROCESSOR_COUNT), (per_sm, _ATTR_MAX_THREADS_PER_MULTIPROCESSOR)):
                rc = lib.cuDeviceGetAttribute(ctypes.byref(out), attr, dev)
                if rc:
                    return None, "cuDeviceGetAttribute(%d) failed (CUresult %d)" % (attr, rc)
            image = ctypes.create_string_buffer(PTX.encode())
            module, fn = ctypes.c_void_p(), ctypes.c_void_p()
            rc = lib.cuModuleLoadData(ctypes.byref(module), image)
            if rc:
                return None, "the pad's PTX did not load (CUresult %d)" % rc
            rc = lib.cuModuleGetFunction(ctypes.byref(fn), module, PAD_NAME.encode())
            if rc:
                return None, "cuModuleGetFunction failed (CUresult %d)" % rc
            mark = ctypes.c_void_p()
            rc = lib.cuModuleGetFunction(ctypes.byref(mark), module, MARK_NAME.encode())
            if rc:
                return None, "cuModuleGetFunction of the mark failed (CUresult %d)" % rc
            per_block = ctypes.c_int()
            rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_block), fn,
                                                                 ctypes.c_int(BLOCK_THREADS), ctypes.c_size_t(0))
            if rc:
                return None, "cuOccupancyMaxActiveBlocksPerMultiprocessor failed (CUresult %d)" % rc
            blocks = grid(sms.value, per_sm.value, per_block.value)
            if blocks is None:
                return None, ("the pad cannot hold every thread slot (%d blocks of %d threads an SM, %d slots)"
                              % (per_block.value, BLOCK_THREADS, per_sm.value))
        except AttributeError as e:  # a driver without one of these entry points
            return None, "the CUDA driver lacks %s" % e
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        return cls(lib, fn, blocks, (module, image), mark), None

    def launch(self, us, stream):
        """The pad for `us` microseconds on `stream` (a CUstream handle, 0 for the default)."""
        ns = ctypes.c_uint64(int(us * 1000))
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(ns), ctypes.c_void_p))
        rc = self._lib.cuLaunchKernel(self._fn, self.blocks, 1, 1, BLOCK_THREADS, 1, 1, 0,
                                      ctypes.c_void_p(stream or None), params, None)
        return None if rc == 0 else "cuLaunchKernel of the pad failed (CUresult %d)" % rc

    def mark(self, stream):
        """A one-warp kernel that does nothing on `stream`: launched after a timed call's device
        sync, it closes the call's stretch of the device's activity records, which the pad before
        the call opened (spans.py)."""
        rc = self._lib.cuLaunchKernel(self._mark, 1, 1, 1, 32, 1, 1, 0, ctypes.c_void_p(stream or None), None, None)
        return None if rc == 0 else "cuLaunchKernel of the mark failed (CUresult %d)" % rc
