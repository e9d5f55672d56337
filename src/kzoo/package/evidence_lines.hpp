// Line and cell helpers shared by the text detectors of the evidence-free
// policy (evidence_text.cpp, evidence_table.cpp). Internal to package/.
//
// Every detector reads the same lines: a file's text is split, trimmed and
// stripped of comment markers once (TextLines) and handed to all of them.
// The helpers below take and return string_views and never allocate: they
// run on every line and every cell of every file of every upload.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kzoo::package::evidence_detail {

using sv = std::string_view;

// ---------------------------------------------------------------- characters

// Character classes by table: the detectors classify every byte of every file
// several times, and a chain of range tests per byte was a visible cost.
namespace char_class {
enum : std::uint8_t {
  kSpace = 1, kDigit = 2, kAlpha = 4, kHex = 8, kB64 = 16, kWord = 32,
  kOpenDecoration = 64,    // * ` " ' (  before a cell's value
  kCloseDecoration = 128,  // * ` " ' )  after it
};
}

inline constexpr std::array<std::uint8_t, 256> kCharClasses = [] {
  using namespace char_class;
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool digit = c >= '0' && c <= '9';
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    std::uint8_t m = 0;
    if (c == ' ' || c == '\t' || c == '\f' || c == '\v') m |= kSpace;
    if (digit) m |= kDigit;
    if (alpha) m |= kAlpha;
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) m |= kHex;
    if (alpha || digit || c == '+' || c == '/' || c == '=' || c == '_' || c == '-') m |= kB64;
    if (alpha || digit || c == '_') m |= kWord;
    if (c == '*' || c == '`' || c == '"' || c == '\'' || c == '(') m |= kOpenDecoration;
    if (c == '*' || c == '`' || c == '"' || c == '\'' || c == ')') m |= kCloseDecoration;
    t[static_cast<std::size_t>(c)] = m;
  }
  return t;
}();

inline bool has_class(char c, std::uint8_t mask) { return (kCharClasses[static_cast<unsigned char>(c)] & mask) != 0; }
// Space and tab, form feed, vertical tab: not CR or LF (lines are split first).
inline bool is_space(char c) { return has_class(c, char_class::kSpace); }
inline bool is_digit(char c) { return has_class(c, char_class::kDigit); }
inline bool is_alpha(char c) { return has_class(c, char_class::kAlpha); }
inline bool is_word(char c) { return has_class(c, char_class::kWord); }
inline bool is_hex(char c) { return has_class(c, char_class::kHex); }
// Base64 (both alphabets) and its padding.
inline bool is_b64(char c) { return has_class(c, char_class::kB64); }

// ASCII lower case: what std::tolower does in the "C" locale kzoo runs in,
// without the per-character call into libc.
inline char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
// Case-insensitive ASCII equality.
inline bool iequals(sv a, sv b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
  return true;
}
// Membership in a short set of characters (strchr without the call and
// without matching the terminating NUL).
inline bool is_one_of(char c, sv set) {
  for (char m : set)
    if (c == m) return true;
  return false;
}

// ---------------------------------------------------------------- prefixes and words

