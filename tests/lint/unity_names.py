#!/usr/bin/env python3
"""The unity build's hazard, checked: two library files in one unity batch (CMakeLists.txt,
KZOO_UNITY_BUILD) that each define a file-local function of the same name. With one signature
the batch does not compile; with two, overload resolution may silently call the other file's
function (json_schema.cpp's excerpt(json) answered py_literal.cpp's calls once, and only a test
of an error message's wording saw it). Reads the batches CMake wrote into BUILD_DIR and lists
every name defined at the top level of an anonymous namespace in two files of one batch.

Usage: unity_names.py SOURCE_DIR BUILD_DIR   (exit 0 clean, 1 with the clashes listed, 77 when
BUILD_DIR is not a unity build)
"""
import collections
import glob
import os
import re
import sys

DEF = re.compile(r"^(?!return|using|namespace|struct|class|enum|template|if|for|while)"
                 r"[A-Za-z_][\w:<>,\*& ]*?[\s\*&](\w+)\(", re.M)
ANON = re.compile(r"^namespace \{\n(.*?)^\}  // namespace", re.S | re.M)


def local_names(path):
    text = open(path, encoding="utf-8").read()
    return {m.group(1) for block in ANON.finditer(text) for m in DEF.finditer(block.group(1))}


def main():
    # Absolute: the batches include absolute paths, and a relative SOURCE_DIR matched none of them,
    # so the check passed having read nothing.
    src, build = os.path.realpath(sys.argv[1]), sys.argv[2]
    batches = sorted(glob.glob(os.path.join(build, "CMakeFiles", "*.dir", "Unity", "unity_*_cxx.cxx")))
    if not batches:
        print("unity_names: %s is not a unity build (configure with -DKZOO_UNITY_BUILD=ON)" % build)
        return 77
    clashes, read = [], 0
    for batch in batches:
        files = [f for f in re.findall(r'#include "([^"]+\.cpp)"', open(batch).read())
                 if os.path.realpath(f).startswith(src + os.sep)]
        read += len(files)
        where = collections.defaultdict(list)
        for f in files:
            for name in local_names(f):
                where[name].append(os.path.relpath(f, src))
        clashes += ["%s: %s in %s" % (os.path.relpath(batch, build), name, ", ".join(fs))
                    for name, fs in sorted(where.items()) if len(fs) > 1]
    if not read:
        print("unity_names: no source file of %s in %s's unity batches: is SOURCE_DIR this build's?" % (src, build))
        return 1
    for c in clashes:
        print("FAIL " + c)
    if clashes:
        print("%d file-local name(s) defined twice in one unity batch: rename one of each pair (or move the "
              "shared one into a header)" % len(clashes))
        return 1
    print("unity_names: no file-local name is defined twice in one of %d unity batches (%d files)" % (len(batches), read))
    return 0


if __name__ == "__main__":
    sys.exit(main())
