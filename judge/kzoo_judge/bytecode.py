"""The runner's bytecode cache: compiled modules for the judge's interpreter, kept by kzoo.

Why: an interpreter whose site-packages hold no bytecode (a venv made by a tool that skips
compiling, such as uv's default, or one read-only since it was made) compiles every module
`import torch` loads (torch 2.11 has 2141 under torch/) at every start: on the H200 runner that
was 2.9-4.3 s of each judge's and each child's start (on the Debian VM, torch 1.13: 1.4-1.5 s
compiling against 0.6-0.7 s loading bytecode, docs/PERF.md). The sandbox binds the interpreter
read-only and sets PYTHONDONTWRITEBYTECODE, so no run could ever keep what it compiled. kzoo
keeps it instead, outside the sandbox: the runner (src/kzoo/runner/bytecode_cache.cpp) runs
this file once per interpreter, torch and judge, trusted and unsandboxed, with `-I -X
pycache_prefix=DIR`, then binds DIR read-only into every sandbox with PYTHONPYCACHEPREFIX=DIR.
Python checks each cached file against its source's mtime and size (the judge's own: its hash)
at every import, so a stale entry is compiled again, never trusted.

    python3 -I -X pycache_prefix=DIR bytecode.py STAMP JUDGE_DIR JUDGE_INSIDE

imports what a judge and its children import (torch, the judge's modules, triton and numpy
where present: Python writes their bytecode under DIR as it goes); copies in the bytecode that
already sits beside the sources on the interpreter's path (with the prefix set,
Python looks nowhere else: a Debian module imported later, lazily, would otherwise be compiled
at every start where it was not before); compiles the rest of those packages (torch._dynamo
and torch._inductor, which a torch.compile'd submission imports, among them); compiles the
judge's own sources for the path the sandbox shows them at (JUDGE_INSIDE); and writes STAMP, a
JSON file of the files whose change makes the runner warm the cache again: [path, mtime_ns,
size] each. Nothing here runs inside the sandbox; the judge only reads `state()`.
"""
import importlib.util
import json
import os
import sys
import time

# What a judge and its children import beyond the judge's own modules; the first must load.
NEEDED = ("torch",)
OPTIONAL = ("torch.multiprocessing.reductions", "torch.profiler", "numpy", "triton", "triton.language",
            # what a Triton submission's first launch imports (its compiler, the CUDA backend)
            "triton.compiler", "triton.backends.nvidia.compiler", "triton.backends.nvidia.driver")
# Where the stamp's checks come from: the interpreter itself and the top of each package above.
STAMPED = ("torch", "numpy", "triton")


def state(module):
    """Whether `module` (a loaded module) has bytecode Python can use where it looks now:
    "current", "stale" (compiled from an older source), "none", or "no source"."""
    src = getattr(module, "__file__", None)
    if not src or not src.endswith(".py"):
        return "no source"
    try:
        pyc = importlib.util.cache_from_source(src)
        st = os.stat(src)
        with open(pyc, "rb") as f:
            head = f.read(16)
    except (OSError, ValueError, NotImplementedError):
        return "none"
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return "stale"
    flags = int.from_bytes(head[4:8], "little")
    if flags & 1:  # hash-based: Python checks the source's hash (flag 2) or nothing, not its time
        if not flags & 2:
            return "current"
        with open(src, "rb") as f:
            return "current" if importlib.util.source_hash(f.read()) == head[8:16] else "stale"
    mtime, size = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return "current" if mtime == (int(st.st_mtime) & 0xFFFFFFFF) and size == (st.st_size & 0xFFFFFFFF) else "stale"


def _check(path):
    st = os.stat(path)
    return [path, st.st_mtime_ns, st.st_size]


def _judge_sources(judge_dir):
    pkg = os.path.join(judge_dir, "kzoo_judge")
    return sorted(os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith(".py"))


