#include "kzoo/package/evidence_text.hpp"
#include "kzoo/package/evidence_lines.hpp"
#include "kzoo/package/evidence_numbers.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo::package::evidence_detail {
namespace {

// ---------------------------------------------------------------- blobs

constexpr std::size_t kBlobRun = 4096;          // characters of base64/hex
constexpr std::size_t kEscapeRun = 1024;        // consecutive \xNN escapes
constexpr std::size_t kMaxDataNumbers = 2048;   // literals in data-only lines
constexpr std::size_t kMaxPreciseFloats = 512;  // floats with >= 5 significant digits
// Floats with 3+ significant digits that are not binary fractions, in data
// lines no comment explains: pasted measurements ("0.4123, 1.2071, ...").
constexpr std::size_t kMaxUnexplainedFloats = 64;
// Doctest output (lines after ">>> " up to a blank line) shows a call's
// result by design: a larger allowance, counted apart.
constexpr std::size_t kMaxDoctestFloats = 256;

int char_classes(sv s) {
  bool up = false, lo = false, dg = false;
  for (char c : s) {
    up |= (c >= 'A' && c <= 'Z');
    lo |= (c >= 'a' && c <= 'z');
    dg |= is_digit(c);
  }
  return int(up) + int(lo) + int(dg);
}

// (1) One long token of base64/hex characters anywhere (a string literal, a
// comment, a bare line). A run longer than kBlobRun covers one of every
// kBlobRun + 1 consecutive positions, so only those positions are looked at,
// and a run is measured only where one holds a base64 character. Runs are
// still found in text order, so the first long one is the one reported.
std::optional<Finding> find_long_token(sv text) {
  constexpr std::size_t kStride = kBlobRun + 1;
  for (std::size_t p = 0; p < text.size(); p += kStride) {
    if (!is_b64(text[p])) continue;
    std::size_t start = p, end = p;
    while (start > 0 && is_b64(text[start - 1])) --start;
    while (end < text.size() && is_b64(text[end])) ++end;
    const std::size_t len = end - start;
    if (len > kBlobRun && char_classes(text.substr(start, len)) >= 2) {
      // '\n' is not base64: the run is on the line its first character is.
      const auto line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
      return Finding{"evidence.encoded-blob", line_ptr(line),
                     "holds a run of " + std::to_string(len) +
                         " base64/hex characters: encoded data (a tensor, weights or a binary) "
                         "is not source, whatever the file is called"};
    }
    p = end - end % kStride;  // the next position looked at is past this run
  }
  return std::nullopt;
}

// The line without quotes, separators, brackets and a string prefix (b"",
// r'', ...): what is left of one line of a wrapped base64 literal.
sv base64_core(sv t) {
  auto strip_ends = [](sv s) {
    auto junk = [](char c) {
      switch (c) {
        case ' ': case '\t': case '"': case '\'': case ',': case ';': case '+': case '\\':
        case '(': case ')': case '[': case ']': case '{': case '}':
          return true;
        default:
          return false;
      }
    };
    while (!s.empty() && junk(s.front())) s.remove_prefix(1);
    while (!s.empty() && junk(s.back())) s.remove_suffix(1);
    return s;
  };
  sv core = strip_ends(t);
  for (sv p : {sv("rb"), sv("br"), sv("b"), sv("r"), sv("u")}) {
    if (starts_with(core, p) && core.size() > p.size() && (core[p.size()] == '"' || core[p.size()] == '\'')) {
      return strip_ends(core.substr(p.size()));
    }
  }
  return core;
}

// (2) Base64 wrapped over many lines ("...\n" columns, implicit string
// concatenation, PEM bodies).
struct Base64Column {
  std::size_t total = 0, start = 0;
  std::optional<Finding> feed(sv t, std::size_t n) {
    sv core = base64_core(t);
    bool column = core.size() >= 32 && std::all_of(core.begin(), core.end(), is_b64) && char_classes(core) >= 2 &&
                  core.find('_') == sv::npos;
    if (!column) {
      total = 0;
      return std::nullopt;
    }
    if (total == 0) start = n;
    total += core.size();
    if (total <= kBlobRun) return std::nullopt;
    return Finding{"evidence.encoded-blob", line_ptr(start),
                   "holds " + std::to_string(total) +
                       "+ characters of base64/hex wrapped over consecutive lines: encoded data is not source"};
  }
};

std::size_t count_hex_escapes(sv t) {
  std::size_t escapes = 0;
  for (std::size_t i = t.find('\\'); i != sv::npos; i = t.find('\\', i)) {
    if (i + 3 < t.size() && (t[i + 1] == 'x' || t[i + 1] == 'X') && is_hex(t[i + 2]) && is_hex(t[i + 3])) {
      ++escapes;
      i += 4;
    } else {
      ++i;
    }
  }
  return escapes;
}

// (3) Runs of \xNN escapes. They accumulate over consecutive lines that are
// (almost) nothing but escapes, so splitting the dump across lines does not
// help.
struct EscapeRun {
  std::size_t total = 0, start = 0;
  std::optional<Finding> feed(sv t, std::size_t n) {
    const std::size_t escapes = count_hex_escapes(t);
    if (escapes == 0 || escapes * 4 * 10 < t.size() * 8) {
      total = 0;
      return std::nullopt;
    }
    if (total == 0) start = n;
    total += escapes;
    if (total <= kEscapeRun) return std::nullopt;
    return Finding{"evidence.encoded-blob", line_ptr(start),
                   "holds more than " + std::to_string(kEscapeRun) +
                       " \\xNN byte escapes in a row: a binary embedded in a string literal"};
  }
};

// "00000010: 0201 0100 0000 0000 ..." (xxd), "00000010  02 01 01 00 ..." (hexdump -C)
bool is_hexdump_line(sv t) {
  std::size_t i = 0;
  while (i < t.size() && is_hex(t[i])) ++i;
  if (i < 6 || i > 16 || i >= t.size() || (t[i] != ':' && t[i] != ' ')) return false;
  std::size_t groups = 0;
  while (i < t.size()) {
    while (i < t.size() && (t[i] == ' ' || t[i] == ':')) ++i;
    std::size_t j = i;
    while (j < t.size() && is_hex(t[j])) ++j;
    std::size_t len = j - i;
    if (len < 2 || len > 8 || (j < t.size() && t[j] != ' ')) break;
    ++groups;
    i = j;
  }
  return groups >= 4;
}

// (5) xxd / hexdump -C output: an offset, then groups of hex digits.
struct HexdumpRun {
  std::size_t lines = 0, start = 0;
  std::optional<Finding> feed(sv t, std::size_t n) {
    if (!is_hexdump_line(t)) {
      lines = 0;
      return std::nullopt;
    }
    if (lines++ == 0) start = n;
    if (lines < 8) return std::nullopt;
    return Finding{"evidence.encoded-blob", line_ptr(start),
                   "holds a hex dump (xxd/hexdump/od output): a binary written out as text"};
  }
};

// (6) Long lines without a single space, line after line: base85, uuencode,
// minified data. Authored code has spaces.
struct DenseRun {
  std::size_t total = 0, lines = 0, start = 0;
  std::optional<Finding> feed(sv t, std::size_t n) {
    if (t.size() < 60 || t.find(' ') != sv::npos || t.find('\t') != sv::npos) {
      total = 0, lines = 0;
      return std::nullopt;
    }
    if (total == 0) start = n;
    total += t.size();
    ++lines;
    if (lines < 16 || total <= kBlobRun) return std::nullopt;
    return Finding{"evidence.encoded-blob", line_ptr(start),
                   std::to_string(lines) + " consecutive lines of 60+ characters without a space (" +
                       std::to_string(total) + " characters): encoded or minified data"};
  }
};

// Counts the number literals and the identifiers/strings of one line of code.
struct LineTokens {
  std::size_t numbers = 0;
  std::size_t precise = 0;  // floats with >= 5 significant digits: measured or computed values
  std::size_t irregular = 0;  // floats with >= 3 significant digits, not binary fractions
  std::size_t words = 0;
};

LineTokens tokenize_numbers(sv line) {
  LineTokens t;
  std::size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == '"' || c == '\'') {
      std::size_t j = line.find(c, i + 1);
      ++t.words;
      if (j == sv::npos) break;
      i = j + 1;
    } else if (is_digit(c) || (c == '.' && i + 1 < line.size() && is_digit(line[i + 1]))) {
      if (is_irregular_float(read_number(line.substr(i)))) ++t.irregular;
      std::size_t sig = 0;
      bool leading = true, is_float = false;
      if (c == '0' && i + 1 < line.size() && (line[i + 1] == 'x' || line[i + 1] == 'X')) {
        i += 2;
        while (i < line.size() && (is_hex(line[i]) || line[i] == '_')) ++i;
      } else {
        while (i < line.size() && (is_digit(line[i]) || line[i] == '.' || line[i] == '_')) {
          if (line[i] == '.') {
            is_float = true;
          } else if (line[i] != '_' && !(leading && line[i] == '0')) {
            leading = false;
            ++sig;
          }
          ++i;
        }
        if (i < line.size() && (line[i] == 'e' || line[i] == 'E')) {
          is_float = true;
          ++i;
          if (i < line.size() && (line[i] == '+' || line[i] == '-')) ++i;
          while (i < line.size() && is_digit(line[i])) ++i;
        }
      }
      while (i < line.size() && is_one_of(line[i], "fFuUlLhH")) ++i;
      ++t.numbers;
      if (is_float && sig >= 5) ++t.precise;
    } else if (is_word(c)) {  // a letter or '_' here: digits were taken above
      while (i < line.size() && is_word(line[i])) ++i;
      ++t.words;
    } else {
      ++i;
    }
  }
  return t;
}

