#include "kzoo/package/evidence_text.hpp"
#include "kzoo/package/evidence_lines.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo::package::evidence_detail {
namespace {

// ---------------------------------------------------------------- blobs

constexpr std::size_t kBlobRun = 4096;          // characters of base64/hex
constexpr std::size_t kEscapeRun = 1024;        // consecutive \xNN escapes
constexpr std::size_t kMaxDataNumbers = 2048;   // literals in data-only lines
constexpr std::size_t kMaxPreciseFloats = 512;  // floats with >= 5 significant digits

int char_classes(sv s) {
  bool up = false, lo = false, dg = false;
  for (char c : s) {
    up |= (c >= 'A' && c <= 'Z');
    lo |= (c >= 'a' && c <= 'z');
    dg |= is_digit(c);
  }
  return int(up) + int(lo) + int(dg);
}

// Counts the number literals and the identifiers/strings of one line of code.
struct LineTokens {
  std::size_t numbers = 0;
  std::size_t precise = 0;  // floats with >= 5 significant digits: measured or computed values
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
    } else if (is_alpha(c) || c == '_') {
      while (i < line.size() && is_word(line[i])) ++i;
      ++t.words;
    } else {
      ++i;
    }
  }
  return t;
}

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

}  // namespace

std::optional<Finding> find_encoded_blob(sv text) {
  // (1) One long token of base64/hex characters anywhere (a string literal,
  // a comment, a bare line).
  {
    std::size_t line = 0, run_start = 0, run_line = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
      bool in = i < text.size() && is_b64(text[i]);
      if (!in) {
        std::size_t len = i - run_start;
        if (len > kBlobRun && char_classes(text.substr(run_start, len)) >= 2) {
          return Finding{"evidence.encoded-blob", line_ptr(run_line),
                         "holds a run of " + std::to_string(len) +
                             " base64/hex characters: encoded data (a tensor, weights or a binary) "
                             "is not source, whatever the file is called"};
        }
        run_start = i + 1;
        run_line = line + (i < text.size() && text[i] == '\n' ? 1 : 0);
      }
      if (i < text.size() && text[i] == '\n') ++line;
    }
  }
  std::vector<sv> lines = split_lines(text);
  // (2) Base64 wrapped over many lines ("...\n" columns, implicit string
  // concatenation, PEM bodies), and (3) runs of \xNN escapes.
  std::size_t column_total = 0, column_start = 0, escape_total = 0, escape_start = 0;
  std::size_t hexdump_lines = 0, hexdump_start = 0, dense_total = 0, dense_lines = 0, dense_start = 0;
  std::size_t data_numbers = 0, precise = 0, first_data_line = 0;
  bool seen_data = false;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    sv t = trim(lines[n]);
    sv core = t;
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
    core = strip_ends(core);
    for (sv p : {sv("rb"), sv("br"), sv("b"), sv("r"), sv("u")}) {
      if (starts_with(core, p) && core.size() > p.size() && (core[p.size()] == '"' || core[p.size()] == '\'')) {
        core = strip_ends(core.substr(p.size()));
        break;
      }
    }
    bool column = core.size() >= 32 && std::all_of(core.begin(), core.end(), is_b64) && char_classes(core) >= 2 &&
                  core.find('_') == sv::npos;
    if (column) {
      if (column_total == 0) column_start = n;
      column_total += core.size();
      if (column_total > kBlobRun) {
        return Finding{"evidence.encoded-blob", line_ptr(column_start),
                       "holds " + std::to_string(column_total) +
                           "+ characters of base64/hex wrapped over consecutive lines: encoded data "
                           "is not source"};
      }
    } else {
      column_total = 0;
    }
    // Escapes accumulate over consecutive lines that are (almost) nothing
    // but \xNN escapes, so splitting the dump across lines does not help.
    std::size_t escapes = 0;
    for (std::size_t i = 0; i < t.size();) {
      if (i + 3 < t.size() && t[i] == '\\' && (t[i + 1] == 'x' || t[i + 1] == 'X') && is_hex(t[i + 2]) &&
          is_hex(t[i + 3])) {
        ++escapes;
        i += 4;
      } else {
        ++i;
      }
    }
    if (escapes > 0 && escapes * 4 * 10 >= t.size() * 8) {
      if (escape_total == 0) escape_start = n;
      escape_total += escapes;
      if (escape_total > kEscapeRun) {
        return Finding{"evidence.encoded-blob", line_ptr(escape_start),
                       "holds more than " + std::to_string(kEscapeRun) +
                           " \\xNN byte escapes in a row: a binary embedded in a string literal"};
      }
    } else {
      escape_total = 0;
    }
    // (5) xxd / hexdump -C output: an offset, then groups of hex digits.
    if (is_hexdump_line(t)) {
      if (hexdump_lines++ == 0) hexdump_start = n;
      if (hexdump_lines >= 8) {
        return Finding{"evidence.encoded-blob", line_ptr(hexdump_start),
                       "holds a hex dump (xxd/hexdump/od output): a binary written out as text"};
      }
    } else {
      hexdump_lines = 0;
    }
    // (6) Long lines without a single space, line after line: base85,
    // uuencode, minified data. Authored code has spaces.
    if (t.size() >= 60 && t.find(' ') == sv::npos && t.find('\t') == sv::npos) {
      if (dense_total == 0) dense_start = n;
      dense_total += t.size();
      ++dense_lines;
      if (dense_lines >= 16 && dense_total > kBlobRun) {
        return Finding{"evidence.encoded-blob", line_ptr(dense_start),
                       std::to_string(dense_lines) + " consecutive lines of 60+ characters without a space (" +
                           std::to_string(dense_total) + " characters): encoded or minified data"};
      }
    } else {
      dense_total = 0, dense_lines = 0;
    }
    // (4) Pasted numbers: lines that are (almost) nothing but number
    // literals. A lookup table of a few hundred entries passes; a tensor's
    // worth of values, or hundreds of high-precision measured values, not.
    LineTokens tok = tokenize_numbers(t);
    if (tok.numbers >= 1 && tok.numbers >= 3 * tok.words) {
      if (!seen_data) first_data_line = n, seen_data = true;
      data_numbers += tok.numbers;
      precise += tok.precise;
    }
  }
  if (data_numbers > kMaxDataNumbers || precise > kMaxPreciseFloats) {
    return Finding{"evidence.encoded-blob", line_ptr(first_data_line),
                   "embeds " + std::to_string(data_numbers) + " number literals (" + std::to_string(precise) +
                       " high-precision floats) in data-only lines: that is a tensor, golden output or "
                       "measurement dump, not an authored constant table (limits: " +
                       std::to_string(kMaxDataNumbers) + " literals, " + std::to_string(kMaxPreciseFloats) +
                       " floats with 5+ significant digits)"};
  }
  return std::nullopt;
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
  // 2026-11-29 14:05:00, 2026-11-29T14:05, 2026/11/29 14:05
  if (digits(0, 4) && s.size() > 16 && (s[4] == '-' || s[4] == '/') && digits(5, 2) && s[7] == s[4] &&
      digits(8, 2) && (s[10] == ' ' || s[10] == 'T') && digits(11, 2) && s[13] == ':' && digits(14, 2))
    return true;
  // 14:05:00 at the start of the line
  if (digits(0, 2) && s.size() >= 8 && s[2] == ':' && digits(3, 2) && s[5] == ':' && digits(6, 2)) return true;
  // glog: I1129 14:05:00.123456
  if (s.size() > 14 && std::strchr("IWEF", s[0]) && s[0] != '\0' && digits(1, 4) && s[5] == ' ' && digits(6, 2) &&
      s[8] == ':')
    return true;
  return false;
}

