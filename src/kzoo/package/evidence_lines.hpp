// Line and cell helpers shared by the text detectors of the evidence-free
// policy (evidence_text.cpp, evidence_table.cpp). Internal to package/.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kzoo::package::evidence_detail {

using sv = std::string_view;

// Lines without their "\n" / "\r\n".
std::vector<sv> split_lines(sv text);

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_b64(char c) {
  return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '-';
}
// The first-byte test before the compare: the detectors try dozens of
// prefixes on every line, and most fail on the first byte.
inline bool starts_with(sv s, sv p) {
  return s.size() >= p.size() && (p.empty() || s.front() == p.front()) && s.substr(0, p.size()) == p;
}
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
inline bool ends_with(sv s, sv p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

sv trim(sv s);
std::string lower(sv s);
// "line N" for the 0-based line index.
std::string line_ptr(std::size_t index);

// The line without indentation and a leading comment/docstring marker, so a
// log or table pasted into a comment is judged like the same text alone.
sv strip_comment(sv line);
// A cell without Markdown emphasis, backticks, quotes or parentheses.
sv strip_decoration(sv cell);
// A number, optionally signed, decimal/float/hex/thousands-separated,
// optionally followed by a unit or percent: "12", "-3.5e-4", "0x1f",
// "1,234,567", "1.53x", "0.12ms", "87%", "nan".
bool is_numeric_cell(sv cell);
bool is_time_or_rate_unit(sv token);
// Header words that mark a table as one of measurements (time, ms, GB/s...).
bool has_perf_keyword(sv header);
// A ruler: 8+ characters of - = + | _ : * ~ and spaces.
bool is_rule_line(sv s);
// Whitespace-separated cells (d == ' ') or cells between separator `d`
// (for '|', outer pipes dropped).
std::vector<sv> split_cells(sv line, char d);

}  // namespace kzoo::package::evidence_detail