bool contains_ci(sv hay, sv needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  return false;
}

// Whether the lines just above a run of numbers say where they come from:
// a formula or a generator ("sin(2*pi*i/256)", "minimax fit on [-1, 1]",
// "generated by tools/gen_lut.py"), and not a run ("measured", "timings").
bool has_provenance(const TextLines& text, std::size_t run_start) {
  static const std::array<sv, 44> origin = {
      "generated", "generate", "computed", "compute", "formula", "minimax", "remez", "sollya", "chebyshev",
      "taylor", "horner", "polynomial", "coefficient", "approximat", "sin(", "cos(", "exp(", "exp2", "log(", "log2",
      "tanh", "erf", "sqrt", "pow(", "2**", "2^", "for i in", "range(", "np.", "numpy", "math.", "mpmath", "table of",
      "lut", "twiddle", "interpolat", "quantiz", "codebook", "nf4", "e4m3", "e5m2", "gaussian", "quadrature",
      "lookup"};
  static const std::array<sv, 14> measured = {"measur", "timing", "bench", "profil", "latenc", " ms", " us",
                                              "gb/s", "tflop", "recorded", "captured", "median", "sweep", "runs"};
  bool origin_seen = false;
  for (std::size_t k = run_start, seen = 0; k-- > 0 && seen < 6 && run_start - k <= 400;) {
    const sv t = text.trimmed[k];
    if (t.empty()) continue;
    // An earlier table's rows do not count: "NODES = [...]" then
    // "# weights of the same rule" reaches back to the NODES' comment.
    if (count_digits(t) * 2 >= t.size()) continue;
    ++seen;
    for (sv m : measured)
      if (contains_ci(t, m)) return false;
    for (sv o : origin) origin_seen = origin_seen || contains_ci(t, o);
  }
  return origin_seen;
}

