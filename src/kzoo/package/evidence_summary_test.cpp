// Summarised evidence (issue 13, item 1): a run's results, "cleaned up" into
// prose, a dict, a comment or a column of floats, are refused like the run's
// raw output; the authored source around them is not. The corpora on disk
// (evidence_corpus_test.cpp) hold many more of both.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "kzoo/package/evidence.hpp"

namespace kzoo::package {
namespace {

Violations scan(const std::string& path, const std::string& content) {
  return scan_file_for_evidence(PackageFile{path, content}, path);
}

std::string rules(const Violations& vs) {
  std::string s;
  for (const auto& v : vs) s += to_string(v) + "\n";
  return s;
}

// ------------------------------------------------------------ the review's three files

TEST(EvidenceSummary, ProseNotesWithMediansBandwidthRooflineAndDriver) {
  const char* notes = R"(# Notes on the fused softmax

On the 4096x4096 bf16 case the kernel ran at a median 412.3 us over 100 runs
(p90 418.9 us). That is 2.61 TB/s, 78% of roofline on the H200 (driver 550.54,
CUDA 12.4). The eager baseline was 1.07 ms.
)";
  const Violations vs = scan("src/NOTES.md", notes);
  ASSERT_TRUE(has_rule(vs, "evidence.summary")) << rules(vs);
  EXPECT_TRUE(has_rule(vs, "evidence.census")) << rules(vs);
  // The refusal names the file, the line, the rule and the fix.
  const Violation& v = vs.front();
  EXPECT_EQ(v.path, "src/NOTES.md");
  EXPECT_EQ(v.pointer, "line 3");
  EXPECT_EQ(v.rule, "evidence.summary");
  EXPECT_NE(v.detail.find("median 412.3 us"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("bench_result.yaml"), std::string::npos) << v.detail;
}

TEST(EvidenceSummary, APythonDictOfPerShapeMediansAndBandwidth) {
  std::string src = "# per-shape results of the last sweep\nRESULTS = {\n";
  const int sizes[] = {1024, 2048, 4096, 8192};
  double t = 13.7;
  for (int m : sizes)
    for (int n : sizes) {
      char line[120];
      std::snprintf(line, sizeof line, "    (%d, %d): {'median_us': %.1f, 'gbps': %.1f},\n", m, n, t, 2400.0 + t / 3);
      src += line;
      t *= 1.37;
    }
  src += "}\n";
  const Violations vs = scan("src/results_table.py", src);
  EXPECT_TRUE(has_rule(vs, "evidence.summary")) << rules(vs);
}

TEST(EvidenceSummary, FourHundredEightyPastedFourDigitFloats) {
  std::string src = "SAMPLES = [\n";
  std::uint32_t s = 99;
  for (int row = 0; row < 48; ++row) {
    src += "   ";
    for (int col = 0; col < 10; ++col) {
      s = s * 1664525u + 1013904223u;
      char v[16];
      std::snprintf(v, sizeof v, " %.4f,", 0.3 + (s >> 8) / 16777216.0 * 0.3);
      src += v;
    }
    src += "\n";
  }
  src += "]\n";
  const Violations vs = scan("src/samples.py", src);
  ASSERT_TRUE(has_rule(vs, "evidence.encoded-blob")) << rules(vs);
  EXPECT_EQ(vs.front().pointer, "line 2");
}

// ------------------------------------------------------------ what stays valid

TEST(EvidenceSummary, ATritonAutotuneConfigListWithoutTimingsPasses) {
  std::string src = "import triton\n\n\n@triton.autotune(\n    configs=[\n";
  for (int bm : {64, 128})
    for (int bn : {64, 128, 256})
      for (int stages : {3, 4})
        src += "        triton.Config({\"BLOCK_M\": " + std::to_string(bm) + ", \"BLOCK_N\": " + std::to_string(bn) +
               ", \"BLOCK_K\": 64, \"GROUP_M\": 8}, num_stages=" + std::to_string(stages) + ", num_warps=" +
               std::to_string(bm == 128 ? 8 : 4) + "),\n";
  src += "    ],\n    key=[\"M\", \"N\", \"K\"],\n)\n@triton.jit\ndef matmul(a, b, c, M, N, K, BLOCK_M: tl.constexpr):\n"
         "    pass\n";
  EXPECT_TRUE(scan("src/matmul.py", src).empty()) << rules(scan("src/matmul.py", src));
}

TEST(EvidenceSummary, TheSameConfigsKeyedByTheShapesATuningRunPickedAreRefused) {
  std::string src = "import triton\n\nBEST = {\n";
  for (int m : {16, 64, 4096, 8192})
    src += "    (" + std::to_string(m) +
           ", 8192, 8192): triton.Config({\"BLOCK_M\": 64, \"BLOCK_N\": 128, \"BLOCK_K\": 64}, num_stages=4, "
           "num_warps=4),\n";
  src += "}\n";
  const Violations vs = scan("src/tuned.py", src);
  ASSERT_TRUE(has_rule(vs, "evidence.tuning")) << rules(vs);
  EXPECT_EQ(vs.front().pointer, "line 4");
}

TEST(EvidenceSummary, AlgorithmNotesWithComplexityPass) {
  const char* notes = R"(# Algorithm

One pass with online rescaling: keep a running maximum m and sum s, and
multiply s by exp(m_old - m_new) when the maximum grows.

Cost: O(N) work and O(1) extra memory per row, 2N elements of traffic; the
block reduction is a tree of depth O(log B) for B = 1024 threads. The bitonic
variant needs O(B log^2 B) compare-exchanges. Each SM holds 2 blocks of 256
threads at 128 registers per thread.
)";
  EXPECT_TRUE(scan("src/ALGORITHM.md", notes).empty()) << rules(scan("src/ALGORITHM.md", notes));
  const char* cu = "// Decoupled look-back scan: O(N) work, 2N reads + N writes, O(log B) depth per tile;\n"
                   "// a global load costs ~500 cycles, a shared one ~30, so tiles are staged.\n"
                   "__global__ void scan(const int* x, int* y, int n);\n";
  EXPECT_TRUE(scan("src/scan.cu", cu).empty()) << rules(scan("src/scan.cu", cu));
}

std::string sin_table(bool with_provenance) {
  std::string src = "#pragma once\n";
  if (with_provenance) src += "// sin(2*pi*i/256) for i in range(256), rounded to float (tools/gen_lut.py).\n";
  src += "static const float kSin[256] = {\n";
  for (int i = 0; i < 256; i += 8) {
    src += "   ";
    for (int k = i; k < i + 8; ++k) {
      char v[24];
      std::snprintf(v, sizeof v, " %.7ff,", std::sin(2 * M_PI * k / 256));
      src += v;
    }
    src += "\n";
  }
  return src + "};\n";
}

TEST(EvidenceSummary, ALookupTableWithItsProvenanceInACommentPasses) {
  EXPECT_TRUE(scan("src/sin_lut.h", sin_table(true)).empty()) << rules(scan("src/sin_lut.h", sin_table(true)));
}

TEST(EvidenceSummary, TheSameTableWithNothingToSayWhereItComesFromIsRefused) {
  const Violations vs = scan("src/sin_lut.h", sin_table(false));
  ASSERT_TRUE(has_rule(vs, "evidence.encoded-blob")) << rules(vs);
  EXPECT_NE(vs.front().detail.find("comment"), std::string::npos) << vs.front().detail;
}

TEST(EvidenceSummary, PolynomialCoefficientsWithTheirProvenancePass) {
  const char* cuh = R"(#pragma once
// 2^f on [0, 1): degree-5 minimax polynomial (Sollya), relative error < 2^-22.
__device__ __forceinline__ float exp2_poly(float f) {
  const float c[6] = {1.0f, 0.693147182f, 0.240226507f, 0.0555041086f, 0.00961812911f, 0.00133335581f};
  return c[0] + f * (c[1] + f * (c[2] + f * (c[3] + f * (c[4] + f * c[5]))));
}
)";
  EXPECT_TRUE(scan("src/exp2.cuh", cuh).empty()) << rules(scan("src/exp2.cuh", cuh));
}

