// Summarised evidence: what is left of a run after someone has "cleaned it
// up" into prose, a dict or a comment. The seed forbids it in any encoding
// ("renaming, truncating, converting, or manually summarizing it does not
// make it package content"), so these detectors read meaning, not format:
//
// - evidence.summary: measured figures (a number with a time or rate unit
//   said to be a median, achieved, on an H200, for a shape, against a
//   baseline; "78% of roofline"; "1.53x faster"), lines pairing shapes with
//   results, and code literals that hold timings ("median_us": 412.3).
// - evidence.tuning: per-shape results of a tuning run (a mapping from exact
//   shapes to block sizes, warps and stages).
// - evidence.census: hardware/software census (driver, exact library
//   builds, GPU model and memory, clocks, CPU and OS releases).
//
// Authored text states figures too: a bound from a datasheet ("HBM3 peaks at
// 4.8 TB/s"), a latency from folklore ("~500 cycles"), one example in a
// docstring, a requirement ("CUDA 12.4 or newer"), a candidate list of
// autotune configs. So each detector counts, and refuses only what no
// author writes by hand: several measured figures, results across shapes,
// or a census of the machine.
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

const WordSet& time_units() {
  static const WordSet s{"ns",     "nsec",   "nanoseconds", "us",      "usec",   "\xc2\xb5s", "\xce\xbcs",
                         "microseconds", "ms", "msec",      "millisecond", "milliseconds", "s", "sec", "secs",
                         "second", "seconds"};
  return s;
}

const WordSet& rate_units() {
  static const WordSet s{"gb/s",    "tb/s",    "gib/s",   "tib/s",  "mb/s",     "mib/s",   "gbps",    "tbps",
                         "gbit/s",  "gb/sec",  "tb/sec",  "tflops", "tflop/s",  "gflops",  "gflop/s", "pflops",
                         "tops",    "tok/s",   "tokens/s", "token/s", "it/s",   "samples/s", "img/s", "images/s",
                         "requests/s", "qps",  "gbytes/s", "tbytes/s"};
  return s;
}

// Said of a figure that was measured: statistics, measuring verbs,
// comparisons with a baseline.
const WordSet& measured_cues() {
  static const WordSet s{
      "median",   "mean",      "average",  "avg",       "p50",      "p90",      "p95",     "p99",      "p999",
      "stddev",   "std",       "stdev",    "variance",  "percentile", "measured", "measure", "measuring",
      "achieved", "achieves",  "achieve",  "achieving", "reach",    "reached",  "reaches",  "reaching", "hits",    "sustained",
      "sustains", "observed",  "observe",  "clocked",   "profiled", "benchmarked", "ran",   "took",     "got",
      "timed",    "recorded",  "speedup",  "speed-up",  "speedups", "faster",   "slower",  "vs",       "versus",
      "baseline", "eager",     "cublas",   "cudnn",     "torch",    "pytorch",  "ours",     "compared", "fastest",  "slowest", "best",     "worst",
      "iterations", "iters",   "reps",     "trials",    "runs",     "run",      "\xc2\xb1", "+/-",    "+-",
      "wall-clock", "walltime", "elapsed"};
  return s;
}

// Said of a figure that is a bound or a setting, not a reading.
const WordSet& spec_cues() {
  static const WordSet s{"peak",   "theoretical", "theoretically", "datasheet", "spec",    "specs",    "specification",
                         "nominal", "rated",      "ideal",         "bound",     "bounds",  "upper",    "lower",
                         "limit",  "limits",      "cannot",        "can't",     "max",     "maximum",  "timeout",
                         "budget", "deadline",    "sleep",         "interval",  "default", "roofline", "ceiling",
                         "at-most", "floor",      "minimum",       "requires",  "target",  "expect",   "expected"};
  return s;
}

const WordSet& percent_targets() {
  static const WordSet s{"roofline", "peak", "sol", "speed-of-light", "theoretical", "bandwidth", "hbm",
                         "dram",     "max",  "maximum", "memory",     "compute",     "l2",        "tensor"};
  return s;
}

