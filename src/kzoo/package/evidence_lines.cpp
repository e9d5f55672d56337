#include "kzoo/package/evidence_lines.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <vector>

namespace kzoo::package::evidence_detail {

// ---------------------------------------------------------------- prefixes and words

PrefixSet::PrefixSet(std::initializer_list<sv> prefixes) {
  std::vector<std::size_t> order(prefixes.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  const sv* list = prefixes.begin();
  // Group by first byte; stable, so list order survives within a group and
  // the first match in a group is the first match in the list.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return static_cast<unsigned char>(list[a].front()) < static_cast<unsigned char>(list[b].front());
  });
  for (std::size_t k : order) {
    assert(!list[k].empty());
    prefixes_.push_back(list[k]);
    list_index_.push_back(k);
  }
  std::size_t k = 0;
  for (std::size_t b = 0; b < 256; ++b) {
    bucket_[b] = static_cast<std::uint16_t>(k);
    while (k < prefixes_.size() && static_cast<unsigned char>(prefixes_[k].front()) == b) ++k;
  }
  bucket_[256] = static_cast<std::uint16_t>(k);
}

std::size_t PrefixSet::index_of_match(sv s) const {
  if (s.empty()) return sv::npos;
  const auto b = static_cast<unsigned char>(s.front());
  for (std::size_t k = bucket_[b]; k < bucket_[b + 1]; ++k)
    if (s.size() >= prefixes_[k].size() && s.compare(0, prefixes_[k].size(), prefixes_[k]) == 0) return list_index_[k];
  return sv::npos;
}

sv PrefixSet::first_match(sv s) const {
  if (s.empty()) return {};
  const auto b = static_cast<unsigned char>(s.front());
  for (std::size_t k = bucket_[b]; k < bucket_[b + 1]; ++k)
    if (s.size() >= prefixes_[k].size() && s.compare(0, prefixes_[k].size(), prefixes_[k]) == 0) return prefixes_[k];
  return {};
}

WordSet::WordSet(std::initializer_list<sv> lower_case_words) {
  for (sv w : lower_case_words) {
    assert(w.size() <= kLongest);
    by_length_[w.size()].push_back(w);
  }
}

bool WordSet::contains_ci(sv word) const {
  if (word.size() > kLongest) return false;
  for (sv w : by_length_[word.size()])
    if (w.empty() || (lower_ascii(word[0]) == w[0] && iequals(word.substr(1), w.substr(1)))) return true;
  return false;
}

// ---------------------------------------------------------------- lines

std::vector<sv> split_lines(sv text) {
  std::vector<sv> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    sv line = text.substr(start, nl == sv::npos ? sv::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == sv::npos) break;
    start = nl + 1;
  }
  return lines;
}

