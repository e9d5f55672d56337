// Authored files that the evidence-free policy must let through untouched:
// realistic Triton, CUDA and C++ sources (numeric constants, lookup tables,
// autotune lists, inline PTX, logging calls, docstrings) and the usual
// project files. A false positive here blocks an honest contributor.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kzoo/package/evidence.hpp"

namespace kzoo::package {
namespace {

struct Authored {
  const char* path;
  std::string content;
};

const char* kTritonSoftmax = R"PY(# Copyright 2026 The kzoo authors. SPDX-License-Identifier: MIT
"""Fused row softmax in Triton.

One program per row; the row is loaded once, reduced in registers and
written back. Block sizes are powers of two >= the row length.

Raises:
    ValueError: if the input is not 2-D.
"""
import logging

import torch
import triton
import triton.language as tl

log = logging.getLogger(__name__)

BLOCK_SIZES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 1}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 2}, num_warps=8, num_stages=2),
        triton.Config({"BLOCK_M": 4}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 8}, num_warps=16, num_stages=3),
    ],
    key=["n_cols"],
)
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr,
                   BLOCK_M: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got {x.dim()}-D")
    n_rows, n_cols = x.shape
    block = next(b for b in BLOCK_SIZES if b >= n_cols)
    y = torch.empty_like(x)
    log.debug("softmax %dx%d block=%d", n_rows, n_cols, block)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=block)
    return y


if __name__ == "__main__":
    x = torch.randn(4096, 4096, device="cuda")
    ms = triton.testing.do_bench(lambda: softmax(x))
    print(f"softmax 4096x4096: {ms:.3f} ms")  # ~0.18 ms on an H200
)PY";

std::string cuda_with_tables() {
  std::string s = R"CU(// Block-scaled fp8 dequantisation with a 64-entry lookup table.
#include <cuda_fp16.h>
#include <cstdint>

namespace {

__constant__ float kE4M3[64] = {
)CU";
  for (int r = 0; r < 8; ++r) {
    s += "   ";
    for (int c = 0; c < 8; ++c) s += " " + std::to_string(0.015625 * (r * 8 + c)).substr(0, 8) + "f,";
    s += "\n";
  }
  s += "};\n\n// CRC-style 256-entry table.\nstatic const uint32_t kTable[256] = {\n";
  for (int r = 0; r < 32; ++r) {
    s += "   ";
    for (int c = 0; c < 8; ++c) s += " 0x" + std::to_string(10000000 + r * 8 + c) + "u,";
    s += "\n";
  }
  s += R"CU(};

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace

template <int kBlock, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) dequant_kernel(const uint8_t* __restrict__ q,
                                                              const float* __restrict__ scales,
                                                              __half* __restrict__ out, int n) {
  const int i = blockIdx.x * kBlock + threadIdx.x;
  if (i >= n) return;
  const float s = scales[i / 128];
  out[i] = __float2half(kE4M3[q[i] & 63] * s * fast_exp2(1.0f));
}

void launch(const uint8_t* q, const float* s, __half* out, int n, cudaStream_t stream) {
  constexpr int kBlock = 256;
  dequant_kernel<kBlock, 8><<<(n + kBlock - 1) / kBlock, kBlock, 0, stream>>>(q, s, out, n);
}
)CU";
  return s;
}

const char* kBinding = R"CPP(#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>

void launch(const uint8_t* q, const float* s, at::Half* out, int n, cudaStream_t stream);

torch::Tensor dequant(torch::Tensor q, torch::Tensor scales) {
  TORCH_CHECK(q.is_cuda(), "q must be a CUDA tensor");
  TORCH_CHECK(q.scalar_type() == torch::kUInt8, "q must be uint8, got ", q.scalar_type());
  auto out = torch::empty(q.sizes(), q.options().dtype(torch::kHalf));
  launch(q.data_ptr<uint8_t>(), scales.data_ptr<float>(), out.data_ptr<at::Half>(), q.numel(),
         at::cuda::getCurrentCUDAStream());
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("dequant", &dequant, "fp8 block dequantisation"); }
)CPP";