const WordSet& percent_subjects() {
  static const WordSet s{"utilization", "utilisation", "occupancy", "efficiency", "sol", "achieved", "dram",
                         "throughput", "hit", "hit-rate", "bandwidth"};
  return s;
}

const WordSet& speedup_words() {
  static const WordSet s{"speedup", "speed-up", "faster", "slower", "quicker", "vs", "versus"};
  return s;
}

// Names of dimensions, as shapes are written out: "M=4096, N=4096".
const WordSet& dim_names() {
  static const WordSet s{"m", "n", "k", "b", "h", "s", "d", "l", "e", "batch", "bs", "seq", "seqlen", "seq_len",
                         "rows", "cols", "hidden", "heads", "dim", "head_dim", "tokens", "experts", "x"};
  return s;
}

// A shape written as one word: 4096x4096, 8x4096x128, 4096×4096.
bool is_shape_word(sv w) {
  const NumberLiteral first = read_number(w);
  if (first.length == 0 || first.is_float || first.hex) return false;
  std::size_t i = first.length, parts = 1;
  while (i < w.size()) {
    if (w[i] == 'x' || w[i] == 'X' || w[i] == '*')
      ++i;
    else if (w.substr(i, 2) == "\xc3\x97")  // ×
      i += 2;
    else
      return false;
    const NumberLiteral next = read_number(w.substr(i));
    if (next.length == 0 || next.is_float || next.hex) return false;
    i += next.length;
    ++parts;
  }
  return parts >= 2;
}

// ---------------------------------------------------------------- figures

enum class FigureKind { None, Time, Rate, Percent, Ratio };

FigureKind unit_kind(sv unit) {
  if (unit.empty()) return FigureKind::None;
  if (time_units().contains_ci(unit)) return FigureKind::Time;
  if (rate_units().contains_ci(unit)) return FigureKind::Rate;
  if (unit == "%") return FigureKind::Percent;
  if (unit == "x" || unit == "\xc3\x97") return FigureKind::Ratio;  // not "802.1X"
  return FigureKind::None;
}

struct LineFigures {
  std::size_t measured = 0;  // figures the line says were measured
  std::size_t plain = 0;     // figures without a cue either way
  bool shape_result = false; // a shape and a result on one line
  std::size_t size_results = 0;  // "4096 -> 102.9, 8192 -> 412.3": sizes each followed by a reading
};