sv trim(sv s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string line_ptr(std::size_t index) { return "line " + std::to_string(index + 1); }

// Comment and docstring markers are peeled off so that a log or table pasted
// into a comment is judged like the same text in a file of its own.
sv strip_comment(sv line) {
  static const PrefixSet markers{"\"\"\"", "'''", "///", "//", "/*", "#", "* ", "--"};
  sv t = trim(line);
  t.remove_prefix(markers.first_match(t).size());
  if (t == "*" || t == "*/") return {};
  return trim(t);
}

// ---------------------------------------------------------------- cells

// **1.5**, `1.5`, "1.5" (quoted CSV), (1.0) (pytest-benchmark ratios)
sv strip_decoration(sv cell) {
  sv c = trim(cell);
  while (!c.empty() && has_class(c.front(), char_class::kOpenDecoration)) c.remove_prefix(1);
  while (!c.empty() && has_class(c.back(), char_class::kCloseDecoration)) c.remove_suffix(1);
  return c;
}

namespace {

bool is_nan_or_inf(sv c) {
  return (c.size() == 3 && (iequals(c, "nan") || iequals(c, "inf"))) ||
         (c.size() == 4 && (iequals(c, "-inf") || iequals(c, "+inf")));
}

std::size_t skip_digits(sv s, std::size_t i, std::size_t& digits) {
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  return i;
}

}  // namespace

// Case-insensitive throughout ("1.5E-3", "0X1F", "12MS"), without a lowered
// copy: this runs on every cell and every token of every line.
bool is_numeric_cell(sv cell) {
  static const WordSet units{"",       "%",    "x",      "ms",     "us",      "\xc2\xb5s", "ns",   "s",   "gb/s",
                             "tb/s",   "gib/s", "tflops", "gflops", "tflop/s", "gflop/s",   "mb/s", "it/s"};
  sv c = strip_decoration(cell);
  if (c.empty()) return false;
  if (is_nan_or_inf(c)) return true;
  // Most cells are words: they fail here, before any parsing.
  if (!is_digit(c[0]) && !is_one_of(c[0], "+-.")) return false;
  std::size_t i = 0;
  if (c[i] == '+' || c[i] == '-') ++i;
  if (i + 1 < c.size() && c[i] == '0' && lower_ascii(c[i + 1]) == 'x') {
    std::size_t j = i + 2;
    while (j < c.size() && is_hex(c[j])) ++j;
    return j > i + 2 && j == c.size();
  }
  std::size_t digits = 0;
  i = skip_digits(c, i, digits);
  // 1,234,567 (profilers print thousands separators)
  if (digits >= 1 && digits <= 3) {
    while (i + 3 < c.size() && c[i] == ',' && is_digit(c[i + 1]) && is_digit(c[i + 2]) && is_digit(c[i + 3]) &&
           (i + 4 == c.size() || !is_digit(c[i + 4])))
      i += 4, digits += 3;
  }
  if (i < c.size() && c[i] == '.') i = skip_digits(c, i + 1, digits);
  if (digits == 0) return false;
  if (i < c.size() && lower_ascii(c[i]) == 'e' && i + 1 < c.size() &&
      (is_digit(c[i + 1]) || ((c[i + 1] == '-' || c[i + 1] == '+') && i + 2 < c.size() && is_digit(c[i + 2])))) {
    std::size_t exponent = 0;
    i = skip_digits(c, i + 2, exponent);
  }
  return units.contains_ci(trim(c.substr(i)));
}

std::size_t count_digits(sv s) {
  std::size_t n = 0;
  for (char c : s) n += is_digit(c) ? 1 : 0;
  return n;
}

namespace {

// "nan" or "inf" in any case, anywhere in `s`. `c | 0x20` lowers exactly
// the letters compared here (no other byte maps onto 'a', 'f', 'i' or 'n')
// without a branch: this runs on most lines of every file.
bool has_nan_or_inf(sv s) {
  auto low = [](char c) { return static_cast<char>(c | 0x20); };
  if (s.size() < 3) return false;
  if (low(s[0]) == 'n' && low(s[1]) == 'a' && low(s[2]) == 'n') return true;  // "nan" first: no byte before it
  // Every other match has a byte on each side of an 'n': the 'n' of "inf",
  // or the first 'n' of "nan".
  for (std::size_t p = 1; p + 1 < s.size(); ++p) {
    if (low(s[p]) != 'n') continue;
    const char after = low(s[p + 1]);
    if ((low(s[p - 1]) == 'i' && after == 'f') || (after == 'a' && p + 2 < s.size() && low(s[p + 2]) == 'n'))
      return true;
  }
  return false;
}

}  // namespace

bool may_hold_numbers(sv s, std::size_t k) { return count_digits(s) >= k || has_nan_or_inf(s); }

bool is_time_or_rate_unit(sv token) {
  static const WordSet units{"ms",     "msec",   "us",     "\xc2\xb5s", "usec",    "ns",      "sec",
                             "secs",   "seconds", "gb/s",  "tb/s",      "gib/s",   "mb/s",    "tflops",
                             "gflops", "tflop/s", "gflop/s", "it/s",    "cycles",  "tokens/s"};
  return units.contains_ci(token);
}

// Header words that mark a table as one of measurements.
bool has_perf_keyword(sv header) {
  static const WordSet words{
      "ms",       "us",         "\xc2\xb5s", "ns",        "sec",      "secs",    "seconds", "time",   "times",
      "latency",  "throughput", "gb/s",      "tb/s",      "gbps",     "gib/s",   "tflops",  "tflop/s", "gflops",
      "gflop/s",  "flops",      "speedup",   "bandwidth", "duration", "elapsed", "runtime", "it/s",   "median",
      "mean",     "p50",        "p90",       "p95",       "p99",      "stddev",  "std",     "avg",    "average",
      "cycles",   "speed-up",   "tok/s",     "tokens/s",  "walltime"};
  // A word: letters, digits, '/', '%', '-' and any non-ASCII byte ("µs").
  auto in_word = [](char c) {
    return is_alpha(c) || is_digit(c) || c == '/' || c == '%' || c == '-' || static_cast<unsigned char>(c) >= 0x80;
  };
  std::size_t i = 0;
  while (i < header.size()) {
    while (i < header.size() && !in_word(header[i])) ++i;
    std::size_t j = i;
    while (j < header.size() && in_word(header[j])) ++j;
    if (j > i && words.contains_ci(header.substr(i, j - i))) return true;
    i = j;
  }
  return false;
}

bool is_rule_line(sv s) {
  s = trim(s);
  return s.size() >= 8 && std::all_of(s.begin(), s.end(), [](char c) { return is_one_of(c, "-=+|_:* ~"); });
}

void split_cells(sv line, char d, std::vector<sv>& cells) {
  cells.clear();
  if (d == ' ') {
    for_each_word(line, [&](sv cell) {
      cells.push_back(cell);
      return true;
    });
    return;
  }
  sv s = line;
  if (d == '|') {
    s = trim(s);
    if (!s.empty() && s.front() == '|') s.remove_prefix(1);
    if (!s.empty() && s.back() == '|') s.remove_suffix(1);
  }
  std::size_t start = 0;
  while (true) {
    std::size_t p = s.find(d, start);
    cells.push_back(s.substr(start, p == sv::npos ? sv::npos : p - start));
    if (p == sv::npos) break;
    start = p + 1;
  }
}

TextLines split_text(sv text) {
  TextLines l;
  l.text = text;
  l.raw = split_lines(text);
  l.trimmed.reserve(l.raw.size());
  l.stripped.reserve(l.raw.size());
  l.digits.reserve(l.raw.size());
  l.nan_inf.reserve(l.raw.size());
  for (sv r : l.raw) {
    l.trimmed.push_back(trim(r));
    l.stripped.push_back(strip_comment(r));
    const std::size_t d = count_digits(r);
    l.digits.push_back(static_cast<std::uint32_t>(d));
    l.nan_inf.push_back(d < 3 && has_nan_or_inf(r) ? 1 : 0);
  }
  return l;
}

}  // namespace kzoo::package::evidence_detail