// ------------------------------------------------------------ the line between them

TEST(EvidenceSummary, OneExampleFigureOrADatasheetBoundPasses) {
  const char* py = "ms = triton.testing.do_bench(lambda: softmax(x))\n"
                   "print(f\"softmax 4096x4096: {ms:.3f} ms\")  # ~0.18 ms on an H200\n";
  EXPECT_TRUE(scan("src/bench.py", py).empty()) << rules(scan("src/bench.py", py));
  const char* bound = "// At the H100's peak HBM bandwidth of 3.35 TB/s a 256 MiB pass cannot take less than\n"
                      "// about 80 us, so each extra pass costs as much as the whole lower bound.\n";
  EXPECT_TRUE(scan("src/k.cu", bound).empty()) << rules(scan("src/k.cu", bound));
}

TEST(EvidenceSummary, TwoMeasuredFiguresAreASummary) {
  const char* cu = "// Runs ~0.18 ms on an H100 and ~0.31 ms on an A100 at 4096x4096.\n__global__ void k() {}\n";
  const Violations vs = scan("src/k.cu", cu);
  ASSERT_TRUE(has_rule(vs, "evidence.summary")) << rules(vs);
  EXPECT_EQ(vs.front().pointer, "line 1");
  EXPECT_TRUE(has_rule(scan("src/CHANGELOG.md", "- 128-bit loads: 1.42x faster.\n- Persistent grid: 1.87x.\n"),
                       "evidence.summary"));
}