// What one line says in figures. `code`: the line is from a source file
// (a shape there needs a shape word, or two sizes and a 3-digit reading).
LineFigures read_figures(sv line, bool code, std::vector<Word>& words) {
  LineFigures out;
  split_words(line, words);
  std::size_t times_rates = 0, percents = 0, ratios = 0, ratio_decimal = 0;
  std::size_t sizes = 0, readings = 0, readings3 = 0;  // sizes: pairs of adjacent sizes
  std::uint64_t last_size = 0;
  std::size_t last_size_word = 0;
  bool shape = false;
  for (std::size_t k = 0; k < words.size(); ++k) {
    const sv w = words[k].text;
    if (!starts_like_number(w)) continue;
    if (is_shape_word(w)) {
      shape = true;
      continue;
    }
    const NumberLiteral n = read_number(w);
    if (n.length == 0 || n.hex) continue;
    sv unit = w.substr(n.length);
    // A C float literal (0.4127f), not a format spec ("{:>4.1f}", "%.3f").
    const char before = words[k].at > 0 ? line[words[k].at - 1] : ' ';
    if (n.is_float && n.sig >= 3 && (unit == "f" || unit == "F") && !is_one_of(before, ":%.>^<")) unit = {};
    bool next_is_unit = false;
    if (unit.empty() && k + 1 < words.size()) {
      const FigureKind next = unit_kind(words[k + 1].text);
      // "4 x 4096" is a shape, not a ratio; "%" stands alone only in tables.
      // A key ("129.6, 'gbps': 2618.6") is not the unit of the number before it.
      std::size_t after = words[k + 1].at + words[k + 1].text.size();
      while (after < line.size() && (line[after] == '"' || line[after] == '\'' || line[after] == ' ')) ++after;
      const bool is_key = after < line.size() && (line[after] == ':' || line[after] == '=');
      // A lone "s" after a number is a variable in code ("range(1, s)"),
      // so seconds count only when written out or glued on ("2.31s").
      const bool lone_s = words[k + 1].text.size() == 1;
      if ((next == FigureKind::Time || next == FigureKind::Rate) && !is_key && !lone_s)
        unit = words[k + 1].text, next_is_unit = true;
    }
    const FigureKind kind = unit_kind(unit);
    if (kind == FigureKind::Time || kind == FigureKind::Rate) {
      ++times_rates;
    } else if (kind == FigureKind::Percent) {
      // "78% of (the) roofline", "SM occupancy 62%"
      bool of_peak = false;
      if (k + 2 < words.size() && iequals(words[k + 1].text, "of")) {
        const sv t = words[k + 2].text;
        of_peak = percent_targets().contains_ci(t) ||
                  (iequals(t, "the") && k + 3 < words.size() && percent_targets().contains_ci(words[k + 3].text));
      }
      for (std::size_t b = k >= 3 ? k - 3 : 0; b < k && !of_peak; ++b)
        of_peak = percent_subjects().contains_ci(words[b].text);
      if (of_peak) ++percents;
    } else if (kind == FigureKind::Ratio) {
      if (w[n.length - 1] == '.') continue;  // "11.x" is a version series
      ++ratios;
      if (n.is_float && n.sig >= 2) ++ratio_decimal;
    } else if (unit.empty()) {
      // Two sizes side by side ("(8, 4096)", "4096 4096"), one of them 64+.
      const bool size = !n.is_float && n.integer >= 2 && w[0] != '0';
      // "M=4096, N=4096": a dimension's name may stand between the sizes.
      const bool adjacent = last_size_word + 1 == k || (last_size_word + 2 == k && dim_names().contains_ci(words[k - 1].text));
      if (size && last_size != 0 && (n.integer >= 64 || last_size >= 64) && adjacent) ++sizes;
      if (size) last_size = n.integer, last_size_word = k;
      if (looks_measured(n) && n.is_float) {
        ++readings;
        // A size just before it, joined by ':', '=' or "->" ("8192 -> 412.3", "8192: 412.3"),
        // not by a comma (a tuple of fields).
        if (last_size >= 64 && last_size_word + 2 >= k && last_size_word < k) {
          const Word& prev = words[last_size_word];
          const std::size_t from = prev.at + prev.text.size();
          const sv between = line.substr(from, words[k].at - from);
          if (between.find(',') == sv::npos &&
              (between.find(':') != sv::npos || between.find('=') != sv::npos || between.find("->") != sv::npos))
            ++out.size_results;
        }
      }
      if (is_irregular_float(n)) ++readings3;
    }
    if (next_is_unit) ++k;
  }
  const std::size_t figures = times_rates + percents + ratios;
  shape = shape || sizes >= 1;
  out.shape_result = code ? (shape && readings3 >= 1) : (shape && (readings >= 1 || times_rates >= 1));
  if (figures == 0) return out;
  bool strong = false, gpu = false, spec = false, speedup = false;
  for (const Word& w : words) {
    if (starts_like_number(w.text)) continue;
    strong |= measured_cues().contains_ci(w.text);
    gpu |= gpu_names().contains_ci(w.text);
    spec |= spec_cues().contains_ci(w.text);
    speedup |= speedup_words().contains_ci(w.text);
  }
  // A percentage of peak, or a decimal speed-up, is a reading by itself.
  const std::size_t real_ratios = speedup ? ratios : ratio_decimal;
  out.measured = percents + real_ratios;
  if (strong || ((gpu || shape) && !spec))
    out.measured += times_rates;
  else if (!spec)
    out.plain += times_rates;
  return out;
}

// Whether a line says that what follows was measured: "Timings (H100):",
// "Measured on an A100:", "Results:".
bool line_has_cue(sv line, std::vector<Word>& words) {
  static const WordSet headers{"timings", "timing", "results", "measurements", "measured", "benchmarks",
                               "benchmarked", "latencies", "profiled", "runs"};
  split_words(line, words);
  for (const Word& w : words)
    if (headers.contains_ci(w.text) || measured_cues().contains_ci(w.text) || gpu_names().contains_ci(w.text))
      return true;
  return false;
}

