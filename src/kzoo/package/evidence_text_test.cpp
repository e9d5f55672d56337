// The evidence-free policy by content: logs, tables, encoded blobs and
// documents hiding under source names — and the realistic sources that must
// pass untouched.
#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "kzoo/package/evidence.hpp"

namespace kzoo::package {
namespace {

Violations scan(const std::string& path, const std::string& content) {
  return scan_file_for_evidence(PackageFile{path, content}, "pkg/" + path);
}

std::string rules(const Violations& vs) {
  std::string s;
  for (const auto& v : vs) s += to_string(v) + "\n";
  return s;
}

// Deterministic pseudo-random bytes (no fixtures, no platform RNG).
std::string random_bytes(std::size_t n, std::uint32_t seed = 12345) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out += static_cast<char>(seed >> 24);
  }
  return out;
}

std::string base64(const std::string& in) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += i + 1 < in.size() ? a[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? a[v & 63] : '=';
  }
  return out;
}

std::string hex(const std::string& in) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : in) out += std::string{d[c >> 4], d[c & 15]};
  return out;
}

// ------------------------------------------------------------ encoded blobs

TEST(EvidenceBlob, ABase64StringInAPythonFile) {
  std::string src = "import base64, torch\nW = base64.b64decode(\"" + base64(random_bytes(4000)) +
                    "\")\n";
  auto vs = scan("src/kernel.py", src);
  EXPECT_TRUE(has_rule(vs, "evidence.encoded-blob")) << rules(vs);
}

TEST(EvidenceBlob, Base64WrappedOverManyLines) {
  std::string b = base64(random_bytes(6000));
  std::string src = "BLOB = (\n";
  for (std::size_t i = 0; i < b.size(); i += 76) src += "    \"" + b.substr(i, 76) + "\"\n";
  src += ")\n";
  auto vs = scan("src/weights_loader.py", src);
  EXPECT_TRUE(has_rule(vs, "evidence.encoded-blob")) << rules(vs);
  EXPECT_FALSE(has_rule(vs, "evidence.long-line"));
}

TEST(EvidenceBlob, AHexDumpInACudaFile) {
  std::string src = "// weights\nconst char* kW = \"" + hex(random_bytes(3000)) + "\";\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.cu", src), "evidence.encoded-blob"));
}

TEST(EvidenceBlob, ByteEscapesSplitAcrossLines) {
  std::string src = "DATA = (\n";
  std::string bytes = random_bytes(2400);
  for (std::size_t i = 0; i < bytes.size(); i += 32) {
    src += "    b\"";
    for (std::size_t k = i; k < i + 32 && k < bytes.size(); ++k) src += "\\x" + hex(bytes.substr(k, 1));
    src += "\"\n";
  }
  src += ")\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", src), "evidence.encoded-blob")) << rules(scan("src/kernel.py", src));
}

TEST(EvidenceBlob, AGoldenTensorPastedAsFloats) {
  std::string src = "import torch\nEXPECTED = torch.tensor([\n";
  std::uint32_t s = 7;
  for (int row = 0; row < 128; ++row) {
    src += "   ";
    for (int col = 0; col < 8; ++col) {
      s = s * 1664525u + 1013904223u;
      src += " " + std::to_string((s >> 8) / 16777216.0).substr(0, 9) + ",";
    }
    src += "\n";
  }
  src += "])\n";
  auto vs = scan("src/reference.py", src);
  EXPECT_TRUE(has_rule(vs, "evidence.encoded-blob")) << rules(vs);
}

TEST(EvidenceBlob, AByteArrayOfACompiledKernel) {
  std::string src = "static const unsigned char kCubin[] = {\n";
  std::string bytes = random_bytes(4096);
  for (std::size_t i = 0; i < bytes.size(); i += 12) {
    src += " ";
    for (std::size_t k = i; k < i + 12 && k < bytes.size(); ++k) src += " 0x" + hex(bytes.substr(k, 1)) + ",";
    src += "\n";
  }
  src += "};\n";
  EXPECT_TRUE(has_rule(scan("src/kernel_image.h", src), "evidence.encoded-blob"));
}