TEST(EvidenceSummary, ShapesAgainstTimesInAnyLayout) {
  EXPECT_TRUE(has_rule(scan("src/n.md", "| shape | ours | torch |\n|---|---|---|\n| 4096x4096 | 0.178 | 0.283 |\n"
                                        "| 8192x8192 | 0.701 | 1.120 |\n"),
                       "evidence.summary"));
  EXPECT_TRUE(has_rule(scan("src/n.md", "- M=4096, N=4096 -> 0.178\n- M=8192, N=8192 -> 0.701\n"), "evidence.summary"));
  EXPECT_TRUE(has_rule(scan("src/t.py", "T = [\n    (4096, 4096, 0.4127),\n    (8192, 8192, 3.1854),\n"
                                        "    (16, 8192, 0.0382),\n]\n"),
                       "evidence.summary"));
  // Test shapes with tolerances are not results.
  const char* test = "CASES = [\n    (4096, 4096, 1e-2),\n    (8192, 8192, 1.6e-2),\n    (16, 8192, 0.0625),\n]\n";
  EXPECT_TRUE(scan("src/test_k.py", test).empty()) << rules(scan("src/test_k.py", test));
}

TEST(EvidenceSummary, TimingLiteralsInCode) {
  EXPECT_TRUE(has_rule(scan("src/r.cc", "const Rec k = {.median_us = 412.3f, .p90_us = 418.9f, .gbps = 2610.4f};\n"),
                       "evidence.summary"));
  // Settings named like timings are not readings.
  const char* settings = "TIMEOUT_S = 30.0\nWARMUP_MS = 25\nREP_MS = 100\nMAX_LATENCY_US = 500.0\n"
                         "x = np.random.lognormal(mean=0.123456, sigma=2.0)\n";
  EXPECT_TRUE(scan("src/settings.py", settings).empty()) << rules(scan("src/settings.py", settings));
}

TEST(EvidenceSummary, AProfilerSectionPastedIntoAComment) {
  const char* py = R"(# ncu --section SpeedOfLight:
#   DRAM Frequency                 cycle/nsecond        2.62
#   Elapsed Cycles                         cycle     724,133
#   Memory Throughput                          %       91.12
#   Duration                             usecond      412.29
def copy(x):
    return x.clone()
)";
  const Violations vs = scan("src/copy.py", py);
  ASSERT_TRUE(has_rule(vs, "evidence.log")) << rules(vs);
  EXPECT_EQ(vs.front().pointer, "line 2");
}

TEST(EvidenceSummary, ACensusOfTheMachineButNotARequirement) {
  const char* census = "// Tested on: NVIDIA H100 80GB HBM3, driver 550.54.15, nvcc V12.4.131, Ubuntu 22.04.4 LTS.\n"
                       "__global__ void k() {}\n";
  EXPECT_TRUE(has_rule(scan("src/k.cu", census), "evidence.census")) << rules(scan("src/k.cu", census));
  const char* requirement = "Requires CUDA 12.4 or newer, PyTorch 2.3 or later and an sm_90 GPU (H100 or H200).\n"
                            "Install with pip install torch==2.3.0 triton==2.3.0.\n";
  EXPECT_TRUE(scan("src/README.md", requirement).empty()) << rules(scan("src/README.md", requirement));
}

// Refusals by content point at a line, whichever detector made them (by
// name, a file has no line to point at).
TEST(EvidenceSummary, EveryRefusalByContentNamesALine) {
  const std::pair<const char*, std::string> cases[] = {
      {"src/events.py", "\n{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 2}]}\n"},
      {"src/env", "# captured\nSHELL=/bin/bash\nPWD=/work\nHOME=/root\nSHLVL=1\n"},
      {"src/k.cu", "// from nvcc\n.version 8.3\n.target sm_90a\n.address_size 64\n"},
      {"src/w.py", std::string("\x93NUMPY\x01\x00", 8) + "{'descr': '<f4'}"},
      {"src/notes.txt", "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\n"},
  };
  for (const auto& [path, content] : cases) {
    const Violations vs = scan(path, content);
    ASSERT_FALSE(vs.empty()) << path;
    for (const auto& v : vs) EXPECT_EQ(v.pointer.rfind("line ", 0), 0u) << to_string(v);
  }
  EXPECT_EQ(scan("src/events.py", cases[0].second).front().pointer, "line 2");
  EXPECT_EQ(scan("src/env", cases[1].second).front().pointer, "line 2");
  EXPECT_EQ(scan("src/k.cu", cases[2].second).front().pointer, "line 2");
}

}  // namespace
}  // namespace kzoo::package