bool has_level_prefix(sv s) {
  static const std::array<sv, 9> levels = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "TRACE", "CRITICAL", "FATAL", "NOTICE"};
  bool bracket = !s.empty() && s.front() == '[';
  sv body = bracket ? s.substr(1) : s;
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

bool is_compiler_diagnostic(sv s) {
  std::size_t kw = sv::npos;
  for (sv k : {sv(": error"), sv(": warning"), sv(": note:"), sv(": fatal error"), sv("): error"), sv("): warning"),
               sv(": remark")}) {
    kw = std::min(kw, s.find(k));
  }
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

bool is_measurement_line(sv s) {
  std::vector<sv> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (is_space(s[i]) || is_one_of(s[i], ",;|()[]={}"))) ++i;
    std::size_t j = i;
    while (j < s.size() && !(is_space(s[j]) || is_one_of(s[j], ",;|()[]={}"))) ++j;
    if (j > i) tokens.push_back(s.substr(i, j - i));
    i = j;
  }
  std::size_t numbers = 0;
  bool unit = false;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    sv tk = strip_decoration(tokens[k]);
    while (!tk.empty() && tk.back() == ':') tk.remove_suffix(1);
    // A quote glued to a number is a string literal in code, not a reading.
    if (tk.size() != trim(tokens[k]).size() && (tokens[k].find('"') != sv::npos || tokens[k].find('\'') != sv::npos))
      continue;
    if (is_numeric_cell(tk)) {
      ++numbers;
      std::string l = lower(tk);
      if (!std::all_of(l.begin(), l.end(), [](char c) { return is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e'; }) &&
          l.back() != '%' && l.find("0x") == std::string::npos)
        unit = true;  // "0.12ms", "1.5x", "900gb/s"
      else if (k + 1 < tokens.size() && is_time_or_rate_unit(tokens[k + 1]))
        unit = true;
    }
  }
  return unit && numbers >= 2;
}