// (4) Pasted numbers: lines that are (almost) nothing but number literals.
// A lookup table of a few hundred entries passes; a tensor's worth of
// values, or hundreds of high-precision measured values, not. Nor do more
// than kMaxUnexplainedFloats measured-looking floats (3+ significant
// digits, not binary fractions) in runs no comment above explains: an
// authored table says where it comes from.
struct DataNumbers {
  std::size_t numbers = 0, precise = 0, first_line = 0;
  std::size_t unexplained = 0, first_unexplained = 0, doctest = 0, first_doctest = 0;
  bool seen = false, in_run = false, run_explained = false, in_doctest = false;
  void feed(const TextLines& text, sv t, std::size_t n) {
    const sv s = text.stripped[n];
    if (starts_with(s, ">>> ") || starts_with(s, "... ")) {
      in_doctest = true;
    } else if (t.empty() || starts_with(t, "\"\"\"") || starts_with(t, "'''")) {
      in_doctest = false;
    }
    if (count_digits(t) == 0) {  // no number literal, so not a data line
      if (!t.empty()) in_run = false;
      return;
    }
    LineTokens tok = tokenize_numbers(t);
    if (!(tok.numbers >= 1 && tok.numbers >= 3 * tok.words)) {
      in_run = false;
      return;
    }
    if (!seen) first_line = n, seen = true;
    numbers += tok.numbers;
    precise += tok.precise;
    if (tok.irregular == 0) return;
    if (in_doctest) {
      if (doctest == 0) first_doctest = n;
      doctest += tok.irregular;
      return;
    }
    if (!in_run) run_explained = has_provenance(text, n), in_run = true;
    if (run_explained) return;
    if (unexplained == 0) first_unexplained = n;
    unexplained += tok.irregular;
  }
  std::optional<Finding> verdict() const {
    if (numbers > kMaxDataNumbers || precise > kMaxPreciseFloats) {
      return Finding{"evidence.encoded-blob", line_ptr(first_line),
                     "embeds " + std::to_string(numbers) + " number literals (" + std::to_string(precise) +
                         " high-precision floats) in data-only lines: that is a tensor, golden output or "
                         "measurement dump, not an authored constant table (limits: " +
                         std::to_string(kMaxDataNumbers) + " literals, " + std::to_string(kMaxPreciseFloats) +
                         " floats with 5+ significant digits)"};
    }
    if (unexplained > kMaxUnexplainedFloats) {
      return Finding{"evidence.encoded-blob", line_ptr(first_unexplained),
                     "embeds " + std::to_string(unexplained) +
                         " measured-looking floats (3+ significant digits, not binary fractions) in data-only lines "
                         "that no comment explains (more than " +
                         std::to_string(kMaxUnexplainedFloats) +
                         "): pasted measurements or outputs; if they are authored constants, say in a comment "
                         "just above where they come from (the formula or the generator)"};
    }
    if (doctest > kMaxDoctestFloats) {
      return Finding{"evidence.encoded-blob", line_ptr(first_doctest),
                     "shows " + std::to_string(doctest) +
                         " measured-looking floats as doctest output (more than " +
                         std::to_string(kMaxDoctestFloats) +
                         "): an example needs a few values, not a dump; shorten the examples"};
    }
    return std::nullopt;
  }
};

}  // namespace

std::optional<Finding> find_encoded_blob(const TextLines& text) {
  if (auto f = find_long_token(text.text)) return f;
  Base64Column column;
  EscapeRun escapes;
  HexdumpRun hexdump;
  DenseRun dense;
  DataNumbers data;
  for (std::size_t n = 0; n < text.size(); ++n) {
    const sv t = text.trimmed[n];
    if (auto f = column.feed(t, n)) return f;
    if (auto f = escapes.feed(t, n)) return f;
    if (auto f = hexdump.feed(t, n)) return f;
    if (auto f = dense.feed(t, n)) return f;
    data.feed(text, t, n);
  }
  return data.verdict();
}