// ------------------------------------------------------------ logs

TEST(EvidenceLog, AnNvccLogNamedBuildTxt) {
  const char* log = R"(nvcc -O3 -arch=sm_90 -Xptxas -v -c softmax.cu -o softmax.o
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z14softmax_kernelPKfPfii' for 'sm_90'
ptxas info    : Function properties for _Z14softmax_kernelPKfPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, 384 bytes cmem[0]
softmax.cu(41): warning #177-D: variable "tid" was declared but never referenced
)";
  auto vs = scan("src/build.txt", log);
  EXPECT_TRUE(has_rule(vs, "evidence.log")) << rules(vs);
}

TEST(EvidenceLog, ATimestampedRunLogNamedKernelPy) {
  std::string log;
  for (int i = 0; i < 12; ++i)
    log += "2026-11-29 14:05:" + std::to_string(10 + i) + ",123 [INFO] step " + std::to_string(i) +
           " loss=0.5 elapsed=1.2ms\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", log), "evidence.log"));
}

TEST(EvidenceLog, ATracebackInNotes) {
  const char* log = R"(Traceback (most recent call last):
  File "/work/bench.py", line 88, in <module>
    main()
  File "/work/bench.py", line 61, in main
    out = kernel(x)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
)";
  EXPECT_TRUE(has_rule(scan("src/notes.md", log), "evidence.log")) << rules(scan("src/notes.md", log));
}

TEST(EvidenceLog, ProfilerOutput) {
  const char* nsys = R"( Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Name
 --------  ---------------  ---------  --------  --------  ----
     62.1        1,234,567        100  12,345.7  12,300.0  softmax_kernel
     37.9          753,210        100   7,532.1   7,530.0  void at::native::vectorized_elementwise_kernel
)";
  auto vs = scan("src/profile_notes.md", nsys);
  EXPECT_TRUE(has_rule(vs, "evidence.log") || has_rule(vs, "evidence.table")) << rules(vs);
  const char* ncu = R"(==PROF== Connected to process 4242
==PROF== Profiling "softmax_kernel" - 0: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 4242
  softmax_kernel(const float *, float *, int, int), Context 1, Stream 7
    Section: GPU Speed Of Light Throughput
    Duration                     usecond        12.35
)";
  EXPECT_TRUE(has_rule(scan("src/x.txt", ncu), "evidence.log"));
}

TEST(EvidenceLog, BenchmarkPrintoutsOfMeasurements) {
  const char* out = R"(softmax 1024x1024: 0.0123 ms, 683.2 GB/s
softmax 2048x2048: 0.0456 ms, 736.1 GB/s
softmax 4096x4096: 0.1789 ms, 750.3 GB/s
softmax 8192x8192: 0.7012 ms, 765.8 GB/s
)";
  auto vs = scan("src/notes.md", out);
  EXPECT_TRUE(has_rule(vs, "evidence.log") || has_rule(vs, "evidence.table")) << rules(vs);
}

TEST(EvidenceLog, EnvironmentAndHardwareCensus) {
  const char* smi = R"(+-----------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
|   0  NVIDIA H200         On   | 00000000:19:00.0 Off |                    0 |
+-------------------------------+----------------------+----------------------+
)";
  EXPECT_TRUE(has_rule(scan("src/gpu.txt", smi), "evidence.log")) << rules(scan("src/gpu.txt", smi));
  const char* env = "SHELL=/bin/bash\nPWD=/work\nHOME=/root\nLD_LIBRARY_PATH=/usr/local/cuda/lib64\nSHLVL=1\n";
  EXPECT_TRUE(has_rule(scan("src/settings", env), "evidence.log"));
  const char* collect = R"(PyTorch version: 2.3.0
Is debug build: False
CUDA used to build PyTorch: 12.1
OS: Ubuntu 22.04.4 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Python version: 3.10.12
Is CUDA available: True
GPU models and configuration: GPU 0: NVIDIA H100 80GB HBM3
Nvidia driver version: 550.54.15
)";
  EXPECT_FALSE(scan("src/machine.md", collect).empty());
}

