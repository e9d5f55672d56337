// The generated-evidence-free policy of the kernel_package seed, judged by
// name AND by content: renaming a tensor dump to kernel.py does not make it
// source. A file passes only if it is authored text: UTF-8, no NULs, not a
// known binary format by magic number, not a tensor/weight/archive/object/
// profiler file by name, not a log or table of results by content, and
// within the size caps. The only YAML/JSON files allowed are the authored
// metadata (.kernel_package/desc.yaml, .kernel_package/bench_result.yaml).
#pragma once

#include <cstdint>
#include <string>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::package {

struct EvidenceLimits {
  std::uint64_t max_source_bytes = 1u << 20;  // any one source file
  std::uint64_t max_line_bytes = 16u << 10;   // one line of source (minified/encoded data)
};

// Rules (all "evidence.*"): evidence.name (extension or name of a data, weight,
// object, archive, log, trace or profile file), evidence.binary (NUL bytes,
// invalid UTF-8, control characters), evidence.magic (a known binary format's
// magic number: zip/pt, gzip, zstd, xz, bz2, numpy, safetensors header, HDF5,
// ELF, Mach-O, PE, ar, pickle, PNG/JPEG/..., SQLite, ONNX/protobuf-ish...),
// evidence.encoded-blob (long base64/hex runs, hex dumps, thousands of
// pasted number literals), evidence.log (compiler, build, benchmark,
// profiler, crash or environment/census output), evidence.table (CSV/TSV-like
// tables of numbers, or results tables in Markdown/text/box drawing),
// evidence.compiled (compiler output that is text: PTX, SASS, LLVM/Triton IR,
// generated assembly), evidence.metadata (YAML/JSON/CSV/TOML/XML by name, or
// JSON/XML/YAML-like/trace content, other than the authored metadata),
// evidence.summary (summarised measurements in any wording: measured figures
// in prose or comments, shapes paired with results, timing literals in
// code), evidence.tuning (per-shape results of a tuning run), evidence.census
// (driver, library builds, GPU model, clocks, CPU, OS of a machine),
// evidence.too-large, evidence.long-line. ONNX/protobuf has no magic number:
// it is caught by name and, since its wire format is full of control bytes,
// by evidence.binary. A file may break several rules; each is reported.
// `display_path` is used in messages.
Violations scan_file_for_evidence(const PackageFile& file, const std::string& display_path,
                                  const EvidenceLimits& limits = {});

}  // namespace kzoo::package