// ---------------------------------------------------------------- logs

namespace {

bool has_timestamp_prefix(sv s) {
  if (!s.empty() && s.front() == '[') s.remove_prefix(1);
  auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > s.size()) return false;
    for (std::size_t i = at; i < at + n; ++i)
      if (!is_digit(s[i])) return false;
    return true;
  };
  // Every form below starts with a digit or a glog level letter.
  if (s.empty() || !(is_digit(s[0]) || is_one_of(s[0], "IWEF"))) return false;
  // 2026-11-29 14:05:00, 2026-11-29T14:05, 2026/11/29 14:05
  if (digits(0, 4) && s.size() > 16 && (s[4] == '-' || s[4] == '/') && digits(5, 2) && s[7] == s[4] &&
      digits(8, 2) && (s[10] == ' ' || s[10] == 'T') && digits(11, 2) && s[13] == ':' && digits(14, 2))
    return true;
  // 14:05:00 at the start of the line
  if (digits(0, 2) && s.size() >= 8 && s[2] == ':' && digits(3, 2) && s[5] == ':' && digits(6, 2)) return true;
  // glog: I1129 14:05:00.123456
  if (s.size() > 14 && is_one_of(s[0], "IWEF") && digits(1, 4) && s[5] == ' ' && digits(6, 2) && s[8] == ':')
    return true;
  return false;
}

bool has_level_prefix(sv s) {
  static const std::array<sv, 9> levels = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "TRACE", "CRITICAL", "FATAL", "NOTICE"};
  bool bracket = !s.empty() && s.front() == '[';
  sv body = bracket ? s.substr(1) : s;
  // The levels' initials, in either case: most lines stop here.
  if (body.empty() || !is_one_of(lower_ascii(body.front()), "iwedtcfn")) return false;
  for (sv lvl : levels) {
    if (body.size() < lvl.size()) continue;
    if (!iequals(body.substr(0, lvl.size()), lvl)) continue;
    sv rest = body.substr(lvl.size());
    if (bracket && !rest.empty() && rest.front() == ']') return true;
    // "INFO:root:...", "INFO - ...", "INFO  message" (upper case only:
    // "Warning: ..." in prose is a sentence, not a log line).
    if (!bracket && body.substr(0, lvl.size()) == lvl && !rest.empty() &&
        (rest.front() == ':' || starts_with(rest, " - ") || starts_with(rest, "  ")))
      return true;
  }
  return false;
}

// Where the first diagnostic keyword (": error", "): warning", ...) starts;
// npos if none. One pass over the line: every keyword starts with ':' or ')'.
std::size_t find_diagnostic_keyword(sv s) {
  static const std::array<sv, 5> after_colon = {": error", ": warning", ": note:", ": fatal error", ": remark"};
  static const std::array<sv, 2> after_paren = {"): error", "): warning"};
  for (std::size_t p = 0; p + 1 < s.size(); ++p) {
    // Every keyword is ": ..." or "):...": most colons and parentheses of
    // code (def f(x):, a[1:2], call(x)) fail on the next byte.
    if (!(s[p] == ':' && s[p + 1] == ' ') && !(s[p] == ')' && s[p + 1] == ':')) continue;
    const sv rest = s.substr(p);
    const std::span<const sv> keys = s[p] == ':' ? std::span<const sv>(after_colon) : std::span<const sv>(after_paren);
    for (sv k : keys)
      if (starts_with(rest, k)) return p;
  }
  return sv::npos;
}

bool is_compiler_diagnostic(sv s) {
  const std::size_t kw = find_diagnostic_keyword(s);
  if (kw == sv::npos) return false;
  // file.cu:12:5: error / file.cu(12): error — a line number precedes.
  std::size_t p = kw;
  if (p > 0 && s[p] == ')') {
    std::size_t q = p;
    while (q > 0 && is_digit(s[q - 1])) --q;
    return q < p && q > 0 && s[q - 1] == '(';
  }
  while (p > 0 && is_digit(s[p - 1])) --p;
  if (p < kw && p > 0 && s[p - 1] == ':') return true;
  // column present: ":12:5"
  return false;
}

// What separates the tokens of a measurement line: whitespace and , ; | ( ) [ ] = { }.
constexpr std::array<bool, 256> kMeasurementSeparators = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : sv(" \t\f\v,;|()[]={}")) t[c] = true;
  return t;
}();

bool is_measurement_separator(char c) { return kMeasurementSeparators[static_cast<unsigned char>(c)]; }

// Whether a token can be a number at all: after its leading decoration it
// starts like one (digit, sign, dot) or like nan/inf. Most tokens of a line
// of code are names, and stop here.
bool may_be_number(sv token) {
  for (char c : token) {
    if (has_class(c, char_class::kOpenDecoration)) continue;
    return is_digit(c) || is_one_of(c, "+-.nNiI");
  }
  return false;
}