TEST(EvidenceLog, ALogPastedIntoACommentBlock) {
  std::string src = "import torch\n\n# build output:\n";
  for (int i = 0; i < 10; ++i) src += "# [" + std::to_string(i + 1) + "/10] Building CUDA object k" + std::to_string(i) + ".o\n";
  src += "\ndef f(x):\n    return x\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", src), "evidence.log")) << rules(scan("src/kernel.py", src));
}

// ------------------------------------------------------------ tables

TEST(EvidenceTable, ACsvOfTimingsNamedNotesMd) {
  const char* csv = "size,triton_ms,torch_ms,speedup\n1024,0.012,0.020,1.66\n2048,0.045,0.071,1.57\n"
                    "4096,0.178,0.283,1.59\n8192,0.701,1.120,1.60\n";
  auto vs = scan("src/notes.md", csv);
  EXPECT_TRUE(has_rule(vs, "evidence.table")) << rules(vs);
}

TEST(EvidenceTable, AHeaderlessCsvOfNumbersInAPyFile) {
  std::string csv;
  for (int i = 0; i < 6; ++i) csv += std::to_string(1024 << i) + "," + std::to_string(0.01 * (i + 1)) + "\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", csv), "evidence.table")) << rules(scan("src/kernel.py", csv));
}

TEST(EvidenceTable, ATsvAndASemicolonTable) {
  EXPECT_TRUE(has_rule(scan("src/a.txt", "N\ttime_us\n1\t2.5\n2\t3.5\n"), "evidence.table"));
  EXPECT_TRUE(has_rule(scan("src/a.txt", "1;2.5\n2;3.5\n3;4.5\n4;5.5\n5;6.5\n"), "evidence.table"));
}

TEST(EvidenceTable, AMarkdownResultsTableInTheReadme) {
  const char* md = R"(# Fused softmax

A one-pass online softmax.

| shape | time (ms) | vs torch |
|---|---:|---:|
| 4096x4096 | 0.178 | 1.59x |
)";
  auto vs = scan("README.md", md);
  EXPECT_TRUE(has_rule(vs, "evidence.table")) << rules(vs);
}

TEST(EvidenceTable, AColumnAlignedDataFramePrintout) {
  const char* df = R"(softmax-performance:
         N      Triton       Torch
0    256.0  100.512000   90.123000
1    384.0  140.213000  120.654000
2    512.0  180.874000  150.230000
3    640.0  200.110000  170.430000
4    768.0  230.900000  190.210000
)";
  auto vs = scan("src/perf.md", df);
  EXPECT_TRUE(has_rule(vs, "evidence.table")) << rules(vs);
}

TEST(EvidenceTable, ATablePastedIntoADocstring) {
  std::string src = "def softmax(x):\n    \"\"\"Fast softmax.\n\n";
  src += "    N      ms     GB/s\n";
  for (int i = 0; i < 5; ++i) src += "    " + std::to_string(1024 << i) + "  0.0" + std::to_string(i + 1) + "  7" + std::to_string(i) + "0.5\n";
  src += "    \"\"\"\n    return x\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", src), "evidence.table")) << rules(scan("src/kernel.py", src));
}

// ------------------------------------------------------------ documents

TEST(EvidenceDocument, JsonUnderASourceName) {
  const char* trace = R"({"traceEvents": [{"name": "softmax_kernel", "ph": "X", "ts": 100, "dur": 12.3}]})";
  auto vs = scan("src/kernel.py", trace);
  EXPECT_TRUE(has_rule(vs, "evidence.metadata")) << rules(vs);
  EXPECT_TRUE(has_rule(scan("src/results.txt", "[1.5, 2.5]\n"), "evidence.metadata"));
}