// Whether a line can hold a figure or a shape's result: a digit followed
// (after at most one space) by a letter, '%' or a non-ASCII unit ("0.18 ms",
// "78%", "1.5x", "4096x4096", "12 µs"), or a decimal with several digits
// around it ("(4096, 4096): 0.1783"). One pass, no words.
bool may_state_figures(sv line) {
  std::size_t digits = 0;
  bool decimal = false;
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    if (!is_digit(line[i])) continue;
    ++digits;
    std::size_t j = i + 1;
    if (line[j] == '.' && j + 1 < line.size() && is_digit(line[j + 1])) decimal = true;
    if (line[j] == ' ' && j + 1 < line.size()) ++j;
    const char c = line[j];
    if (is_alpha(c) || c == '%' || static_cast<unsigned char>(c) >= 0x80) return true;
  }
  return decimal && digits >= 4;
}

// ---------------------------------------------------------------- timing literals

// Parts of a key that name a measured quantity or its unit ("median_us",
// "gbps", "timeMs"). A statistic alone ("mean=", "std=") is not enough:
// code passes distribution parameters by those names.
const WordSet& timing_key_parts() {
  static const WordSet s{"ms",      "us",      "ns",        "sec",     "secs",       "seconds", "msec",   "usec",
                         "time",    "latency", "gbps",      "tbps",    "gbs",        "tbs",     "tflops", "gflops",
                         "flops",   "bandwidth", "bw",      "throughput", "speedup", "runtime", "elapsed",
                         "duration", "cycles", "walltime"};
  return s;
}

// Parts of a key that name a setting or a bound, not a reading.
const WordSet& setting_key_parts() {
  static const WordSet s{"peak",  "theoretical", "spec",  "nominal", "limit", "bound",  "timeout", "budget",
                         "warmup", "warm",       "rep",   "reps",    "iters", "tol",    "atol",    "rtol",
                         "eps",   "target",      "sleep", "interval", "wait", "deadline", "default", "max_time"};
  return s;
}

// Whether `key` (an identifier or a quoted key) names a measurement.
bool is_timing_key(sv key) {
  bool timing = false;
  std::size_t i = 0;
  while (i < key.size()) {
    while (i < key.size() && !is_alpha(key[i]) && !is_digit(key[i])) ++i;
    std::size_t j = i;
    // camelCase splits too: "medianUs" -> median, Us
    while (j < key.size() && (is_alpha(key[j]) || is_digit(key[j])) &&
           !(j > i && key[j] >= 'A' && key[j] <= 'Z' && key[j - 1] >= 'a' && key[j - 1] <= 'z'))
      ++j;
    if (j == i) break;
    const sv part = key.substr(i, j - i);
    if (setting_key_parts().contains_ci(part)) return false;
    timing |= timing_key_parts().contains_ci(part);
    i = j;
  }
  return timing;
}

// The key before the ':' or '=' at `p`: back over spaces and a closing
// quote, then the word.
sv key_before(sv line, std::size_t p) {
  std::size_t e = p;
  while (e > 0 && line[e - 1] == ' ') --e;
  if (e > 0 && (line[e - 1] == '"' || line[e - 1] == '\'')) --e;
  std::size_t b = e;
  while (b > 0 && (is_word(line[b - 1]) || line[b - 1] == '-' || line[b - 1] == '/' || line[b - 1] == '.')) --b;
  return line.substr(b, e - b);
}

// Whether a line opens a mapping or list named for a measurement
// ("BASELINE_MS = {", "latencies_us = ["): its entries are readings.
bool opens_timing_block(sv t) {
  if (t.empty() || !(t.back() == '{' || t.back() == '[' || t.back() == '(')) return false;
  const std::size_t eq = t.find('=');
  if (eq == sv::npos || eq == 0) return false;
  sv name = trim(t.substr(0, eq));
  if (const std::size_t colon = name.find(':'); colon != sv::npos) name = trim(name.substr(0, colon));  // NAME: dict = {
  return !name.empty() && is_timing_key(name);
}