// The first-byte test before the compare: the detectors try dozens of
// prefixes on every line, and most fail on the first byte.
inline bool starts_with(sv s, sv p) {
  return s.size() >= p.size() && (p.empty() || s.front() == p.front()) && s.substr(0, p.size()) == p;
}
inline bool ends_with(sv s, sv p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

// A fixed list of prefixes bucketed by their first byte, so a line is
// compared only with the prefixes that start like it. first_match() answers
// as a loop over the list in its order would: the first prefix that matches.
// Built once (function-local statics); immutable, so safe to share between
// threads. It keeps views: the prefixes must outlive it (string literals).
class PrefixSet {
 public:
  PrefixSet(std::initializer_list<sv> prefixes);  // none may be empty
  // The first prefix (in list order) that `s` starts with; empty if none.
  sv first_match(sv s) const;
  // Its position in the list; npos if none.
  std::size_t index_of_match(sv s) const;

 private:
  std::vector<sv> prefixes_;                // grouped by first byte, list order within a group
  std::vector<std::size_t> list_index_;     // position of prefixes_[k] in the list
  std::array<std::uint16_t, 257> bucket_{};  // prefixes_[bucket_[b] .. bucket_[b + 1]) start with byte b
};

// A fixed set of lower-case words, looked up case-insensitively without
// building a lowered copy (units, measurement header words). Most words
// looked up are identifiers that are not in the set: they are turned away by
// length, then by first letter, before any comparison. Keeps views, like
// PrefixSet.
class WordSet {
 public:
  static constexpr std::size_t kLongest = 32;
  WordSet(std::initializer_list<sv> lower_case_words);  // each at most kLongest bytes
  bool contains_ci(sv word) const;

 private:
  std::array<std::vector<sv>, kLongest + 1> by_length_;
};

// ---------------------------------------------------------------- lines

// Lines without their "\n" / "\r\n".
std::vector<sv> split_lines(sv text);

sv trim(sv s);
// "line N" for the 0-based line index.
std::string line_ptr(std::size_t index);

// The line without indentation and a leading comment/docstring marker, so a
// log or table pasted into a comment is judged like the same text alone.
sv strip_comment(sv line);

// One file's text, split once for all detectors. raw[n], trimmed[n] and
// stripped[n] are views of the same line n of `text` (which must outlive it).
struct TextLines {
  sv text;
  std::vector<sv> raw;       // split_lines(text)
  std::vector<sv> trimmed;   // trim(raw[n])
  std::vector<sv> stripped;  // strip_comment(raw[n])
  std::vector<std::uint32_t> digits;  // count_digits(raw[n]): comment markers hold none
  std::vector<std::uint8_t> nan_inf;  // "nan"/"inf" in raw[n]; only looked for where digits[n] < 3
  std::size_t size() const { return raw.size(); }
  // may_hold_numbers(line n, k) for k <= 3, from the counts taken once.
  bool may_hold_numbers(std::size_t n, std::size_t k) const { return digits[n] >= k || nan_inf[n] != 0; }
};
TextLines split_text(sv text);

// ---------------------------------------------------------------- cells

// A cell without Markdown emphasis, backticks, quotes or parentheses.
sv strip_decoration(sv cell);
// A number, optionally signed, decimal/float/hex/thousands-separated,
// optionally followed by a unit or percent: "12", "-3.5e-4", "0x1f",
// "1,234,567", "1.53x", "0.12ms", "87%", "nan".
bool is_numeric_cell(sv cell);
bool is_time_or_rate_unit(sv token);
// Digits in `s` (a branch-free pass: cheaper than tokenizing a line that
// has none).
std::size_t count_digits(sv s);
// Whether `s` can hold `k` number cells or tokens: each has a digit ("0x1f"
// has its '0') or is nan/inf, so a line with fewer digits and no "nan" or
// "inf" cannot. Most lines of code cannot, and are not tokenized.
bool may_hold_numbers(sv s, std::size_t k);
// Header words that mark a table as one of measurements (time, ms, GB/s...).
bool has_perf_keyword(sv header);
// A ruler: 8+ characters of - = + | _ : * ~ and spaces.
bool is_rule_line(sv s);
// Whitespace-separated cells (d == ' ') or cells between separator `d`
// (for '|', outer pipes dropped), into `cells` (cleared first; passing the
// same vector for every line saves an allocation per line).
void split_cells(sv line, char d, std::vector<sv>& cells);

// Calls fn(cell) for each whitespace-separated cell of `line`, in order,
// until fn returns false. Returns false if fn stopped it.
template <typename Fn>
bool for_each_word(sv line, Fn&& fn) {
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i && !fn(line.substr(i, j - i))) return false;
    i = j;
  }
  return true;
}

}  // namespace kzoo::package::evidence_detail