TEST(EvidenceDocument, JsonLinesAndXml) {
  EXPECT_TRUE(has_rule(scan("src/events.txt", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n"), "evidence.metadata"));
  EXPECT_TRUE(has_rule(scan("src/r.txt", "<?xml version=\"1.0\"?>\n<testsuite/>\n"), "evidence.metadata"));
}

TEST(EvidenceDocument, YamlUnderATextName) {
  const char* y = "kernel_id: a/b\ncase: c0\nbest_ms: 0.12\ncurrent_ms: 0.13\ncommit: abc\nrunner: h200\n"
                  "arch: sm_90\ndate: today\n";
  EXPECT_TRUE(has_rule(scan("src/notes.txt", y), "evidence.metadata")) << rules(scan("src/notes.txt", y));
}

// ------------------------------------------------------------ more disguises

TEST(EvidenceTable, NumpySavetxtOutput) {
  std::string two_d, one_d;
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 4; ++c) two_d += (c ? " " : "") + std::to_string(1.0 + r * 0.37 + c * 0.011) + "000000000e+00";
    two_d += "\n";
  }
  for (int r = 0; r < 30; ++r) one_d += std::to_string(0.5 + r * 0.0173) + "\n";
  EXPECT_TRUE(has_rule(scan("src/golden.txt", two_d), "evidence.table")) << rules(scan("src/golden.txt", two_d));
  EXPECT_TRUE(has_rule(scan("src/golden.txt", one_d), "evidence.table")) << rules(scan("src/golden.txt", one_d));
}

TEST(EvidenceTable, QuotedCsvGridBoxAndLabelledRows) {
  const char* ncu = "\"ID\",\"Kernel Name\",\"Metric Value\"\n\"0\",\"softmax\",\"12.5\"\n\"1\",\"softmax\",\"12.7\"\n"
                    "\"2\",\"softmax\",\"12.6\"\n\"3\",\"softmax\",\"12.4\"\n\"4\",\"softmax\",\"12.9\"\n";
  EXPECT_TRUE(has_rule(scan("src/notes.md", ncu), "evidence.table")) << rules(scan("src/notes.md", ncu));
  const char* grid = "+-------+---------+\n| N     | time_ms |\n+=======+=========+\n| 1024  | 0.12    |\n"
                     "+-------+---------+\n| 2048  | 0.45    |\n+-------+---------+\n";
  EXPECT_TRUE(has_rule(scan("README.rst", grid), "evidence.table")) << rules(scan("README.rst", grid));
  const char* box = "\xe2\x94\x8f\xe2\x94\x81\xe2\x94\x93\n"
                    "\xe2\x94\x82 N    \xe2\x94\x82 ms   \xe2\x94\x82\n"
                    "\xe2\x94\x82 1024 \xe2\x94\x82 0.12 \xe2\x94\x82\n"
                    "\xe2\x94\x82 2048 \xe2\x94\x82 0.45 \xe2\x94\x82\n";
  EXPECT_TRUE(has_rule(scan("src/out.md", box), "evidence.table")) << rules(scan("src/out.md", box));
  const char* pytest_bench =
      "Name (time in us)        Min       Max      Mean\n"
      "test_softmax_triton   12.3400 (1.0)   15.6700 (1.0)   13.0100 (1.0)\n"
      "test_softmax_torch    20.1100 (1.63)  25.3300 (1.62)  21.0200 (1.62)\n";
  EXPECT_TRUE(has_rule(scan("src/bench.md", pytest_bench), "evidence.table"))
      << rules(scan("src/bench.md", pytest_bench));
}

TEST(EvidenceTable, OldMacLineEndsDoNotHideATable) {
  std::string csv = "n,ms\r1,0.5\r2,0.7\r3,0.9\r4,1.1\r5,1.3\r";
  EXPECT_TRUE(has_rule(scan("src/notes.md", csv), "evidence.table")) << rules(scan("src/notes.md", csv));
}

TEST(EvidenceBlob, HexDumpsAndDenseEncodings) {
  std::string xxd;
  std::string bytes = random_bytes(256);
  for (std::size_t off = 0; off < bytes.size(); off += 16) {
    char head[32];
    std::snprintf(head, sizeof head, "%08zx:", off);
    xxd += head;
    for (std::size_t k = off; k < off + 16; k += 2) xxd += " " + hex(bytes.substr(k, 2));
    xxd += "  ................\n";
  }
  EXPECT_TRUE(has_rule(scan("src/kernel_dump.md", xxd), "evidence.encoded-blob")) << rules(scan("src/x.md", xxd));
  std::string dense;  // base85-like: punctuation defeats the base64 detector
  std::string b = base64(random_bytes(5000));
  for (std::size_t i = 0; i + 70 <= b.size(); i += 70) dense += b.substr(i, 35) + "!#$%" + b.substr(i + 35, 35) + "\n";
  EXPECT_TRUE(has_rule(scan("src/data.py", dense), "evidence.encoded-blob")) << rules(scan("src/data.py", dense));
}

TEST(EvidenceCompiled, PtxSassAndIrByContent) {
  const char* ptx = ".version 8.3\n.target sm_90a\n.address_size 64\n\n.visible .entry softmax(\n"
                    "\t.param .u64 softmax_param_0\n)\n{\n\tret;\n}\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.cu", ptx), "evidence.compiled")) << rules(scan("src/kernel.cu", ptx));
  std::string sass = "code for sm_90\n\tFunction : softmax\n";
  for (int i = 0; i < 10; ++i) {
    char line[80];
    std::snprintf(line, sizeof line, "        /*%04x*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;\n", i * 16);
    sass += line;
  }
  EXPECT_TRUE(has_rule(scan("src/notes.txt", sass), "evidence.compiled")) << rules(scan("src/notes.txt", sass));
  const char* ll = "; ModuleID = 'softmax'\ntarget datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
                   "target triple = \"nvptx64-nvidia-cuda\"\ndefine void @softmax(ptr %0) {\n  ret void\n}\n";
  EXPECT_TRUE(has_rule(scan("src/kernel.py", ll), "evidence.compiled"));
  const char* gas = "\t.file\t\"k.c\"\n\t.text\n\t.globl\tf\nf:\n\t.cfi_startproc\n\tret\n\t.cfi_endproc\n"
                    "\t.ident\t\"GCC: (Debian 12.2.0-14) 12.2.0\"\n";
  EXPECT_TRUE(has_rule(scan("src/k.s", gas), "evidence.compiled"));
}