// Lines that on their own say "this is captured output" (in prose; code
// may quote one of them, so it needs two).
bool is_strong_marker(sv raw) {
  sv s = strip_comment(raw);
  while (!s.empty() && (s.front() == '|' || is_space(s.front()))) s.remove_prefix(1);
  static const std::array<sv, 22> markers = {
      "ptxas info", "==PROF==", "Traceback (most recent call last)", "NVIDIA-SMI ", "Driver Version:",
      "PyTorch version:", "CUDA used to build PyTorch:", "CUDA Kernel Statistics", "CUDA API Statistics",
      "GPU activities:", "Collecting data...", "Generating '", "Self CPU time total:", "Self CUDA time total:",
      "** CUDA GPU Kernel Summary", "** CUDA API Summary", "** CUDA GPU MemOps Summary", "** OS Runtime Summary",
      "Generating SQLite file", "Triton autotuning for function", "==ERROR== ", "========= COMPUTE-SANITIZER"};
  for (sv m : markers)
    if (starts_with(s, m)) return true;
  return false;
}

bool is_log_line(sv raw) {
  sv s = strip_comment(raw);
  while (!s.empty() && s.front() == '|' && s.size() > 1 && is_space(s[1])) s = trim(s.substr(1));
  if (s.empty()) return false;
  static const std::array<sv, 62> prefixes = {
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
  for (sv p : prefixes) {
    if (starts_with(s, p)) {
      if (p == "=====") return s.find("test session starts") != sv::npos || s.find(" passed") != sv::npos ||
                                s.find(" failed") != sv::npos || s.find("FAILURES") != sv::npos;
      if (p == "Ran ") return s.find(" test") != sv::npos && s.find(" in ") != sv::npos;
      return true;
    }
  }
  // Traceback frames: File "x.py", line 12, in f
  if (starts_with(s, "File \"") && s.find("\", line ") != sv::npos) return true;
  // RuntimeError: ..., torch.cuda.OutOfMemoryError: ...
  {
    std::size_t sp = s.find(' ');
    sv first = s.substr(0, sp);
    if ((ends_with(first, "Error:") || ends_with(first, "Exception:") || ends_with(first, "Warning:")) &&
        std::all_of(first.begin(), first.end(), [](char c) { return is_word(c) || c == '.' || c == ':'; }))
      return true;
  }
  // ==12345== (valgrind, nvprof, compute-sanitizer)
  if (starts_with(s, "==")) {
    std::size_t i = 2;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i > 2 && s.substr(i, 2) == "==") return true;
  }
  // [3/10] ninja progress, [ 50%] make progress
  if (s.front() == '[') {
    std::size_t close = s.find(']');
    if (close != sv::npos && close > 1) {
      sv in = trim(s.substr(1, close - 1));
      bool prog = !in.empty() && std::all_of(in.begin(), in.end(), [](char c) { return is_digit(c) || c == '/' || c == '%'; }) &&
                  (in.find('/') != sv::npos || in.back() == '%');
      if (prog) return true;
    }
  }
  return has_timestamp_prefix(s) || has_level_prefix(s) || is_compiler_diagnostic(s) || is_measurement_line(s);
}

}  // namespace

