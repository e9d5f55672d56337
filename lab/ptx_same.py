#!/usr/bin/env python3
"""Whether two CUDA sources compile to the same kernels, entry by entry, in PTX (no GPU needed).

Why: a lab variant that merges two device-tested kernels (the prefill's fa3e at POLY 0) can be checked to
compile to exactly those kernels before any device time is spent. Each source is compiled to PTX
with the given nvcc flags; entries are matched by name (the anonymous namespace's per-file hash
removed); comments, line info, asm label numbers, register numbers (renumbered in order of first
use) and block labels are normalised away. Prints, per common entry, IDENTICAL or the count of
differing lines, with --diff N the first N lines of the unified diff.

  python3 lab/ptx_same.py A.cu B.cu [--diff N] -- NVCC_FLAGS...
e.g. python3 lab/ptx_same.py lab/flash-attention-prefill/fa3v3/fa3_sm90.cu \\
         lab/flash-attention-prefill/fa3e/fa3_sm90.cu -- -DKZOO_STAGES128=2 -DKZOO_STAGES64=4 -DKZOO_PINGPONG=1 \\
         -DKZOO_FA3_POLY=0
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

BASE_FLAGS = ["-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17"]


def ptx(source, flags):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.ptx")
        subprocess.run([nvcc] + BASE_FLAGS + flags + ["-ptx", source, "-o", out], check=True)
        with open(out) as f:
            return f.read()


def entries(text):
    """{entry name: normalised lines}."""
    text = re.sub(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+", "ANON", text)
    text = re.sub(r"^\s*(//|\.loc\s|\.file\s).*$", "", text, flags=re.M)
    text = re.sub(r"\b([A-Z]+)_\d+\b", r"\1_N", text)  # asm labels made unique by %=
    out = {}
    for part in re.split(r"(?=^(?:\.visible\s+|\.weak\s+)?\.entry\s)", text, flags=re.M):
        m = re.match(r"(?:\.visible\s+|\.weak\s+)?\.entry\s+(\S+?)\(", part)
        if m:
            out[m.group(1)] = canon(part.splitlines())
    return out


def canon(lines):
    maps, out = {}, []
    for line in lines:
        if not line.strip() or line.strip().startswith(".reg"):
            continue

        def rename(m):
            seen = maps.setdefault(m.group(1), {})
            return "%%%s%d" % (m.group(1), seen.setdefault(m.group(2), len(seen)))
        line = re.sub(r"%(rd|rs|r|f|p)(\d+)", rename, line)
        out.append(re.sub(r"\$L__BB\d+_\d+", "LBB", line))
    return out


def main(argv):
    if "--" not in argv or len(argv[:argv.index("--")]) < 2:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    head, flags = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    show = 0
    if "--diff" in head:
        show = int(head[head.index("--diff") + 1])
        head = head[:head.index("--diff")] + head[head.index("--diff") + 2:]
    a, b = entries(ptx(head[0], flags)), entries(ptx(head[1], flags))
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print("%s: only in %s" % (name, head[0] if name in a else head[1]))
            continue
        diff = list(difflib.unified_diff(a[name], b[name], lineterm="", n=1))
        print("%s: %d / %d lines, %s" % (name, len(a[name]), len(b[name]),
                                         "IDENTICAL" if not diff else "%d diff lines" % len(diff)))
        for line in diff[:show]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