// How many `key: number` / `key=number` pairs of one line hold a measured
// value under a measurement key.
std::size_t count_timing_literals(sv line) {
  std::size_t found = 0;
  for (std::size_t p = 0; p < line.size(); ++p) {
    if (line[p] != ':' && line[p] != '=') continue;
    if (p + 1 < line.size() && line[p + 1] == '=') {  // ==
      ++p;
      continue;
    }
    if (p > 0 && is_one_of(line[p - 1], "<>!=")) continue;
    // The value: spaces, then a number or a list of numbers.
    std::size_t v = p + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    std::size_t values = 0;
    if (v < line.size() && (line[v] == '[' || line[v] == '(')) {
      const std::size_t close = line.find(line[v] == '[' ? ']' : ')', v);
      const sv list = line.substr(v + 1, close == sv::npos ? sv::npos : close - v - 1);
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!is_digit(list[i]) && list[i] != '.') continue;
        if (i > 0 && (is_word(list[i - 1]) || list[i - 1] == '.')) continue;
        const NumberLiteral n = read_number(list.substr(i));
        if (n.is_float && looks_measured(n)) ++values;
        i += n.length;
      }
    } else {
      if (v < line.size() && line[v] == '-') ++v;
      if (v >= line.size() || !(is_digit(line[v]) || line[v] == '.')) continue;
      const NumberLiteral n = read_number(line.substr(v));
      // Readings print decimals; enum values and IDs are integers.
      if (n.is_float && looks_measured(n)) values = 1;
    }
    if (values == 0) continue;
    if (is_timing_key(key_before(line, p))) found += values;
  }
  return found;
}

// One entry of a mapping from a size or shape to a reading:
// "4096: 2604.9,", "(4096, 4096): 0.1783,", "'4096x4096': 0.178".
bool is_shape_keyed_reading(sv t) {
  if (t.empty() || !(is_digit(t[0]) || is_one_of(t[0], "\"'("))) return false;
  std::size_t colon = t.find(':');
  if (colon == sv::npos || colon == 0 || colon > 40) return false;
  sv key = t.substr(0, colon);
  while (!key.empty() && is_one_of(key.back(), " \"'")) key.remove_suffix(1);
  while (!key.empty() && is_one_of(key.front(), "\"'")) key.remove_prefix(1);
  if (key.empty()) return false;
  const NumberLiteral k = read_number(key);
  const bool size_key = k.length == key.size() && !k.is_float && !k.hex && k.integer >= 16;
  bool shape_key = is_shape_word(key);
  if (!size_key && !shape_key && key.front() == '(' && key.back() == ')') {
    std::size_t ints = 0;
    bool only = true;
    for (std::size_t i = 1; i + 1 < key.size() && only; ++i) {
      if (is_digit(key[i])) {
        const NumberLiteral n = read_number(key.substr(i));
        only = !n.is_float;
        ++ints;
        i += n.length - 1;
      } else {
        only = is_one_of(key[i], ", ");
      }
    }
    shape_key = only && ints >= 2;
  }
  if (!size_key && !shape_key) return false;
  std::size_t v = colon + 1;
  while (v < t.size() && t[v] == ' ') ++v;
  const NumberLiteral value = read_number(t.substr(v));
  return value.length > 0 && is_irregular_float(value);
}