std::optional<Finding> find_log(sv text, TextKind kind) {
  std::vector<sv> lines = split_lines(text);
  // An `env` dump: well-known variables of a login shell, one per line.
  static const std::array<sv, 13> env_vars = {"HOME=", "PATH=", "PWD=", "OLDPWD=", "SHLVL=", "HOSTNAME=", "USER=",
                                              "LOGNAME=", "LD_LIBRARY_PATH=", "TERM=", "SHELL=", "LANG=", "_="};
  std::set<sv> env_seen;
  std::size_t strong = 0, first_strong = 0;
  std::size_t counted = 0, logged = 0, run = 0, best_run = 0, run_start = 0, best_start = 0, first_log = 0;
  bool any = false;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    sv t = trim(lines[n]);
    for (sv e : env_vars)
      if (starts_with(t, e)) env_seen.insert(e);
    // Doctests show exceptions as "Traceback (most recent call last):": in
    // code that header alone proves nothing; the frames below it still count.
    bool doctest_like = kind == TextKind::Code && starts_with(strip_comment(t), "Traceback (most recent call last)");
    if (!doctest_like && is_strong_marker(t) && strong++ == 0) first_strong = n;
    if (t.empty() || is_rule_line(t)) continue;  // blank and ruler lines neither count nor break a run
    ++counted;
    if (is_log_line(t)) {
      ++logged;
      if (!any) first_log = n, any = true;
      if (run == 0) run_start = n;
      if (++run > best_run) best_run = run, best_start = run_start;
    } else {
      run = 0;
    }
  }
  if (env_seen.size() >= 3) {
    return Finding{"evidence.log", "",
                   "is an environment dump (" + std::to_string(env_seen.size()) +
                       " login-shell variables such as HOME=, PATH=, SHLVL=): hardware/software census data"};
  }
  if (strong >= (kind == TextKind::Code ? 2u : 1u)) {
    return Finding{"evidence.log", line_ptr(first_strong),
                   "holds compiler, profiler, crash or environment output (e.g. \"" +
                       std::string(trim(lines[first_strong]).substr(0, 60)) + "\")"};
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

std::optional<Finding> find_compiler_output(sv text) {
  std::vector<sv> lines = split_lines(text);
  bool ptx_version = false, ptx_target = false, ptx_addr = false, ptx_entry = false;
  std::size_t sass = 0, llvm = 0, mlir = 0, gas = 0;
  for (sv raw : lines) {
    sv t = trim(raw);
    ptx_version |= starts_with(t, ".version ");
    ptx_target |= starts_with(t, ".target sm_") || starts_with(t, ".target compute_");
    ptx_addr |= starts_with(t, ".address_size ");
    ptx_entry |= starts_with(t, ".visible .entry ") || starts_with(t, ".entry ") || starts_with(t, ".visible .func ");
    // cuobjdump -sass: "/*0070*/  IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;"
    if (starts_with(t, "/*")) {
      std::size_t close = t.find("*/");
      if (close != sv::npos && close >= 6 && close <= 12 &&
          std::all_of(t.begin() + 2, t.begin() + static_cast<std::ptrdiff_t>(close), is_hex)) {
        sv op = trim(t.substr(close + 2));
        if (!op.empty() && ((op[0] >= 'A' && op[0] <= 'Z') || op[0] == '@') && op.find(" ;") != sv::npos) ++sass;
      }
    }
    if (starts_with(t, "; ModuleID = ") || starts_with(t, "target datalayout = ") ||
        starts_with(t, "target triple = ") || starts_with(t, "attributes #") || starts_with(t, "!llvm."))
      ++llvm;
    if (t.find("tt.func") != sv::npos || t.find("triton_gpu.") != sv::npos || t.find("ttg.") != sv::npos ||
        starts_with(t, "#blocked") || starts_with(t, "#loc"))
      ++mlir;
    // A compiler signs its assembly; hand-written .S files do not.
    if (starts_with(t, ".ident") && (t.find("GCC") != sv::npos || t.find("clang") != sv::npos)) ++gas;
  }
  std::string what;
  if (ptx_version && ptx_target && (ptx_addr || ptx_entry)) what = "a PTX module (.version/.target/.entry)";
  else if (sass >= 8) what = "a SASS disassembly (cuobjdump/nvdisasm output)";
  else if (llvm >= 2) what = "LLVM IR";
  else if (mlir >= 8) what = "Triton/MLIR intermediate representation";
  else if (gas >= 1) what = "compiler-generated assembly (it carries the compiler's .ident)";
  if (what.empty()) return std::nullopt;
  return Finding{"evidence.compiled", "",
                 "is " + what + ", which is compiler output, not source (hand-written inline PTX belongs in "
                 "asm() statements of a .cu/.py source)"};
}

// ---------------------------------------------------------------- documents

std::optional<Finding> find_metadata_document(sv text, TextKind kind) {
  sv t = trim(text);
  while (!t.empty() && (t.front() == '\n' || t.front() == '\r')) t.remove_prefix(1);
  if (starts_with(t, "\xef\xbb\xbf")) t.remove_prefix(3);
  if (!t.empty() && (t.front() == '{' || t.front() == '[')) {
    auto doc = nlohmann::json::parse(t.begin(), t.end(), nullptr, false);
    if (!doc.is_discarded() && !doc.empty()) {
      return Finding{"evidence.metadata", "",
                     "is a JSON document (" + std::string(doc.is_object() ? "an object" : "an array") +
                         "), not source: traces, reports and results are often JSON"};
    }
  }
  if (starts_with(t, "<?xml") || starts_with(lower(t.substr(0, 16)), "<!doctype html") || starts_with(lower(t.substr(0, 6)), "<html")) {
    return Finding{"evidence.metadata", "", "is an XML/HTML document: generated reports and exports are not source"};
  }
  // A trace that does not parse as a whole (truncated, prefixed): count the
  // keys of trace events.
  {
    std::size_t events = 0;
    for (sv key : {sv("\"ph\":"), sv("\"ts\":"), sv("\"dur\":"), sv("\"traceEvents\"")}) {
      for (std::size_t p = text.find(key); p != sv::npos; p = text.find(key, p + 1)) ++events;
    }
    if (events >= 12) {
      return Finding{"evidence.metadata", "", "holds trace events (\"ph\"/\"ts\"/\"dur\" keys): a profiler trace"};
    }
  }
  std::vector<sv> lines = split_lines(text);
  std::size_t nonblank = 0, json_lines = 0, key_lines = 0;
  for (sv raw : lines) {
    sv l = trim(raw);
    if (l.empty() || l.front() == '#') continue;
    ++nonblank;
    if (l.front() == '{' && l.back() == '}') {
      auto doc = nlohmann::json::parse(l.begin(), l.end(), nullptr, false);
      if (!doc.is_discarded()) ++json_lines;
    }
    // key: value   /   - key: value   (YAML mappings)
    sv k = l;
    if (starts_with(k, "- ")) k.remove_prefix(2);
    std::size_t i = 0;
    if (!k.empty() && (is_alpha(k[0]) || k[0] == '_')) {
      while (i < k.size() && (is_word(k[i]) || k[i] == '.' || k[i] == '-')) ++i;
      if (i < k.size() && k[i] == ':' && (i + 1 == k.size() || k[i + 1] == ' ')) ++key_lines;
    }
  }
  if (json_lines >= 3 && json_lines * 2 >= nonblank) {
    return Finding{"evidence.metadata", "",
                   "is JSON Lines (" + std::to_string(json_lines) + " JSON objects, one per line): a log or dump"};
  }
  // Code (Python annotations, dataclasses) legitimately has "name: type" lines.
  if (kind == TextKind::Prose && key_lines >= 8 && key_lines * 10 >= nonblank * 6) {
    return Finding{"evidence.metadata", "",
                   "is YAML-like key: value data (" + std::to_string(key_lines) + " of " + std::to_string(nonblank) +
                       " lines)"};
  }
  return std::nullopt;
}

}  // namespace kzoo::package::evidence_detail
