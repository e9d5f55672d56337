// Content heuristics of the evidence-free policy for files that ARE valid
// UTF-8 text: is this text a log, a table of results, an encoded blob, or a
// metadata document wearing a source file's name? Internal to evidence.cpp;
// split out because each detector is a small parser of its own (tables in
// evidence_table.cpp, shared line/cell helpers in evidence_lines.hpp).
//
// The detectors are tuned to let authored source through (a Triton kernel
// with an autotune list, a CUDA file with a 256-entry lookup table, a README
// with a parameter table) and to catch what a run produces (compiler and
// profiler output, timestamped logs, tracebacks, CSV/TSV/Markdown/aligned
// tables of measurements, base64 or hex dumps, thousands of pasted numbers).
//
// Each detector takes the file's lines split once (TextLines): they all read
// the same trimmed and comment-stripped lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kzoo/package/evidence_lines.hpp"

namespace kzoo::package::evidence_detail {

// How a file's name says it should be read: code has comments, string
// literals and array initialisers that look like data; prose does not.
enum class TextKind { Code, Prose };

struct Finding {
  std::string rule;     // "evidence.log", "evidence.table", ...
  std::string pointer;  // "line N" where the evidence starts, or empty
  std::string detail;   // what was found (the caller appends the fix)
};

// Long base64/hex runs (one token, a column of wrapped lines, or \xNN
// escapes), hex dumps, runs of long space-free lines, and large embedded
// numeric arrays.
std::optional<Finding> find_encoded_blob(const TextLines& text);

// Compiler, build, benchmark, profiler, test-runner and environment output.
std::optional<Finding> find_log(const TextLines& text, TextKind kind);

// Tables of numbers: delimiter-separated (, tab ; |), Markdown, or
// whitespace-aligned columns.
std::optional<Finding> find_table(const TextLines& text, TextKind kind);

// Compiler output that is text: PTX modules, SASS disassembly, LLVM IR,
// Triton/MLIR IR, compiler-generated assembly.
std::optional<Finding> find_compiler_output(const TextLines& text);

// A JSON or XML document, or YAML-like key: value lines, in a file that is
// not one of the two authored metadata files.
std::optional<Finding> find_metadata_document(const TextLines& text, TextKind kind);

// Summarised measurements in any wording (evidence_summary.cpp): measured
// figures in prose or comments ("median 412.3 us", "78% of roofline",
// "1.53x faster"), lines pairing shapes with results, and code literals
// holding timings ("median_us": 412.3).
std::optional<Finding> find_summary(const TextLines& text, TextKind kind);

// Per-shape results of a tuning run (evidence_tuning.cpp): a mapping from
// exact shapes to block sizes, warps and stages (an autotune config list is
// not one).
std::optional<Finding> find_tuning_results(const TextLines& text);

// Hardware/software census records (evidence_census.cpp): driver version,
// exact library builds, GPU model and memory, clocks, CPU model, OS release.
std::optional<Finding> find_census(const TextLines& text);

}  // namespace kzoo::package::evidence_detail
