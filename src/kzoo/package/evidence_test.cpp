// The evidence-free policy by name, by magic number and by text validity.
// Content heuristics (logs, tables, blobs) and the must-pass corpus of
// realistic sources are in evidence_text_test.cpp.
#include "kzoo/package/evidence.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kzoo::package {
namespace {

using namespace std::string_literals;

Violations scan(const std::string& path, const std::string& content, const EvidenceLimits& limits = {}) {
  return scan_file_for_evidence(PackageFile{path, content}, "pkg/" + path, limits);
}

std::string rules(const Violations& vs) {
  std::string s;
  for (const auto& v : vs) s += to_string(v) + "\n";
  return s;
}

// ------------------------------------------------------------ by name

struct NameCase {
  const char* path;
  const char* rule;
};

class RefusedByName : public ::testing::TestWithParam<NameCase> {};

TEST_P(RefusedByName, EvenWhenTheContentIsHarmlessText) {
  auto vs = scan(GetParam().path, "just some text\n");
  EXPECT_TRUE(has_rule(vs, GetParam().rule)) << GetParam().path << "\n" << rules(vs);
}

INSTANTIATE_TEST_SUITE_P(
    EvidenceNames, RefusedByName,
    ::testing::Values(
        // tensors, weights, datasets
        NameCase{"src/weights.pt", "evidence.name"}, NameCase{"src/model.pth", "evidence.name"},
        NameCase{"src/last.ckpt", "evidence.name"}, NameCase{"src/model.safetensors", "evidence.name"},
        NameCase{"src/x.npy", "evidence.name"}, NameCase{"src/x.npz", "evidence.name"},
        NameCase{"src/blob.bin", "evidence.name"}, NameCase{"src/data.h5", "evidence.name"},
        NameCase{"src/data.HDF5", "evidence.name"}, NameCase{"src/model.onnx", "evidence.name"},
        NameCase{"src/graph.pb", "evidence.name"}, NameCase{"src/m.tflite", "evidence.name"},
        NameCase{"src/m.gguf", "evidence.name"}, NameCase{"src/cache.pkl", "evidence.name"},
        NameCase{"src/cache.pickle", "evidence.name"}, NameCase{"src/m.joblib", "evidence.name"},
        NameCase{"src/x.mat", "evidence.name"}, NameCase{"src/t.parquet", "evidence.name"},
        NameCase{"src/t.arrow", "evidence.name"}, NameCase{"src/t.feather", "evidence.name"},
        NameCase{"src/t.tfrecord", "evidence.name"},
        // compiled output
        NameCase{"src/kernel.o", "evidence.name"}, NameCase{"src/kernel.obj", "evidence.name"},
        NameCase{"src/libk.so", "evidence.name"}, NameCase{"src/libk.a", "evidence.name"},
        NameCase{"src/k.dll", "evidence.name"}, NameCase{"src/k.dylib", "evidence.name"},
        NameCase{"src/k.exe", "evidence.name"}, NameCase{"src/k.cubin", "evidence.name"},
        NameCase{"src/k.fatbin", "evidence.name"}, NameCase{"src/k.ptx", "evidence.name"},
        NameCase{"src/k.pyc", "evidence.name"}, NameCase{"src/k.pyo", "evidence.name"},
        NameCase{"src/__pycache__/k.py", "evidence.name"}, NameCase{"src/k.ttgir", "evidence.name"},
        NameCase{"src/k.ll", "evidence.name"}, NameCase{"src/a.out", "evidence.name"},
        NameCase{"src/CMakeFiles/x.txt", "evidence.name"}, NameCase{"src/.triton/cache/k.py", "evidence.name"},
        NameCase{"src/kzoo_kernel.egg-info/PKG-INFO", "evidence.name"},
        // archives
        NameCase{"src/src.zip", "evidence.name"}, NameCase{"src/s.tar", "evidence.name"},
        NameCase{"src/s.gz", "evidence.name"}, NameCase{"src/s.tgz", "evidence.name"},
        NameCase{"src/s.bz2", "evidence.name"}, NameCase{"src/s.xz", "evidence.name"},
        NameCase{"src/s.zst", "evidence.name"}, NameCase{"src/s.7z", "evidence.name"},
        NameCase{"src/s.rar", "evidence.name"}, NameCase{"src/k-1.0-py3-none-any.whl", "evidence.name"},
        NameCase{"src/k.egg", "evidence.name"}, NameCase{"src/s.tar.anything", "evidence.name"},
        // logs, traces, profiles
        NameCase{"src/build.log", "evidence.name"}, NameCase{"src/run.out", "evidence.name"},
        NameCase{"src/run.err", "evidence.name"}, NameCase{"src/k.trace", "evidence.name"},
        NameCase{"src/p.nsys-rep", "evidence.name"}, NameCase{"src/p.ncu-rep", "evidence.name"},
        NameCase{"src/p.qdrep", "evidence.name"}, NameCase{"src/p.sqlite", "evidence.name"},
        NameCase{"src/p.db", "evidence.name"}, NameCase{"src/p.prof", "evidence.name"},
        NameCase{"src/p.pstats", "evidence.name"}, NameCase{"src/nohup.out", "evidence.name"},
        NameCase{"src/core.4242", "evidence.name"}, NameCase{"src/.ninja_log", "evidence.name"},
        NameCase{"src/CMakeCache.txt", "evidence.name"}, NameCase{"stdout.txt", "evidence.name"},
        NameCase{"src/results.md", "evidence.name"}, NameCase{"src/nvidia-smi.txt", "evidence.name"},
        NameCase{"src/collect_env.txt", "evidence.name"}, NameCase{"src/timings", "evidence.name"},
        // notebooks, media, reports
        NameCase{"src/explore.ipynb", "evidence.name"}, NameCase{"src/plot.png", "evidence.name"},
        NameCase{"src/plot.JPG", "evidence.name"}, NameCase{"src/plot.svg", "evidence.name"},
        NameCase{"src/paper.pdf", "evidence.name"}, NameCase{"src/report.html", "evidence.name"},
        // metadata other than the two authored files
        NameCase{"src/config.yaml", "evidence.metadata"}, NameCase{"src/config.yml", "evidence.metadata"},
        NameCase{"src/trace.json", "evidence.metadata"}, NameCase{"src/results.csv", "evidence.metadata"},
        NameCase{"src/results.tsv", "evidence.metadata"}, NameCase{"src/pyproject.toml", "evidence.metadata"},
        NameCase{"src/report.xml", "evidence.metadata"}, NameCase{"src/events.jsonl", "evidence.metadata"},
        NameCase{".kernel_package/desc.yml", "evidence.metadata"},
        NameCase{".kernel_package/extra.yaml", "evidence.metadata"}, NameCase{"desc.yaml", "evidence.metadata"}));

TEST(EvidenceName, TheTwoAuthoredMetadataFilesAreAllowed) {
  EXPECT_TRUE(scan(".kernel_package/desc.yaml", "schema_version: \"1\"\nname: softmax\n").empty());
  EXPECT_TRUE(scan(".kernel_package/bench_result.yaml", "schema_version: \"1\"\nkernel_id: a/b\ncases: []\n").empty());
}

TEST(EvidenceName, MessagesNameTheFileAndTheFix) {
  auto vs = scan("src/weights.pt", "x");
  ASSERT_FALSE(vs.empty());
  EXPECT_EQ(vs[0].path, "pkg/src/weights.pt");
  EXPECT_NE(vs[0].detail.find(".pt"), std::string::npos) << vs[0].detail;
  EXPECT_NE(vs[0].detail.find("build_test_env.py"), std::string::npos) << vs[0].detail;
}

TEST(EvidenceName, OrdinarySourceAndBuildNamesPass) {
  for (const char* p : {"src/kernel.py", "src/kernel.cu", "src/kernel.cuh", "src/host.cpp", "src/k.h", "src/k.hpp",
                        "README.md", "LICENSE", "LICENSE.txt", "src/CMakeLists.txt", "src/setup.py", "src/Makefile",
                        ".gitignore", "src/__init__.py", "src/ops/out_proj.py", "src/build/notes.md",
                        "src/binary_search.cu", "src/logits.py", "src/output_layer.py"}) {
    EXPECT_TRUE(scan(p, "x = 1\n").empty()) << p << "\n" << rules(scan(p, "x = 1\n"));
  }
}

// ------------------------------------------------------------ by magic

struct MagicCase {
  const char* label;
  std::string bytes;
  const char* as;  // the innocent name it hides under
};

class RefusedByMagic : public ::testing::TestWithParam<MagicCase> {};

TEST_P(RefusedByMagic, WhateverItIsCalled) {
  auto vs = scan(GetParam().as, GetParam().bytes);
  EXPECT_TRUE(has_rule(vs, "evidence.magic")) << GetParam().label << "\n" << rules(vs);
}

std::string le64(std::uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A torch.save() file is a zip whose first entry is "archive/data.pkl".
std::string torch_save_like() {
  return "PK\x03\x04\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
         "\x10\x00\x00\x00"s +
         "archive/data.pkl" + "\x80\x02}q\x00."s;
}

INSTANTIATE_TEST_SUITE_P(
    EvidenceMagic, RefusedByMagic,
    ::testing::Values(
        MagicCase{"torch.save zip", torch_save_like(), "src/kernel.py"},
        MagicCase{"empty zip", "PK\x05\x06"s + std::string(18, '\0'), "src/notes.md"},
        MagicCase{"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"s, "src/kernel.cu"},
        MagicCase{"zstd", "\x28\xb5\x2f\xfd\x04\x00"s, "src/a.txt"},
        MagicCase{"xz", "\xfd" "7zXZ\x00\x00\x04"s, "src/a.txt"},
        MagicCase{"bzip2", "BZh91AY&SY\x01\x02"s, "src/a.txt"},
        MagicCase{"7z", "7z\xbc\xaf\x27\x1c\x00\x04"s, "src/a.txt"},
        MagicCase{"rar", "Rar!\x1a\x07\x01\x00"s, "src/a.txt"},
        MagicCase{"ELF", "\x7f" "ELF\x02\x01\x01\x00"s + std::string(56, '\0'), "src/kernel.cu"},
        MagicCase{"Mach-O 32 BE", "\xfe\xed\xfa\xce\x00\x00\x00\x07"s, "src/k.cpp"},
        MagicCase{"Mach-O 64 BE", "\xfe\xed\xfa\xcf\x00\x00\x00\x07"s, "src/k.cpp"},
        MagicCase{"Mach-O 32 LE", "\xce\xfa\xed\xfe\x07\x00\x00\x00"s, "src/k.cpp"},
        MagicCase{"Mach-O 64 LE", "\xcf\xfa\xed\xfe\x07\x00\x00\x01"s, "src/k.cpp"},
        MagicCase{"PE", "MZ\x90\x00\x03\x00\x00\x00"s, "src/k.py"},
        MagicCase{"ar", "!<arch>\nkernel.o/       0           0     0     644     1024      `\n"s, "src/k.txt"},
        MagicCase{"numpy", "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"s,
                  "src/golden.txt"},
        MagicCase{"safetensors", le64(60) + R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})" +
                                     std::string(8, '\x3f'),
                  "src/kernel.py"},
        MagicCase{"HDF5", "\x89HDF\r\n\x1a\n\x00\x00"s, "src/k.py"},
        MagicCase{"pickle p2", "\x80\x02]q\x00(K\x01K\x02e."s, "src/helpers.py"},
        MagicCase{"pickle p4", "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00]\x94."s, "src/helpers.py"},
        MagicCase{"pickle p0 text", "(lp0\nI1\naI2\naI3\na."s, "src/table.py"},
        MagicCase{"pickle p0 numpy", "cnumpy.core.multiarray\n_reconstruct\np0\n(tRp1\n."s, "src/table.py"},
        MagicCase{"PNG", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"s, "src/kernel.py"},
        MagicCase{"JPEG", "\xff\xd8\xff\xe0\x00\x10JFIF"s, "src/kernel.py"},
        MagicCase{"GIF", "GIF89a\x01\x00\x01\x00"s, "src/kernel.py"},
        MagicCase{"PDF (all ASCII)", "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n"s, "src/notes.md"},
        MagicCase{"SQLite", "SQLite format 3\x00\x10\x00\x01\x01"s, "src/notes.txt"},
        MagicCase{"fatbin", "\x50\xed\x55\xba\x01\x00\x10\x00"s, "src/kernel.cu"},
        MagicCase{"fatbin wrapper", "\xb1\x43\x62\x46\x01\x00\x00\x00"s, "src/kernel.cu"},
        MagicCase{"GGUF", "GGUF\x03\x00\x00\x00"s, "src/kernel.py"},
        MagicCase{"Parquet (ASCII magic)", "PAR1 and then pages"s, "src/notes.md"},
        MagicCase{"pyc", "\xa7\x0d\x0d\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xe3"s, "src/k.py"}));

TEST(EvidenceMagic, TextThatMerelyStartsLikeAMagicDoesNotTrip) {
  EXPECT_FALSE(has_rule(scan("src/k.py", "MZ is the name of this module\n"), "evidence.magic"));
  EXPECT_FALSE(has_rule(scan("src/k.py", "BZh9 is a bzip2 header we parse\n"), "evidence.magic"));
  EXPECT_FALSE(has_rule(scan("README.md", "(I think) this kernel is fast.\n"), "evidence.magic"));
  EXPECT_FALSE(has_rule(scan("src/k.cpp", "int main(){return 0;}\n"), "evidence.magic"));
}

// ------------------------------------------------------------ text validity

TEST(EvidenceBinary, NulBytesAreBinary) {
  auto vs = scan("src/kernel.py", "x = 1\n\x00\x00\x00"s);
  ASSERT_TRUE(has_rule(vs, "evidence.binary")) << rules(vs);
  EXPECT_EQ(vs.back().pointer, "line 2");
}

TEST(EvidenceBinary, Utf16IsBinary) {
  std::string utf16 = "\xff\xfe"s;
  for (char c : std::string("import torch\n")) utf16 += std::string(1, c) + '\0';
  EXPECT_TRUE(has_rule(scan("src/kernel.py", utf16), "evidence.binary"));
}

TEST(EvidenceBinary, InvalidUtf8InAllItsFormsIsBinary) {
  for (const std::string& bad : {"caf\xe9\n"s, "\xc0\xaf overlong slash\n"s, "\xed\xa0\x80 surrogate\n"s,
                                 "\xf4\x90\x80\x80 beyond U+10FFFF\n"s, "truncated \xe2\x82"s, "\x80 stray\n"s}) {
    EXPECT_TRUE(has_rule(scan("src/kernel.py", bad), "evidence.binary")) << bad;
  }
}

TEST(EvidenceBinary, ControlCharactersAreBinaryIncludingAnsiColour) {
  EXPECT_TRUE(has_rule(scan("src/notes.md", "\x1b[32mPASSED\x1b[0m\n"s), "evidence.binary"));
  EXPECT_TRUE(has_rule(scan("src/notes.md", "bell\x07\n"s), "evidence.binary"));
  EXPECT_TRUE(has_rule(scan("src/notes.md", "del\x7f\n"s), "evidence.binary"));
  EXPECT_TRUE(has_rule(scan("src/notes.md", "c1 \xc2\x85 control\n"s), "evidence.binary"));
  // Protobuf wire format (ONNX has no magic number): field tags are control bytes.
  EXPECT_TRUE(has_rule(scan("src/model.txt", "\x08\x07\x12\x07pytorch\x1a\x05" "2.1.0"s), "evidence.binary"));
}

TEST(EvidenceBinary, Utf8TextTabsFormFeedsCrlfAndABomAreText) {
  EXPECT_TRUE(scan("src/k.py", "\xef\xbb\xbf# caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xc2\xb5s \xf0\x9f\x9a\x80\r\n"
                               "\tx = 1\f\n"s)
                  .empty());
  EXPECT_TRUE(scan("src/empty.py", "").empty());
}

// ------------------------------------------------------------ caps

TEST(EvidenceCaps, FilesOverTheSizeCapAreRefused) {
  EvidenceLimits small;
  small.max_source_bytes = 1000;
  std::string src;
  while (src.size() <= 1000) src += "x = 1\n";
  auto vs = scan("src/kernel.py", src, small);
  EXPECT_TRUE(has_rule(vs, "evidence.too-large")) << rules(vs);
  EXPECT_TRUE(scan("src/kernel.py", src.substr(0, 996), small).empty());
}

TEST(EvidenceCaps, OverlongLinesAreRefusedWithTheLineNumber) {
  std::string src = "x = 1\ny = '" + std::string(17000, 'a') + "'\n";
  auto vs = scan("src/kernel.py", src);
  ASSERT_TRUE(has_rule(vs, "evidence.long-line")) << rules(vs);
  for (const auto& v : vs) {
    if (v.rule == "evidence.long-line") {
      EXPECT_EQ(v.pointer, "line 2");
    }
  }
  EXPECT_FALSE(has_rule(scan("src/kernel.py", "y = '" + std::string(2000, 'a') + "'\n"), "evidence.long-line"));
}

}  // namespace
}  // namespace kzoo::package
