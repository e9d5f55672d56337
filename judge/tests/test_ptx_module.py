"""The judge's PTX modules through the CUDA driver (ptx_module.py), and their preloading beside
torch's import (cuda_early.py), against a stand-in for the driver that records its calls: a
module preloaded in a context is not compiled again there, one of another context is, and every
failure is a value."""

import ctypes
import unittest

from kzoo_judge import cuda_early, ptx_module

PTX_A = "// a\n.version 7.0\n"
PTX_B = "// b\n.version 7.0\n"


def _set(arg, value):
    arg._obj.value = value  # what the driver writes through a pointer argument


class FakeDriver:
    """The driver entry points ptx_module and cuda_early call. `ctx`: the calling thread's current
    context (one thread here); `fail`: {entry point: CUresult}."""

    def __init__(self, ctx=0x1000, fail=None):
        self.ctx, self.fail, self.loaded, self.next_module = ctx, dict(fail or {}), [], 0x5000
        self.cuLaunchKernel = lambda *a: 0

    def _rc(self, name):
        return self.fail.get(name, 0)

    def cuInit(self, flags):
        return self._rc("cuInit")

    def cuDeviceGet(self, dev, ordinal):
        _set(dev, ordinal)
        return self._rc("cuDeviceGet")

    def cuDevicePrimaryCtxRetain(self, ctx, dev):
        _set(ctx, 0x2000)
        return self._rc("cuDevicePrimaryCtxRetain")

    def cuCtxSetCurrent(self, ctx):
        self.ctx = ctx.value
        return self._rc("cuCtxSetCurrent")

    def cuCtxGetCurrent(self, ctx):
        _set(ctx, self.ctx)
        return self._rc("cuCtxGetCurrent")

    def cuCtxGetDevice(self, dev):
        _set(dev, 0)
        return self._rc("cuCtxGetDevice") if self.ctx else 201  # CUDA_ERROR_INVALID_CONTEXT

    def cuDeviceGetAttribute(self, value, attr, dev):
        _set(value, 132)
        return self._rc("cuDeviceGetAttribute")

    def cuModuleLoadData(self, module, image):
        rc = self._rc("cuModuleLoadData")
        if rc == 0:
            self.next_module += 1
            self.loaded.append((self.ctx, ctypes.string_at(image)))
            _set(module, self.next_module)
        return rc

    def cuModuleGetFunction(self, fn, module, name):
        _set(fn, 0x9000)
        return self._rc("cuModuleGetFunction")

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fit, fn, threads, smem):
        _set(fit, 6)
        return self._rc("cuOccupancyMaxActiveBlocksPerMultiprocessor")


class Loading(unittest.TestCase):
    def setUp(self):
        ptx_module._LOADED.clear()
        self.addCleanup(ptx_module._LOADED.clear)

    def test_a_module_is_compiled_once_a_load_without_preloading(self):
        lib = FakeDriver()
        for _ in range(2):
            m, why = ptx_module.Module.load(PTX_A, ["k"], 256, 8, lib=lib)
            self.assertIsNone(why)
            self.assertEqual(m.blocks, 132 * 6)  # one wave: the SMs times the blocks that fit
        self.assertEqual(len(lib.loaded), 2)

    def test_a_preloaded_module_is_not_compiled_again_in_its_context(self):
        lib = FakeDriver()
        self.assertIsNone(ptx_module.preload(PTX_A, lib))
        m, why = ptx_module.Module.load(PTX_A, ["k"], 256, 4, lib=lib)
        self.assertIsNone(why)
        self.assertEqual(m.blocks, 132 * 4)
        self.assertEqual(len(lib.loaded), 1)
        # another PTX is compiled at its load
        ptx_module.Module.load(PTX_B, ["k"], 256, 4, lib=lib)
        self.assertEqual([img for _, img in lib.loaded], [PTX_A.encode(), PTX_B.encode()])

    def test_a_module_preloaded_in_another_context_is_compiled_again(self):
        lib = FakeDriver(ctx=0x1000)
        ptx_module.preload(PTX_A, lib)
        lib.ctx = 0x3000
        self.assertIsNone(ptx_module.Module.load(PTX_A, ["k"], 256, 4, lib=lib)[1])
        self.assertEqual([ctx for ctx, _ in lib.loaded], [0x1000, 0x3000])

    def test_failures_are_values(self):
        self.assertEqual(ptx_module.preload(PTX_A, FakeDriver(ctx=0)), "no current CUDA context")
        self.assertEqual(ptx_module._LOADED, {})
        self.assertEqual(ptx_module.preload(PTX_A, FakeDriver(fail={"cuModuleLoadData": 218})),
                         "the PTX did not load (CUresult 218)")
        for name, rc, said in (("cuModuleLoadData", 218, "the PTX did not load (CUresult 218)"),
                               ("cuModuleGetFunction", 500, "cuModuleGetFunction(k) failed (CUresult 500)"),
                               ("cuDeviceGetAttribute", 1, "cuDeviceGetAttribute failed (CUresult 1)")):
            m, why = ptx_module.Module.load(PTX_A, ["k"], 256, 4, lib=FakeDriver(fail={name: rc}))
            self.assertIsNone(m)
            self.assertEqual(why, said)
        m, why = ptx_module.Module.load(PTX_A, ["k"], 256, 4, lib=FakeDriver(ctx=0))
        self.assertIn("no current CUDA context", why)


class Early(unittest.TestCase):
    def setUp(self):
        ptx_module._LOADED.clear()
        self.addCleanup(ptx_module._LOADED.clear)

    def test_the_thread_makes_the_primary_context_current_and_preloads_there(self):
        lib = FakeDriver(ctx=0)
        self.assertIsNone(cuda_early.Early(preload=(PTX_A, PTX_B), lib=lib).join())
        self.assertEqual(lib.loaded, [(0x2000, PTX_A.encode()), (0x2000, PTX_B.encode())])
        # the judge's first use in that context compiles nothing more
        ptx_module.Module.load(PTX_B, ["k"], 256, 4, lib=lib)
        self.assertEqual(len(lib.loaded), 2)

    def test_its_failures_are_values(self):
        for name, said in (("cuInit", "cuInit failed (CUresult 100)"),
                           ("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain failed (CUresult 100)"),
                           ("cuCtxSetCurrent", "cuCtxSetCurrent failed (CUresult 100)"),
                           ("cuModuleLoadData", "a module was not preloaded: the PTX did not load (CUresult 100)")):
            self.assertEqual(cuda_early.Early(preload=(PTX_A,), lib=FakeDriver(fail={name: 100})).join(), said)


if __name__ == "__main__":
    unittest.main()
