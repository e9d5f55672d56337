"""The CUDA driver and the device's primary context brought up in a thread while torch imports.

A warm judge's start on an H200 was `import torch` 3.2-4.3 s, then cuInit 0.20-0.24 s and the
context 0.11-0.16 s one after the other (docs/PERF.md, session 27). The driver's half needs no
torch: a thread makes the primary context of the process's first visible device through the
driver (ctypes releases the GIL for the call) while the main thread imports torch; torch's own
init then finds that context retained and takes it.

The thread then loads the judge's own PTX modules in that context (`preload`: the fused
comparison's and the fused draw's), so that the driver's compilation of them for the device
(~0.1-0.2 s each) is done beside the import too, not at their first use on the judge's clock
(ptx_module.py keeps them).

Every failure is a value: the thread's `why`, and torch.cuda.init() then does the work itself,
as it did before (and a module not preloaded is loaded at its first use).
"""
import ctypes
import threading

from . import ptx_module


class Early:
    def __init__(self, preload=(), lib=None):
        self.why = None
        self._preload, self._lib = tuple(preload), lib  # lib: a stand-in for the driver in the tests
        self._thread = threading.Thread(target=self._run, name="kzoo-cuda-early", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            lib = self._lib or ctypes.CDLL("libcuda.so.1")
            rc = lib.cuInit(0)
            if rc:
                self.why = "cuInit failed (CUresult %d)" % rc
                return
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            rc = lib.cuDeviceGet(ctypes.byref(dev), 0)
            if rc:
                self.why = "cuDeviceGet failed (CUresult %d)" % rc
                return
            # Retained once more than torch retains it: the context lives as long as the process.
            rc = lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
            if rc:
                self.why = "cuDevicePrimaryCtxRetain failed (CUresult %d)" % rc
                return
            if self._preload:
                rc = lib.cuCtxSetCurrent(ctx)
                if rc:
                    self.why = "cuCtxSetCurrent failed (CUresult %d)" % rc
                    return
                for ptx in self._preload:
                    why = ptx_module.preload(ptx, lib)
                    if why:
                        self.why = "a module was not preloaded: %s" % why
                        return
        except (OSError, AttributeError) as e:
            self.why = "no CUDA driver to start early (%s)" % e

    def join(self):
        """Waits for the thread; its failure or None."""
        self._thread.join()
        return self.why