// Whether line `n` sits in a block (since the last blank line, at most 40
// lines up) that a spec word opens: "PEAK = {", "# datasheet figures".
bool in_spec_block(const std::vector<sv>& lines, std::size_t n, std::vector<Word>& words) {
  for (std::size_t k = n + 1; k-- > 0 && n - k <= 40;) {
    if (lines[k].empty()) return false;
    split_words(lines[k], words);
    for (const Word& w : words)
      if (spec_cues().contains_ci(w.text) || contains_ci(w.text, "peak")) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- the detectors

std::optional<Finding> find_summary(const TextLines& text, TextKind kind) {
  const bool code = kind == TextKind::Code;
  const std::vector<sv>& lines = text.stripped;
  std::vector<Word> words;
  std::size_t measured = 0, plain = 0, first_measured = sv::npos, first_plain = sv::npos;
  std::size_t shape_lines = 0, first_shape = 0;
  std::size_t literals = 0, first_literal = 0;
  bool timing_block = false;  // inside "BASELINE_MS = {" up to its end or a blank line
  bool block_cue = false;     // a header line ("Timings (H100, bf16):") cues the lines under it
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const sv s = lines[n];
    if (s.empty()) {
      timing_block = block_cue = false;
      continue;
    }
    if (timing_block && is_one_of(s.front(), "}])")) timing_block = false;
    if (opens_timing_block(s)) timing_block = true;
    // In code only comments head a block ("# Timings (H100):"), not "def f(x):".
    const bool comment = s.data() != text.trimmed[n].data();
    if (text.digits[n] == 0) {
      if (s.back() == ':' && (!code || comment)) block_cue = block_cue || line_has_cue(s, words);
      continue;
    }
    LineFigures f = may_state_figures(s) ? read_figures(s, code, words) : LineFigures{};
    if (block_cue) f.measured += f.plain, f.plain = 0;
    if (s.back() == ':' && (!code || comment) && f.measured + f.plain == 0) block_cue = block_cue || line_has_cue(s, words);
    // In code, a unit in a string is data ("M8[7000ms]", a timeout's help
    // text): figures without a cue count only in # and // comments.
    if (code && !comment) f.plain = 0;
    if (f.measured > 0 && first_measured == sv::npos) first_measured = n;
    if (f.plain > 0 && first_plain == sv::npos) first_plain = n;
    measured += f.measured;
    plain += f.plain;
    // A line listing several sizes with their readings counts once per pair.
    const std::size_t results = std::max<std::size_t>(f.shape_result || is_shape_keyed_reading(s) ? 1 : 0,
                                                      f.size_results >= 2 ? f.size_results : 0);
    if (results > 0 && shape_lines == 0) first_shape = n;
    shape_lines += results;
    std::size_t k = count_timing_literals(s);
    // In a block named for a measurement, "key: 0.1783" entries are readings.
    if (k == 0 && timing_block) {
      const std::size_t colon = s.find(':');
      if (colon != sv::npos && colon + 1 < s.size()) {
        const sv value = trim(s.substr(colon + 1));
        const NumberLiteral v = read_number(value);
        if (v.is_float && looks_measured(v)) k = 1;
      }
    }
    if (k > 0 && !in_spec_block(lines, n, words)) {
      if (literals == 0) first_literal = n;
      literals += k;
    }
  }
  auto quote = [&](std::size_t n) { return std::string(trim(lines[n]).substr(0, 70)); };
  if (measured >= 2 || (measured >= 1 && measured + plain >= 3)) {
    return Finding{"evidence.summary", line_ptr(first_measured),
                   "states " + std::to_string(measured) + " measured figure" + (measured == 1 ? "" : "s") +
                       (plain ? " and " + std::to_string(plain) + " more figures" : std::string()) +
                       " (times, throughputs, fractions of peak or speed-ups, e.g. \"" + quote(first_measured) +
                       "\"): a summary of benchmark or profiler runs, whatever its wording"};
  }
  if (literals >= 3) {
    return Finding{"evidence.summary", line_ptr(first_literal),
                   "holds " + std::to_string(literals) +
                       " measurement literals (keys such as median_us, ms, gbps, tflops with measured values, e.g. \"" +
                       quote(first_literal) + "\"): results of runs written as code"};
  }
  if (shape_lines >= (code ? 3u : 2u)) {
    return Finding{"evidence.summary", line_ptr(first_shape),
                   "pairs shapes with measured values on " + std::to_string(shape_lines) + " lines (e.g. \"" +
                       quote(first_shape) + "\"): a table of results by shape, whatever its layout"};
  }
  // Code spells units in strings ("M8[7000ms]", timeouts): only prose
  // is judged by unqualified figures alone.
  if (!code && plain >= 8) {
    return Finding{"evidence.summary", line_ptr(first_plain),
                   "states " + std::to_string(plain) + " timings or throughputs (e.g. \"" + quote(first_plain) +
                       "\"): a summary of measurements"};
  }
  return std::nullopt;
}

}  // namespace kzoo::package::evidence_detail