const char* kBenchmarkPy = R"PY("""Trusted harness: hands the test cases to the kzoo judge."""
import sys

KERNEL_ZOO_TEST_CASE_METAS = [
    {
        "test_case_id": "rows4096_cols4096",
        "params": {"workload": "synthetic", "shape": {"M": 4096, "N": 4096}},
        "primary_metric": "latency_us",
        "metrics": [
            {"name": "latency_us", "unit": "us", "direction": "lower"},
            {"name": "bandwidth_gbps", "unit": "GB/s", "direction": "higher"},
        ],
        "tolerance": {"correctness_atol": 1e-3, "correctness_rtol": 1e-3},
    },
    {
        "test_case_id": "rows8192_cols16384",
        "params": {"workload": "synthetic", "shape": {"M": 8192, "N": 16384}},
        "primary_metric": "latency_us",
        "metrics": [{"name": "latency_us", "unit": "us", "direction": "lower"}],
        "tolerance": {"correctness_atol": 1e-3, "correctness_rtol": 1e-3},
    },
]

if __name__ == "__main__":
    from kzoo_judge.entry import run_package_benchmark

    sys.exit(run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS))
)PY";

const char* kReadme = R"MD(# Online softmax (Triton)

A one-pass softmax for rows up to 64k columns, written for Hopper.

## Usage

```bash
$ python -c "import softmax; print(softmax.softmax)"
```

## Parameters

| parameter | meaning | default |
|---|---|---|
| `BLOCK_SIZE` | columns per program, a power of two | 1024 |
| `num_warps` | warps per program | 4 |

The kernel keeps the row in registers, so rows wider than 65536 fall back to
the two-pass path. See LICENSE for terms.

Tested shapes: 4096x4096 and 8192x16384 (fp32, bf16).
)MD";

const char* kMit = R"(MIT License

Copyright (c) 2026 The kzoo authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY.
)";

const char* kCMake = R"(cmake_minimum_required(VERSION 3.25)
project(dequant LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
find_package(Torch REQUIRED)
add_library(dequant SHARED dequant.cu binding.cpp)
target_compile_options(dequant PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3 --use_fast_math -Xptxas -v>)
target_link_libraries(dequant PRIVATE ${TORCH_LIBRARIES})
)";

const char* kSetupPy = R"(from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="dequant",
    version="0.1.0",
    ext_modules=[
        CUDAExtension(
            "dequant",
            ["dequant.cu", "binding.cpp"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-arch=sm_90", "--use_fast_math"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
)";

const char* kMakefile = "NVCC ?= nvcc\nARCH ?= sm_90\nCXXFLAGS = -O3 -std=c++17\n\n"
                        "all: dequant.so\n\ndequant.so: dequant.cu binding.cpp\n"
                        "\t$(NVCC) -O3 -arch=$(ARCH) -Xcompiler -fPIC -shared $^ -o $@\n\n"
                        "clean:\n\trm -f dequant.so *.o\n\n.PHONY: all clean\n";

const char* kGitignore = "__pycache__/\n*.pyc\n*.so\n*.o\nbuild/\n*.log\n";

const char* kDataclass = R"PY(from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    block_m: int = 128
    block_n: int = 256
    block_k: int = 64
    stages: int = 3
    warps: int = 8
    split_k: int = 1
    swizzle: int = 8
    epilogue: str = "none"
    use_tma: bool = True
)PY";

const char* kDesc = R"(schema_version: "1"
name: softmax
category: {arch: hopper, op_class: norm, sub_class: softmax, quant: fp32}
summary: Row softmax
description: |
  Softmax over the last dimension.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [M, N]}
  - {name: y, direction: out, dtype: float32, shape: [M, N]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: softmax}
)";

const char* kBenchResult = R"(schema_version: "1"
kernel_id: hopper/norm/softmax/fp32/triton
cases:
  - test_case_id: rows4096_cols4096
    metrics_best: {latency_us: 181.2, bandwidth_gbps: 741.0}
    metrics_current: {latency_us: 182.9, bandwidth_gbps: 734.5}
    best_commit: 0123456789abcdef0123456789abcdef01234567
    updated_at: "2026-11-29T14:05:00Z"
)";

const char* kDoctest = R"PY(def checked_rows(x):
    """Rows of `x`, checked.

    >>> checked_rows([[1, 2], [3, 4]])
    2
    >>> checked_rows(5)
    Traceback (most recent call last):
        ...
    TypeError: expected a list of rows
    >>> checked_rows([])
    Traceback (most recent call last):
        ...
    ValueError: no rows
    """
    if not isinstance(x, list):
        raise TypeError("expected a list of rows")
    if not x:
        raise ValueError("no rows")
    return len(x)
)PY";

const char* kDefines = "#pragma once\n/* Tile shapes, aligned with tabs. */\n#define TILE_M\t128\n#define TILE_N\t256\n"
                       "#define TILE_K\t64\n#define STAGES\t4\n#define WARPS\t8\n#define SPLIT_K\t1\n"
                       "enum Mode { kA = 0, kB = 1, kC = 2 };\nint f(int a, int b);\nint g(int a, int b);\n";

const char* kRstDocs = R"(Defaults
========

+----------------+---------+----------+
| dtype          | low     | high     |
+================+=========+==========+
| bool           | ``0``   | ``2``    |
+----------------+---------+----------+
| uint8          | ``0``   | ``10``   |
+----------------+---------+----------+
| int8           | ``-9``  | ``10``   |
+----------------+---------+----------+
| int32          | ``-9``  | ``10``   |
+----------------+---------+----------+
| float          | ``-9``  | ``9``    |
+----------------+---------+----------+
)";

class MustPass : public ::testing::TestWithParam<Authored> {};

TEST_P(MustPass, NoEvidenceViolation) {
  auto vs = scan_file_for_evidence(PackageFile{GetParam().path, GetParam().content}, GetParam().path);
  std::string all;
  for (const auto& v : vs) all += to_string(v) + "\n";
  EXPECT_TRUE(vs.empty()) << all;
}

INSTANTIATE_TEST_SUITE_P(
    AuthoredFiles, MustPass,
    ::testing::Values(Authored{"src/softmax.py", kTritonSoftmax}, Authored{"src/dequant.cu", cuda_with_tables()},
                      Authored{"src/binding.cpp", kBinding}, Authored{".kernel_package/benchmark.py", kBenchmarkPy},
                      Authored{".kernel_package/build_test_env.py",
                               "from kzoo_judge.entry import build_test_env\n\nif __name__ == \"__main__\":\n"
                               "    build_test_env()\n"},
                      Authored{".kernel_package/desc.yaml", kDesc},
                      Authored{".kernel_package/bench_result.yaml", kBenchResult}, Authored{"README.md", kReadme},
                      Authored{"LICENSE", kMit}, Authored{"src/CMakeLists.txt", kCMake},
                      Authored{"src/setup.py", kSetupPy}, Authored{"src/Makefile", kMakefile},
                      Authored{".gitignore", kGitignore}, Authored{"src/config.py", kDataclass},
                      Authored{"src/__init__.py", ""}, Authored{"src/rows.py", kDoctest},
                      Authored{"src/tiles.h", kDefines}, Authored{"src/DEFAULTS.rst", kRstDocs}));

// ------------------------------------------------------------ the corpora on disk
//
// src/kzoo/package/evidence_corpus/ (README.md there says how it was made):
//   refused/  files the policy refuses, each with its rule and line in refused/EXPECTED;
//   accepted/ authored files it must let through (autotune lists, algorithm notes,
//             constants with their provenance, requirements, bounds from datasheets);
//   kernels/  20 realistic kernels and helpers (Triton, CUDA C++, PyTorch): the
//             false-positive rate on real sources (docs/PERF.md) is measured on them.
// Each file is scanned as src/<name>, as it would sit in a package.

namespace corpus {

namespace fs = std::filesystem;

fs::path root() { return fs::path(KZOO_SOURCE_DIR) / "src/kzoo/package/evidence_corpus"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root() / dir))
    if (e.is_regular_file() && e.path().filename() != "EXPECTED") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Violations scan_corpus_file(const std::string& dir, const std::string& name) {
  return scan_file_for_evidence(PackageFile{"src/" + name, slurp(root() / dir / name)}, "src/" + name);
}

struct Expectation {
  std::string file, rule;
  int line;
};

std::vector<Expectation> expectations() {
  std::vector<Expectation> out;
  std::istringstream in(slurp(root() / "refused/EXPECTED"));
  std::string l;
  while (std::getline(in, l)) {
    if (l.empty() || l[0] == '#') continue;
    std::istringstream row(l);
    Expectation e;
    row >> e.file >> e.rule >> e.line;
    out.push_back(e);
  }
  return out;
}

std::string all_of(const Violations& vs) {
  std::string s;
  for (const auto& v : vs) s += "  " + to_string(v) + "\n";
  return s;
}

}  // namespace corpus

TEST(EvidenceCorpus, EachCorpusHoldsEnoughFiles) {
  EXPECT_GE(corpus::files_in("refused").size(), 60u);
  EXPECT_GE(corpus::files_in("accepted").size(), 60u);
  EXPECT_EQ(corpus::files_in("kernels").size(), 20u);
}

TEST(EvidenceCorpus, EveryRefusedFileIsRefusedByItsRuleAtItsLine) {
  const auto expected = corpus::expectations();
  std::set<std::string> listed;
  for (const auto& e : expected) listed.insert(e.file);
  for (const std::string& name : corpus::files_in("refused")) EXPECT_TRUE(listed.count(name)) << name << " is not in EXPECTED";
  for (const auto& e : expected) {
    const Violations vs = corpus::scan_corpus_file("refused", e.file);
    bool found = false;
    for (const auto& v : vs) found |= v.rule == e.rule && v.pointer == "line " + std::to_string(e.line);
    EXPECT_TRUE(found) << e.file << ": expected " << e.rule << " at line " << e.line << ", got:\n" << corpus::all_of(vs);
  }
}

TEST(EvidenceCorpus, EveryRefusalNamesTheFileTheLineTheRuleAndTheFix) {
  for (const std::string& name : corpus::files_in("refused")) {
    const Violations vs = corpus::scan_corpus_file("refused", name);
    ASSERT_FALSE(vs.empty()) << name;
    for (const auto& v : vs) {
      EXPECT_EQ(v.path, "src/" + name);
      EXPECT_EQ(v.pointer.rfind("line ", 0), 0u) << to_string(v);
      EXPECT_EQ(v.rule.rfind("evidence.", 0), 0u) << to_string(v);
      // "<what was found>; <how to fix it>"
      const auto fix = v.detail.rfind("; ");
      ASSERT_NE(fix, std::string::npos) << to_string(v);
      EXPECT_GT(v.detail.size() - fix, 20u) << to_string(v);
    }
  }
}

TEST(EvidenceCorpus, EveryAcceptedFilePasses) {
  for (const std::string& name : corpus::files_in("accepted")) {
    const Violations vs = corpus::scan_corpus_file("accepted", name);
    EXPECT_TRUE(vs.empty()) << name << ":\n" << corpus::all_of(vs);
  }
}

// The false-positive rate on real kernel sources (docs/PERF.md): 0 of 20.
TEST(EvidenceCorpus, RealisticKernelsAndHelpersPass) {
  std::size_t refused = 0;
  for (const std::string& name : corpus::files_in("kernels")) {
    const Violations vs = corpus::scan_corpus_file("kernels", name);
    refused += vs.empty() ? 0 : 1;
    EXPECT_TRUE(vs.empty()) << name << ":\n" << corpus::all_of(vs);
  }
  EXPECT_EQ(refused, 0u) << "false positives on kernels/";
}

}  // namespace
}  // namespace kzoo::package
