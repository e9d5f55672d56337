#include "kzoo/package/evidence_lines.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <set>
#include <vector>

namespace kzoo::package::evidence_detail {

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

std::string lower(sv s) {
  std::string out(s);
  for (char& c : out) c = lower_ascii(c);
  return out;
}

std::string line_ptr(std::size_t index) { return "line " + std::to_string(index + 1); }

// Comment and docstring markers are peeled off so that a log or table pasted
// into a comment is judged like the same text in a file of its own.
sv strip_comment(sv line) {
  sv t = trim(line);
  for (sv p : {sv("\"\"\""), sv("'''"), sv("///"), sv("//"), sv("/*"), sv("#"), sv("* "), sv("--")}) {
    if (starts_with(t, p)) {
      t.remove_prefix(p.size());
      break;
    }
  }
  if (t == "*" || t == "*/") return {};
  return trim(t);
}

// A number, optionally signed, decimal/float/hex, optionally followed by a
// unit or percent sign: "12", "-3.5e-4", "0x1f", "1.53x", "0.12ms", "87%".
// **1.5**, `1.5`, "1.5" (quoted CSV), (1.0) (pytest-benchmark ratios)
sv strip_decoration(sv cell) {
  sv c = trim(cell);
  while (!c.empty() && is_one_of(c.front(), "*`\"'(")) c.remove_prefix(1);
  while (!c.empty() && is_one_of(c.back(), "*`\"')")) c.remove_suffix(1);
  return c;
}

bool is_numeric_cell(sv cell) {
  sv c = strip_decoration(cell);
  if (c.empty()) return false;
  std::string l = lower(c);
  if (l == "nan" || l == "inf" || l == "-inf" || l == "+inf") return true;
  std::size_t i = 0;
  if (l[i] == '+' || l[i] == '-') ++i;
  if (l.compare(i, 2, "0x") == 0) {
    std::size_t j = i + 2;
    while (j < l.size() && is_hex(l[j])) ++j;
    return j > i + 2 && j == l.size();
  }
  std::size_t digits = 0;
  while (i < l.size() && is_digit(l[i])) ++i, ++digits;
  // 1,234,567 (profilers print thousands separators)
  if (digits >= 1 && digits <= 3) {
    while (i + 3 < l.size() && l[i] == ',' && is_digit(l[i + 1]) && is_digit(l[i + 2]) && is_digit(l[i + 3]) &&
           (i + 4 == l.size() || !is_digit(l[i + 4])))
      i += 4, digits += 3;
  }
  if (i < l.size() && l[i] == '.') {
    ++i;
    while (i < l.size() && is_digit(l[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < l.size() && l[i] == 'e' && i + 1 < l.size() &&
      (is_digit(l[i + 1]) || ((l[i + 1] == '-' || l[i + 1] == '+') && i + 2 < l.size() && is_digit(l[i + 2])))) {
    i += 2;
    while (i < l.size() && is_digit(l[i])) ++i;
  }
  sv unit = sv(l).substr(i);
  unit = trim(unit);
  static const std::set<sv> units = {"",      "%",     "x",      "ms",      "us",     "\xc2\xb5s", "ns",
                                     "s",     "gb/s",  "tb/s",   "gib/s",   "tflops", "gflops",    "tflop/s",
                                     "gflop/s", "mb/s", "it/s"};
  return units.count(unit) > 0;
}

bool is_time_or_rate_unit(sv token) {
  static const std::set<std::string> units = {"ms",     "msec",   "us",      "\xc2\xb5s", "usec",   "ns",
                                              "sec",    "secs",   "seconds", "gb/s",      "tb/s",   "gib/s",
                                              "mb/s",   "tflops", "gflops",  "tflop/s",   "gflop/s", "it/s",
                                              "cycles", "tokens/s"};
  return units.count(lower(token)) > 0;
}

// Header words that mark a table as one of measurements.
bool has_perf_keyword(sv header) {
  static const std::set<std::string> words = {
      "ms",       "us",      "\xc2\xb5s", "ns",      "sec",     "secs",     "seconds",  "time",   "times",
      "latency",  "throughput", "gb/s",   "tb/s",    "gbps",    "gib/s",    "tflops",   "tflop/s", "gflops",
      "gflop/s",  "flops",   "speedup",   "bandwidth", "duration", "elapsed", "runtime", "it/s",   "median",
      "mean",     "p50",     "p90",       "p95",     "p99",     "stddev",   "std",      "avg",    "average",
      "cycles",   "speed-up", "tok/s",    "tokens/s", "walltime"};
  std::string h = lower(header);
  std::string word;
  auto flush = [&]() {
    bool hit = words.count(word) > 0;
    word.clear();
    return hit;
  };
  for (char c : h) {
    unsigned char u = static_cast<unsigned char>(c);
    if (is_alpha(c) || is_digit(c) || c == '/' || c == '%' || c == '-' || u >= 0x80) {
      word += c;
    } else if (flush()) {
      return true;
    }
  }
  return flush();
}

bool is_rule_line(sv s) {
  s = trim(s);
  return s.size() >= 8 && std::all_of(s.begin(), s.end(), [](char c) { return is_one_of(c, "-=+|_:* ~"); });
}

std::vector<sv> split_cells(sv line, char d) {
  std::vector<sv> cells;
  if (d == ' ') {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      std::size_t j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
      if (j > i) cells.push_back(line.substr(i, j - i));
      i = j;
    }
    return cells;
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
  return cells;
}

}  // namespace kzoo::package::evidence_detail