// A number token whose own characters carry a unit: "0.12ms", "1.5x",
// "900GB/s" (not "1e-3", "87%" or "0x1f").
bool has_unit_suffix(sv number) {
  const bool plain = std::all_of(number.begin(), number.end(), [](char c) {
    return is_digit(c) || c == '.' || c == '-' || c == '+' || lower_ascii(c) == 'e';
  });
  if (plain || number.back() == '%') return false;
  for (std::size_t i = 0; i + 1 < number.size(); ++i)
    if (number[i] == '0' && lower_ascii(number[i + 1]) == 'x') return false;
  return true;
}

// Two or more numbers of which one carries a unit ("0.12 ms", "900GB/s"):
// a reading. Tokens are taken one at a time; the answer is known as soon as
// both are seen.
bool is_measurement_line(sv s, bool two_numbers_possible) {
  if (!two_numbers_possible) return false;
  std::size_t numbers = 0;
  bool unit = false, unit_may_follow = false;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_measurement_separator(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_measurement_separator(s[j])) ++j;
    if (j == i) break;
    const sv token = s.substr(i, j - i);
    i = j;
    // "12 ms": the unit is the token after a bare number.
    if (unit_may_follow && is_time_or_rate_unit(token)) unit = true;
    unit_may_follow = false;
    if (!may_be_number(token)) continue;
    sv tk = strip_decoration(token);
    while (!tk.empty() && tk.back() == ':') tk.remove_suffix(1);
    // A quote glued to a number is a string literal in code, not a reading.
    if (tk.size() != token.size() && (token.find('"') != sv::npos || token.find('\'') != sv::npos)) continue;
    if (is_numeric_cell(tk)) {
      ++numbers;
      if (has_unit_suffix(tk))
        unit = true;
      else
        unit_may_follow = true;
    }
    if (unit && numbers >= 2) return true;
  }
  return unit && numbers >= 2;
}

// Lines that on their own say "this is captured output" (in prose; code
// may quote one of them, so it needs two). `s` is the line without its
// comment marker.
bool is_strong_marker(sv s) {
  static const PrefixSet markers{
      "ptxas info", "==PROF==", "Traceback (most recent call last)", "NVIDIA-SMI ", "Driver Version:",
      "PyTorch version:", "CUDA used to build PyTorch:", "CUDA Kernel Statistics", "CUDA API Statistics",
      "GPU activities:", "Collecting data...", "Generating '", "Self CPU time total:", "Self CUDA time total:",
      "** CUDA GPU Kernel Summary", "** CUDA API Summary", "** CUDA GPU MemOps Summary", "** OS Runtime Summary",
      "Generating SQLite file", "Triton autotuning for function", "==ERROR== ", "========= COMPUTE-SANITIZER"};
  while (!s.empty() && (s.front() == '|' || is_space(s.front()))) s.remove_prefix(1);
  return !markers.first_match(s).empty();
}

// Line starts of compiler, build, profiler, test-runner and census output.
// "=====" and "Ran " need a second look (is_log_prefix_line).
const PrefixSet& log_prefixes() {
  static const PrefixSet prefixes{
      "ptxas ", "ptxas:", "nvcc warning", "nvcc fatal", "nvcc error", "nvlink ", "==PROF==",
      "Traceback (most recent call last)", "In file included from ", "Compiling entry function",
      "Function properties for", "Building CUDA object", "Building CXX object", "Building C object",
      "Linking CXX", "Linking CUDA", "Linking C ", "Scanning dependencies", "-- The C", "-- Check for working",
      "-- Detecting", "-- Configuring done", "-- Generating done", "-- Build files have been written",
      "-- Looking for", "-- Found ", "make[", "gmake[", "ninja: ", "FAILED: ", "collect2: ", "/usr/bin/ld: ",
      "Kernel Name", "GPU activities:", "API calls:", "Time(%)", "Time (%)", "CUDA Kernel Statistics",
      "CUDA API Statistics", "Self CPU %", "STAGE:", "NVIDIA-SMI", "Driver Version:", "PyTorch version:",
      "Is debug build:", "CUDA used to build PyTorch:", "GPU models and configuration:", "Nvidia driver version:",
      "cuDNN version:", "Is CUDA available:", "CUDA runtime version:", "Versions of relevant libraries:",
      "[pip3] ", "[conda] ", "CPU op-mode(s):", "Thread(s) per core:", "CUDA Driver Version / Runtime Version",
      "Total amount of global memory", "=====", "Ran ", "Section: ", "    Registers Per Thread"};
  return prefixes;
}

// The verdict of a line that starts with one of log_prefixes(), `p`.
bool is_log_prefix_line(sv s, sv p) {
  if (p == "=====")
    return s.find("test session starts") != sv::npos || s.find(" passed") != sv::npos ||
           s.find(" failed") != sv::npos || s.find("FAILURES") != sv::npos;
  if (p == "Ran ") return s.find(" test") != sv::npos && s.find(" in ") != sv::npos;
  return true;
}

// RuntimeError: ..., torch.cuda.OutOfMemoryError: ...
bool is_exception_line(sv s) {
  const sv first = s.substr(0, s.find(' '));
  if (first.empty() || first.back() != ':') return false;
  return (ends_with(first, "Error:") || ends_with(first, "Exception:") || ends_with(first, "Warning:")) &&
         std::all_of(first.begin(), first.end(), [](char c) { return is_word(c) || c == '.' || c == ':'; });
}

