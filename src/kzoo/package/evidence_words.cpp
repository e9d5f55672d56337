#include "kzoo/package/evidence_words.hpp"

#include <array>

namespace kzoo::package::evidence_detail {

namespace {

// What ends a word (evidence_words.hpp).
constexpr std::array<bool, 256> kWordBreaks = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : sv(" \t\f\v,;()[]{}=:\"'<>|`*!?\\")) t[c] = true;
  return t;
}();

}  // namespace

// The words of one line, with sentence punctuation and approximation marks
// ("~0.18", "≈2 ms") taken off their ends.
void split_words(sv line, std::vector<Word>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && kWordBreaks[static_cast<unsigned char>(line[i])]) ++i;
    std::size_t j = i;
    while (j < line.size() && !kWordBreaks[static_cast<unsigned char>(line[j])]) ++j;
    sv w = line.substr(i, j - i);
    std::size_t at = i;
    i = j;
    while (!w.empty() && (w.front() == '~' || w.front() == '@' || w.front() == '#')) w.remove_prefix(1), ++at;
    if (w.size() >= 3 && w.substr(0, 3) == "\xe2\x89\x88") w.remove_prefix(3), at += 3;  // ≈
    while (!w.empty() && (w.back() == '.' || w.back() == '~')) w.remove_suffix(1);
    if (!w.empty()) out.push_back({w, at});
  }
}

bool starts_like_number(sv w) {
  return !w.empty() && (is_digit(w[0]) || (w[0] == '.' && w.size() > 1 && is_digit(w[1])));
}

// GPUs by name: "on an H200" says where a figure was taken.
const WordSet& gpu_names() {
  static const WordSet s{"h100", "h200", "h800", "a100", "a800", "a10", "a10g", "a30", "a40", "l4", "l40", "l40s",
                         "v100", "t4", "b100", "b200", "gb200", "gh200", "mi250", "mi250x", "mi300", "mi300x",
                         "mi325x", "rtx", "4090", "3090", "5090", "a6000", "h20"};
  return s;
}

// "550.54.15", "12.4", "2.3.0+cu121", "v2.3.0", "V12.4.131"
bool is_version(sv w) {
  if (!w.empty() && (w[0] == 'v' || w[0] == 'V')) w.remove_prefix(1);
  if (w.empty() || !is_digit(w[0])) return false;
  std::size_t dots = 0, i = 0;
  while (i < w.size() && (is_digit(w[i]) || w[i] == '.')) dots += w[i++] == '.';
  if (dots == 0 || w[i - 1] == '.') return false;
  return i == w.size() || w[i] == '+' || w[i] == '-' || w[i] == 'a' || w[i] == 'b' || w[i] == 'r';
}

bool contains_ci(sv hay, sv needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  return false;
}

}  // namespace kzoo::package::evidence_detail
