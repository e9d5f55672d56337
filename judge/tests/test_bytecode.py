"""bytecode.state: what the judge's startup line says of torch's compiled modules."""
import importlib.util
import os
import py_compile
import tempfile
import time
import types
import unittest

from kzoo_judge import bytecode


def module_at(path):
    m = types.ModuleType("probe")
    m.__file__ = path
    return m


class State(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.dir.name, "probe.py")
        with open(self.src, "w") as f:
            f.write("X = 1\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_none_until_compiled_then_current(self):
        self.assertEqual(bytecode.state(module_at(self.src)), "none")
        py_compile.compile(self.src, cfile=importlib.util.cache_from_source(self.src), doraise=True)
        self.assertEqual(bytecode.state(module_at(self.src)), "current")

    def test_stale_once_the_source_changes(self):
        py_compile.compile(self.src, cfile=importlib.util.cache_from_source(self.src), doraise=True)
        with open(self.src, "a") as f:
            f.write("Y = 2\n")
        later = time.time() + 5
        os.utime(self.src, (later, later))
        self.assertEqual(bytecode.state(module_at(self.src)), "stale")

    def test_a_file_that_is_not_bytecode_is_stale(self):
        pyc = importlib.util.cache_from_source(self.src)
        os.makedirs(os.path.dirname(pyc))
        with open(pyc, "wb") as f:
            f.write(b"not python bytecode at all")
        self.assertEqual(bytecode.state(module_at(self.src)), "stale")

    def test_hash_based_bytecode_is_current(self):
        py_compile.compile(self.src, cfile=importlib.util.cache_from_source(self.src), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        self.assertEqual(bytecode.state(module_at(self.src)), "current")

    def test_a_module_without_python_source(self):
        self.assertEqual(bytecode.state(types.ModuleType("builtin_like")), "no source")
        self.assertEqual(bytecode.state(module_at(self.src[:-3] + ".so")), "no source")


if __name__ == "__main__":
    unittest.main()