// ==12345== (valgrind, nvprof, compute-sanitizer)
bool is_pid_banner(sv s) {
  if (!starts_with(s, "==")) return false;
  std::size_t i = 2;
  while (i < s.size() && is_digit(s[i])) ++i;
  return i > 2 && s.substr(i, 2) == "==";
}

// [3/10] ninja progress, [ 50%] make progress
bool is_progress_line(sv s) {
  if (s.front() != '[') return false;
  std::size_t close = s.find(']');
  if (close == sv::npos || close <= 1) return false;
  sv in = trim(s.substr(1, close - 1));
  return !in.empty() && std::all_of(in.begin(), in.end(), [](char c) { return is_digit(c) || c == '/' || c == '%'; }) &&
         (in.find('/') != sv::npos || in.back() == '%');
}

// `stripped` is the line without its comment marker.
bool is_log_line(sv stripped, bool two_numbers_possible) {
  sv s = stripped;
  while (!s.empty() && s.front() == '|' && s.size() > 1 && is_space(s[1])) s = trim(s.substr(1));
  if (s.empty()) return false;
  if (sv p = log_prefixes().first_match(s); !p.empty()) return is_log_prefix_line(s, p);
  // Traceback frames: File "x.py", line 12, in f
  if (starts_with(s, "File \"") && s.find("\", line ") != sv::npos) return true;
  if (is_exception_line(s) || is_pid_banner(s) || is_progress_line(s)) return true;
  return has_timestamp_prefix(s) || has_level_prefix(s) || is_compiler_diagnostic(s) || is_measurement_line(s, two_numbers_possible);
}

// One metric of an Nsight Compute section, as ncu prints it and as it is
// pasted into comments: "Duration   usecond   412.29",
// "Memory Throughput   %   78.12", "Elapsed Cycles   cycle   724,133".
bool is_ncu_metric_line(sv s) {
  static const WordSet units{"cycle/nsecond", "cycle/usecond", "cycle/msecond", "cycle/second", "cycle",
                             "usecond",       "msecond",       "nsecond",       "second",       "%",
                             "gbyte/second",  "tbyte/second",  "mbyte/second",  "kbyte/second", "byte/second",
                             "byte",          "kbyte",         "mbyte",         "gbyte",        "inst",
                             "inst/cycle",    "warp",          "block",         "thread",       "register/thread",
                             "sm",            "sector",        "request",       "ghz",          "mhz",
                             "kbyte/block",   "byte/block",    "block/sm",      "warp/sm",      "sector/request",
                             "warp/cycle",    "thread/block",  "byte/sector"};
  if (s.size() < 8 || !is_digit(s.back())) return false;
  // The last two whitespace-separated cells, and a word before them.
  std::size_t end = s.size();
  std::size_t b = s.find_last_of(" \t");
  if (b == sv::npos) return false;
  const sv value = s.substr(b + 1, end - b - 1);
  sv rest = trim(s.substr(0, b));
  std::size_t u = rest.find_last_of(" \t");
  if (u == sv::npos) return false;
  const sv unit = rest.substr(u + 1);
  const sv name = trim(rest.substr(0, u));
  if (name.empty() || !is_alpha(name.front()) || !units.contains_ci(unit)) return false;
  // The name is words, aligned to the unit column by a run of spaces.
  if (rest.substr(0, u + 1).find("  ") == sv::npos) return false;
  return is_numeric_cell(value);
}

// Which of a login shell's well-known variables a line sets (its index), or
// npos: an `env` dump.
std::size_t env_var_of(sv t) {
  static const PrefixSet env_vars{"HOME=", "PATH=", "PWD=", "OLDPWD=", "SHLVL=", "HOSTNAME=", "USER=",
                                  "LOGNAME=", "LD_LIBRARY_PATH=", "TERM=", "SHELL=", "LANG=", "_="};
  return env_vars.index_of_match(t);
}

}  // namespace