TEST(EvidenceCompiled, InlinePtxAndHandWrittenAssemblyPass) {
  const char* cu = "__device__ float ex2(float x) {\n  float y;\n  asm(\".reg .f32 t;\\n\\t\"\n"
                   "      \"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n  return y;\n}\n";
  EXPECT_TRUE(scan("src/k.cu", cu).empty()) << rules(scan("src/k.cu", cu));
  const char* s = "\t.text\n\t.globl\tcopy\ncopy:\n\t.cfi_startproc\n\tmovq (%rsi), %rax\n\tret\n\t.cfi_endproc\n"
                  "\t.globl\tcopy2\ncopy2:\n\t.cfi_startproc\n\tret\n\t.cfi_endproc\n";
  EXPECT_TRUE(scan("src/copy.S", s).empty()) << rules(scan("src/copy.S", s));
  std::string lut = "static const float kLut[] = {\n";
  for (int i = 0; i < 8; ++i) lut += "  /* " + std::to_string(1000 + i) + " */ 1.0f, 2.0f, 3.0f, 4.0f;\n";
  lut += "};\n";
  EXPECT_TRUE(scan("src/lut.cu", lut).empty()) << rules(scan("src/lut.cu", lut));
}

TEST(EvidenceDocument, ATraceThatDoesNotParseAsAWhole) {
  std::string trace = "// captured with torch.profiler\n{\"traceEvents\": [\n";
  for (int i = 0; i < 5; ++i)
    trace += "  {\"ph\": \"X\", \"name\": \"k\", \"ts\": " + std::to_string(100 * i) + ", \"dur\": 12.5},\n";
  EXPECT_TRUE(has_rule(scan("src/profile.txt", trace), "evidence.metadata")) << rules(scan("src/p.txt", trace));
}

TEST(EvidenceLog, NsysStatsAndSanitizerOutput) {
  EXPECT_TRUE(has_rule(scan("src/n.md", " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\nsome text\n"), "evidence.log"));
  EXPECT_TRUE(has_rule(scan("src/n.md", "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"),
                       "evidence.log"));
}

}  // namespace
}  // namespace kzoo::package
