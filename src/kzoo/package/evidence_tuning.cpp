// evidence.tuning: the per-shape results of a tuning run (a mapping from
// exact shapes to block sizes, warps and stages), as opposed to the
// candidates an autotuner is given (a triton.autotune config list) or a rule
// computed from the shape. See evidence_summary.cpp for the family.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kzoo/package/evidence_lines.hpp"
#include "kzoo/package/evidence_numbers.hpp"
#include "kzoo/package/evidence_text.hpp"
#include "kzoo/package/evidence_words.hpp"

namespace kzoo::package::evidence_detail {
namespace {

// ---------------------------------------------------------------- tuning results

// "BLOCK_SIZE_M", "num_warps", "num_stages", "GROUP_SIZE_M", "SPLIT_K"...
bool is_tuning_key(sv w) {
  static const std::array<sv, 10> parts = {"block", "warps", "stages", "split_k", "group_size",
                                           "group_m", "num_ctas", "waves_per_eu", "tile_", "kpack"};
  if (w.size() < 4 || w.size() > 40) return false;
  for (sv p : parts) {
    if (w.size() < p.size()) continue;
    for (std::size_t i = 0; i + p.size() <= w.size(); ++i)
      if (iequals(w.substr(i, p.size()), p)) return true;
  }
  return false;
}

// A line that opens one entry of a mapping keyed by an exact shape: "1": {,
// "4096": {, (4096, 4096): {, "4096x4096": dict(, 4096: triton.Config(,
// "M=4096,N=4096": {. The key must be followed by ':' and a value that
// opens on this line or the next.
bool opens_shape_entry(sv t) {
  // C++ initialisers nest the key: {{4096, 4096}, {128, 256, 64, 3}},
  if (starts_with(t, "{{") || starts_with(t, "{(")) t.remove_prefix(1);
  if (t.empty()) return false;
  std::size_t i = 0;
  const char open = t[0];
  if (open == '"' || open == '\'') {
    const std::size_t close = t.find(open, 1);
    if (close == sv::npos || close == 1) return false;
    const sv key = t.substr(1, close - 1);
    // digits, x, =, commas, underscores and single letters (M=4096,N=...; m4096_n512)
    std::size_t digits = 0;
    for (char c : key) {
      if (is_digit(c)) ++digits;
      else if (!is_one_of(c, "xX=,_ -:") && !is_alpha(c)) return false;
    }
    if (digits == 0 || digits * 2 < key.size()) return false;
    i = close + 1;
  } else if (open == '(' || open == '{' || open == '[') {
    const char close_c = open == '(' ? ')' : open == '{' ? '}' : ']';
    const std::size_t close = t.find(close_c);
    if (close == sv::npos) return false;
    std::size_t ints = 0;
    for (std::size_t k = 1; k < close; ++k) {
      const char c = t[k];
      if (is_digit(c)) {
        const NumberLiteral n = read_number(t.substr(k));
        if (n.is_float) return false;
        ++ints;
        k += n.length - 1;
      } else if (!is_one_of(c, ", ")) {
        return false;
      }
    }
    if (ints < 2) return false;
    i = close + 1;
  } else if (is_digit(open)) {
    const NumberLiteral n = read_number(t);
    if (n.is_float || n.hex) return false;
    i = n.length;
  } else {
    return false;
  }
  while (i < t.size() && t[i] == ' ') ++i;
  if (i >= t.size() || (t[i] != ':' && t[i] != ',')) return false;
  // C++ initialisers use ',' after the key.
  if (t[i] == ',' && open != '{') return false;
  ++i;
  while (i < t.size() && t[i] == ' ') ++i;
  const sv rest = t.substr(i);
  return rest.empty() || rest[0] == '{' || rest[0] == '(' || rest[0] == '[' || starts_with(rest, "dict(") ||
         starts_with(rest, "triton.Config(") || starts_with(rest, "Config(");
}

// Whether a line names a tuning parameter ("BLOCK_SIZE_M": 64, num_warps=4).
bool has_tuning_key(sv t, std::vector<Word>& words) {
  split_words(t, words);
  for (const Word& w : words)
    if (!starts_like_number(w.text) && is_tuning_key(w.text)) return true;
  return false;
}

}  // namespace

std::optional<Finding> find_tuning_results(const TextLines& text) {
  const std::vector<sv>& lines = text.stripped;
  std::vector<Word> words;
  std::size_t entries = 0, first = 0;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const sv t = lines[n];
    if (t.empty() || !(is_digit(t[0]) || is_one_of(t[0], "\"'({["))) continue;
    if (!opens_shape_entry(t)) continue;
    // The entry's value names tuning parameters, on this line or the next
    // few, or a header above it in the same block does ("// {M, N} ->
    // {BLOCK_M, BLOCK_N, STAGES}").
    bool tuning = has_tuning_key(t, words);
    for (std::size_t k = n + 1; k < lines.size() && k <= n + 4 && !tuning; ++k) tuning = has_tuning_key(lines[k], words);
    for (std::size_t k = n; k-- > 0 && n - k <= 40 && !tuning && !lines[k].empty();)
      tuning = has_tuning_key(lines[k], words);
    if (!tuning) continue;
    if (entries++ == 0) first = n;
  }
  if (entries < 4) return std::nullopt;
  return Finding{"evidence.tuning", line_ptr(first),
                 "maps " + std::to_string(entries) +
                     " exact shapes to tuned parameters (block sizes, warps, stages; e.g. \"" +
                     std::string(trim(lines[first]).substr(0, 70)) +
                     "\"): the per-shape results of a tuning run are generated evidence"};
}

}  // namespace kzoo::package::evidence_detail
