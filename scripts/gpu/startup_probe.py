"""What a judge pays before its clock, on this machine: `import torch`, cuInit, the first
context, one cold process each (docs/PERF.md, "Fidelity and verdict time, session 27"), and
whether torch's modules have bytecode this interpreter can load: without it every import
compiles torch's ~2000 modules again, and a read-only venv (the sandbox binds it so) never
keeps the result. Run from anywhere:
    $PY scripts/gpu/startup_probe.py [--runs 3]
Prints one line per run, then the bytecode line."""
import argparse
import importlib.util
import os
import subprocess
import sys

ONE = r"""
import time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
cuda = torch.cuda.is_available()
if cuda:
    torch.cuda.init()
t2 = time.perf_counter()
if cuda:
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
t3 = time.perf_counter()
print("startup: import torch %.2f s, cuda init %.2f s, context %.2f s (%s)" % (t1 - t0, t2 - t1, t3 - t2, "cuda" if cuda else "no GPU"))
"""


def bytecode():
    """(modules under torch/, of them with a current .pyc for this interpreter, torch's folder writable)."""
    spec = importlib.util.find_spec("torch")
    root = os.path.dirname(spec.origin)
    n = cached = 0
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                n += 1
                src = os.path.join(d, f)
                pyc = importlib.util.cache_from_source(src)
                try:
                    cached += os.stat(pyc).st_mtime >= os.stat(src).st_mtime
                except OSError:
                    pass
    return root, n, cached, os.access(root, os.W_OK)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    for _ in range(a.runs):
        subprocess.run([sys.executable, "-c", ONE], check=False)
    root, n, cached, writable = bytecode()
    print("startup: %s: %d modules, %d with current bytecode for %s (cache tag %s); folder %s"
          % (root, n, cached, sys.executable, sys.implementation.cache_tag, "writable" if writable else "read-only"))


if __name__ == "__main__":
    main()