std::optional<Finding> find_log(const TextLines& text, TextKind kind) {
  std::uint32_t env_seen = 0;  // bit i: env_var_of() == i on some line
  std::size_t strong = 0, first_strong = 0;
  std::size_t counted = 0, logged = 0, run = 0, best_run = 0, run_start = 0, best_start = 0, first_log = 0;
  std::size_t ncu = 0, first_ncu = 0, first_env = 0;
  bool any = false;
  for (std::size_t n = 0; n < text.size(); ++n) {
    const sv t = text.trimmed[n];
    const sv s = text.stripped[n];
    if (std::size_t e = env_var_of(t); e != sv::npos) {
      if (env_seen == 0) first_env = n;
      env_seen |= 1u << e;
    }
    if (!s.empty() && is_digit(s.back()) && is_ncu_metric_line(s) && ncu++ == 0) first_ncu = n;
    // Doctests show exceptions as "Traceback (most recent call last):": in
    // code that header alone proves nothing; the frames below it still count.
    bool doctest_like = kind == TextKind::Code && starts_with(s, "Traceback (most recent call last)");
    if (!doctest_like && is_strong_marker(s) && strong++ == 0) first_strong = n;
    if (t.empty() || is_rule_line(t)) continue;  // blank and ruler lines neither count nor break a run
    ++counted;
    if (is_log_line(s, text.may_hold_numbers(n, 2))) {
      ++logged;
      if (!any) first_log = n, any = true;
      if (run == 0) run_start = n;
      if (++run > best_run) best_run = run, best_start = run_start;
    } else {
      run = 0;
    }
  }
  if (const int envs = std::popcount(env_seen); envs >= 3) {
    return Finding{"evidence.log", line_ptr(first_env),
                   "is an environment dump (" + std::to_string(envs) +
                       " login-shell variables such as HOME=, PATH=, SHLVL=): hardware/software census data"};
  }
  if (strong >= (kind == TextKind::Code ? 2u : 1u)) {
    return Finding{"evidence.log", line_ptr(first_strong),
                   "holds compiler, profiler, crash or environment output (e.g. \"" +
                       std::string(text.trimmed[first_strong].substr(0, 60)) + "\")"};
  }
  if (ncu >= 3) {
    return Finding{"evidence.log", line_ptr(first_ncu),
                   "holds " + std::to_string(ncu) +
                       " metric lines of an Nsight Compute report (name, unit, value: e.g. \"" +
                       std::string(text.trimmed[first_ncu].substr(0, 60)) + "\"): a pasted profiler section"};
  }
  // Source files get a higher bar than prose: code may quote a log line or two.
  const std::size_t min_lines = kind == TextKind::Code ? 5 : 3;
  const std::size_t percent = kind == TextKind::Code ? 40 : 30;
  constexpr std::size_t kRun = 8;
  if (best_run >= kRun) {
    return Finding{"evidence.log", line_ptr(best_start),
                   "holds " + std::to_string(best_run) +
                       " consecutive lines of compiler, build, benchmark, profiler or runtime output"};
  }
  if (logged >= min_lines && logged * 100 >= percent * counted) {
    return Finding{"evidence.log", line_ptr(first_log),
                   std::to_string(logged) + " of its " + std::to_string(counted) +
                       " lines are compiler, build, benchmark, profiler or runtime output"};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- compiler output

namespace {

// "tt.func", "triton_gpu.", "ttg." anywhere in the line. One pass over its
// dots (each token holds one) instead of a search per token.
bool has_triton_ir_token(sv t) {
  for (std::size_t q = t.find('.'); q != sv::npos; q = t.find('.', q + 1)) {
    if (q >= 2 && t.compare(q - 2, 7, "tt.func") == 0) return true;
    if (q >= 10 && t.compare(q - 10, 11, "triton_gpu.") == 0) return true;
    if (q >= 3 && t.compare(q - 3, 4, "ttg.") == 0) return true;
  }
  return false;
}

// cuobjdump -sass: "/*0070*/  IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;"
bool is_sass_line(sv t) {
  if (!starts_with(t, "/*")) return false;
  std::size_t close = t.find("*/");
  if (close == sv::npos || close < 6 || close > 12 ||
      !std::all_of(t.begin() + 2, t.begin() + static_cast<std::ptrdiff_t>(close), is_hex))
    return false;
  sv op = trim(t.substr(close + 2));
  return !op.empty() && ((op[0] >= 'A' && op[0] <= 'Z') || op[0] == '@') && op.find(" ;") != sv::npos;
}

// What the lines of a file say about being compiler output.
struct CompilerSigns {
  bool ptx_version = false, ptx_target = false, ptx_addr = false, ptx_entry = false;
  std::size_t sass = 0, llvm = 0, mlir = 0, gas = 0;
  std::size_t signs = 0, first = 0;  // lines with any sign, and the first of them

  void feed(sv t, std::size_t n) {
    const std::size_t before = count();
    feed_signs(t);
    if (count() != before && signs++ == 0) first = n;
  }
  std::size_t count() const {
    return sass + llvm + mlir + gas + ptx_version + ptx_target + ptx_addr + ptx_entry;
  }

  void feed_signs(sv t) {
    ptx_version |= starts_with(t, ".version ");
    ptx_target |= starts_with(t, ".target sm_") || starts_with(t, ".target compute_");
    ptx_addr |= starts_with(t, ".address_size ");
    ptx_entry |= starts_with(t, ".visible .entry ") || starts_with(t, ".entry ") || starts_with(t, ".visible .func ");
    if (is_sass_line(t)) ++sass;
    if (starts_with(t, "; ModuleID = ") || starts_with(t, "target datalayout = ") ||
        starts_with(t, "target triple = ") || starts_with(t, "attributes #") || starts_with(t, "!llvm."))
      ++llvm;
    if (has_triton_ir_token(t) || starts_with(t, "#blocked") || starts_with(t, "#loc")) ++mlir;
    // A compiler signs its assembly; hand-written .S files do not.
    if (starts_with(t, ".ident") && (t.find("GCC") != sv::npos || t.find("clang") != sv::npos)) ++gas;
  }

  std::string what() const {
    if (ptx_version && ptx_target && (ptx_addr || ptx_entry)) return "a PTX module (.version/.target/.entry)";
    if (sass >= 8) return "a SASS disassembly (cuobjdump/nvdisasm output)";
    if (llvm >= 2) return "LLVM IR";
    if (mlir >= 8) return "Triton/MLIR intermediate representation";
    if (gas >= 1) return "compiler-generated assembly (it carries the compiler's .ident)";
    return {};
  }
};

}  // namespace

std::optional<Finding> find_compiler_output(const TextLines& text) {
  CompilerSigns signs;
  for (std::size_t n = 0; n < text.size(); ++n) signs.feed(text.trimmed[n], n);
  std::string what = signs.what();
  if (what.empty()) return std::nullopt;
  return Finding{"evidence.compiled", line_ptr(signs.first),
                 "is " + what + ", which is compiler output, not source (hand-written inline PTX belongs in "
                 "asm() statements of a .cu/.py source)"};
}

// ---------------------------------------------------------------- documents

namespace {

// Keys of Chrome trace events, counted where they occur (up to `enough`):
// a trace that does not parse as a whole (truncated, prefixed) still has
// them. Every key starts with '"', and at most one matches at any quote.
std::size_t count_trace_keys(sv text, std::size_t enough) {
  static const std::array<sv, 4> keys = {"\"ph\":", "\"ts\":", "\"dur\":", "\"traceEvents\""};
  std::size_t events = 0;
  for (std::size_t p = text.find('"'); p != sv::npos && events < enough; p = text.find('"', p + 1)) {
    const sv rest = text.substr(p);
    for (sv key : keys)
      if (starts_with(rest, key)) ++events;
  }
  return events;
}

// key: value   /   - key: value   (YAML mappings)
bool is_key_value_line(sv l) {
  sv k = l;
  if (starts_with(k, "- ")) k.remove_prefix(2);
  if (k.empty() || !(is_alpha(k[0]) || k[0] == '_')) return false;
  std::size_t i = 0;
  while (i < k.size() && (is_word(k[i]) || k[i] == '.' || k[i] == '-')) ++i;
  return i < k.size() && k[i] == ':' && (i + 1 == k.size() || k[i + 1] == ' ');
}

}  // namespace

std::optional<Finding> find_metadata_document(const TextLines& lines, TextKind kind) {
  const sv text = lines.text;
  // The first line with content: where a document starts.
  std::size_t first_content = 0;
  while (first_content + 1 < lines.size() && lines.trimmed[first_content].empty()) ++first_content;
  const std::string start = line_ptr(first_content);
  sv t = trim(text);
  while (!t.empty() && (t.front() == '\n' || t.front() == '\r')) t.remove_prefix(1);
  if (starts_with(t, "\xef\xbb\xbf")) t.remove_prefix(3);
  if (!t.empty() && (t.front() == '{' || t.front() == '[')) {
    auto doc = nlohmann::json::parse(t.begin(), t.end(), nullptr, false);
    if (!doc.is_discarded() && !doc.empty()) {
      return Finding{"evidence.metadata", start,
                     "is a JSON document (" + std::string(doc.is_object() ? "an object" : "an array") +
                         "), not source: traces, reports and results are often JSON"};
    }
  }
  if (starts_with(t, "<?xml") || iequals(t.substr(0, 14), "<!doctype html") || iequals(t.substr(0, 5), "<html")) {
    return Finding{"evidence.metadata", start, "is an XML/HTML document: generated reports and exports are not source"};
  }
  if (count_trace_keys(text, 12) >= 12) {
    std::size_t at = 0;
    while (at + 1 < lines.size() && lines.raw[at].find("\"ph\"") == sv::npos && lines.raw[at].find("\"ts\"") == sv::npos &&
           lines.raw[at].find("traceEvents") == sv::npos)
      ++at;
    return Finding{"evidence.metadata", line_ptr(at), "holds trace events (\"ph\"/\"ts\"/\"dur\" keys): a profiler trace"};
  }
  std::size_t nonblank = 0, json_lines = 0, key_lines = 0, first_json = 0, first_key = 0;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const sv l = lines.trimmed[n];
    if (l.empty() || l.front() == '#') continue;
    ++nonblank;
    if (l.front() == '{' && l.back() == '}') {
      auto doc = nlohmann::json::parse(l.begin(), l.end(), nullptr, false);
      if (!doc.is_discarded() && json_lines++ == 0) first_json = n;
    }
    if (is_key_value_line(l) && key_lines++ == 0) first_key = n;
  }
  if (json_lines >= 3 && json_lines * 2 >= nonblank) {
    return Finding{"evidence.metadata", line_ptr(first_json),
                   "is JSON Lines (" + std::to_string(json_lines) + " JSON objects, one per line): a log or dump"};
  }
  // Code (Python annotations, dataclasses) legitimately has "name: type" lines.
  if (kind == TextKind::Prose && key_lines >= 8 && key_lines * 10 >= nonblank * 6) {
    return Finding{"evidence.metadata", line_ptr(first_key),
                   "is YAML-like key: value data (" + std::to_string(key_lines) + " of " + std::to_string(nonblank) +
                       " lines)"};
  }
  return std::nullopt;
}

}  // namespace kzoo::package::evidence_detail
