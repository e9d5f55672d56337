// Words of a line as the summary, tuning and census detectors read them
// (evidence_summary.cpp, evidence_tuning.cpp, evidence_census.cpp). Internal
// to package/.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "kzoo/package/evidence_lines.hpp"

namespace kzoo::package::evidence_detail {

struct Word {
  sv text;
  std::size_t at;  // offset in the line
};

// The words of one line: split at spaces and , ; ( ) [ ] { } = : " ' < > | `
// * ! ? and kept whole across / % . - + (units "GB/s", versions
// "2.3.0+cu121", shapes "4096x4096"); sentence punctuation and approximation
// marks ("~0.18", "≈2 ms") are taken off their ends. `out` is cleared first.
void split_words(sv line, std::vector<Word>& out);

// A digit, or a '.' before one.
bool starts_like_number(sv w);

// Case-insensitive substring test (ASCII).
bool contains_ci(sv hay, sv needle);

// "550.54.15", "12.4", "2.3.0+cu121", "v2.3.0", "V12.4.131"
bool is_version(sv w);

// GPUs by name: "on an H200" says where a figure was taken.
const WordSet& gpu_names();

}  // namespace kzoo::package::evidence_detail
