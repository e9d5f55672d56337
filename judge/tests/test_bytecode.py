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

    def test_checked_hash_bytecode_is_current_until_the_source_changes(self):
        py_compile.compile(self.src, cfile=importlib.util.cache_from_source(self.src), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        self.assertEqual(bytecode.state(module_at(self.src)), "current")
        with open(self.src, "w") as f:
            f.write("X = 2\n")  # same size; its time may be the same second
        self.assertEqual(bytecode.state(module_at(self.src)), "stale")

    def test_a_module_without_python_source(self):
        self.assertEqual(bytecode.state(types.ModuleType("builtin_like")), "no source")
        self.assertEqual(bytecode.state(module_at(self.src[:-3] + ".so")), "no source")


class CopyBeside(unittest.TestCase):
    """What sits compiled beside its source goes where Python looks once the prefix is set."""

    def test_copies_this_interpreters_bytecode_once_and_nothing_else(self):
        import sys
        with tempfile.TemporaryDirectory() as tree, tempfile.TemporaryDirectory() as prefix:
            pkg = os.path.join(tree, "pkg")
            os.makedirs(pkg)
            for name in ("a", "b"):
                with open(os.path.join(pkg, name + ".py"), "w") as f:
                    f.write("X = 1\n")
            py_compile.compile(os.path.join(pkg, "a.py"), cfile=importlib.util.cache_from_source(os.path.join(pkg, "a.py")),
                               doraise=True)
            cache = os.path.join(pkg, "__pycache__")
            open(os.path.join(cache, "b.cpython-00.pyc"), "wb").close()  # another interpreter's
            open(os.path.join(cache, "b.%s.opt-1.pyc" % sys.implementation.cache_tag), "wb").close()  # -O's
            open(os.path.join(cache, "gone.%s.pyc" % sys.implementation.cache_tag), "wb").close()  # no source
            before = sys.pycache_prefix
            sys.pycache_prefix = prefix
            try:
                self.assertEqual(bytecode.copy_beside([tree]), 1)
                self.assertEqual(bytecode.state(module_at(os.path.join(pkg, "a.py"))), "current")
                self.assertEqual(bytecode.state(module_at(os.path.join(pkg, "b.py"))), "none")
                self.assertEqual(bytecode.copy_beside([tree]), 0)  # there already
                # The source and its bytecode beside it changed (a package upgraded): copied again.
                with open(os.path.join(pkg, "a.py"), "w") as f:
                    f.write("X = 22\n")
                later = time.time() + 5
                os.utime(os.path.join(pkg, "a.py"), (later, later))
                py_compile.compile(os.path.join(pkg, "a.py"), cfile=os.path.join(cache, "a.%s.pyc" % sys.implementation.cache_tag),
                                   doraise=True)
                self.assertEqual(bytecode.state(module_at(os.path.join(pkg, "a.py"))), "stale")
                self.assertEqual(bytecode.copy_beside([tree]), 1)
                self.assertEqual(bytecode.state(module_at(os.path.join(pkg, "a.py"))), "current")
            finally:
                sys.pycache_prefix = before


class CompilePackages(unittest.TestCase):
    """A package without bytecode anywhere (torch in the H200's venv) is compiled whole into the prefix."""

    def test_every_module_is_compiled_where_python_looks_now_and_none_beside_it(self):
        import sys
        with tempfile.TemporaryDirectory() as tree, tempfile.TemporaryDirectory() as prefix:
            pkg = os.path.join(tree, "pkg")
            os.makedirs(os.path.join(pkg, "deep"))
            for rel in ("__init__.py", "lazy.py", "deep/__init__.py", "deep/inner.py"):
                with open(os.path.join(pkg, rel), "w") as f:
                    f.write("X = 1\n")
            with open(os.path.join(pkg, "broken.py"), "w") as f:
                f.write("def (:\n")  # left to fail where it is imported
            before = sys.pycache_prefix
            sys.pycache_prefix = prefix
            try:
                bytecode.compile_packages([pkg])
                for rel in ("__init__.py", "lazy.py", "deep/__init__.py", "deep/inner.py"):
                    self.assertEqual(bytecode.state(module_at(os.path.join(pkg, rel))), "current", rel)
                self.assertEqual(bytecode.state(module_at(os.path.join(pkg, "broken.py"))), "none")
            finally:
                sys.pycache_prefix = before
            self.assertFalse(os.path.exists(os.path.join(pkg, "__pycache__")))


if __name__ == "__main__":
    unittest.main()