def copy_beside(roots):
    """Copies each `__pycache__/NAME.TAG.pyc` under `roots` (this interpreter's tag, no
    optimisation level) to where Python looks for NAME.py's bytecode now (the prefix), unless
    the same bytecode is there already (the same file, or the same header: magic, flags and the
    source's mtime and size or hash); Python still checks each against its source. Returns how
    many it copied."""
    import shutil
    tag, n = sys.implementation.cache_tag, 0
    for root in roots:
        for d, _, files in os.walk(root):
            if os.path.basename(d) != "__pycache__":
                continue
            for f in files:
                parts = f.split(".")
                if len(parts) != 3 or parts[1] != tag or parts[2] != "pyc":
                    continue
                src = os.path.join(os.path.dirname(d), parts[0] + ".py")
                dst = importlib.util.cache_from_source(src)
                have = os.path.join(d, f)
                if not os.path.isfile(src) or _same_bytecode(have, dst):
                    continue
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                tmp = "%s.%d.tmp" % (dst, os.getpid())
                try:
                    os.link(have, tmp)  # no second copy on disk where the filesystem allows
                except OSError:
                    shutil.copyfile(have, tmp)
                os.replace(tmp, dst)
                n += 1
    return n


def _same_bytecode(a, b):
    try:
        if os.path.samefile(a, b):
            return True
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read(16) == fb.read(16)
    except OSError:
        return False


def compile_packages(dirs):
    """Every module under `dirs` compiled to where Python looks now (the prefix), on all CPUs (one
    where no process pool starts); one this Python cannot compile is left to fail where it is
    imported, if ever."""
    import compileall
    for d in dirs:
        try:
            compileall.compile_dir(d, quiet=2, workers=0)
        except (OSError, ImportError, NotImplementedError):  # no process pool here (no /dev/shm)
            compileall.compile_dir(d, quiet=2, workers=1)


def _package_dirs(names):
    dirs = []
    for name in names:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None) and os.path.basename(mod.__file__) == "__init__.py":
            dirs.append(os.path.dirname(mod.__file__))
    return dirs


def warm(stamp, judge_dir, judge_inside):
    if sys.pycache_prefix is None:
        raise SystemExit("bytecode.py: run it with -X pycache_prefix=DIR (the cache to fill)")
    import py_compile
    # Readable by the sandbox's uid (run as root, kzoo drops it to another): folders 755, files
    # as their sources' modes, whatever umask kzoo was started under.
    os.umask(0o022)
    t0 = time.monotonic()
    for name in NEEDED:
        __import__(name)
    loaded = list(NEEDED)
    for name in OPTIONAL:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - absent or broken here: the children compile it as before
            pass
    # What sits compiled beside the sources already, then the rest of the packages compiled.
    packages = _package_dirs(STAMPED)
    # Every folder modules are found in (-I leaves the working directory out of sys.path).
    copied = copy_beside(sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}))
    compile_packages(packages)
    # The judge's modules, imported from here so that whatever they import is cached too, then
    # compiled again for the path the sandbox shows them at (only that copy is ever read).
    sys.path.insert(0, judge_dir)
    for src in _judge_sources(judge_dir):
        name = os.path.basename(src)[:-3]
        if name in ("__main__", "bytecode"):
            continue
        try:
            __import__("kzoo_judge." + name)
        except Exception:  # noqa: BLE001 - one that needs the sandbox: its own imports are the loss
            pass
    # Checked by the source's hash, not its mtime and size: every judge a cache serves is shown at
    # the same path, and two checkouts of it can share both (one character changed, the same second).
    for src in _judge_sources(judge_dir):
        inside = os.path.join(judge_inside, "kzoo_judge", os.path.basename(src))
        py_compile.compile(src, cfile=importlib.util.cache_from_source(inside), dfile=inside, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    checks = [_check(os.path.realpath(sys.executable))]
    for name in STAMPED:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            checks.append(_check(mod.__file__))
    checks += [_check(src) for src in _judge_sources(judge_dir)]
    doc = {"version": 1, "python": sys.executable, "cache_tag": sys.implementation.cache_tag,
           "prefix": sys.pycache_prefix, "imported": loaded, "copied": copied, "compiled": packages,
           "seconds": round(time.monotonic() - t0, 2), "checks": checks}
    tmp = "%s.%d.tmp" % (stamp, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, stamp)
    print("bytecode: %s in %.1f s (imported %s; %d files copied from beside their sources; compiled %s)"
          % (sys.pycache_prefix, doc["seconds"], ", ".join(loaded), copied,
             ", ".join(os.path.basename(d) for d in packages) or "nothing more"))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit("usage: python3 -I -X pycache_prefix=DIR bytecode.py STAMP JUDGE_DIR JUDGE_INSIDE")
    warm(*sys.argv[1:])
