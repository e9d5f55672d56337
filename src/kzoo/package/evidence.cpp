// The evidence-free policy: names (extensions, well-known generated names,
// cache/build directories), magic numbers, text validity and size here; the
// text heuristics (logs, tables, blobs, documents) in evidence_text.cpp.
//
// Decisions worth knowing:
// - PTX (.ptx), SASS and LLVM/Triton IR (.ll .ttir .ttgir .llir) are text, but
//   they are compiler OUTPUT: refused by name like objects. Hand-written
//   inline PTX belongs in a .cu/.py source as asm() strings.
// - ONNX and other protobuf files have no magic number. They are caught by
//   name (.onnx .pb) and, since protobuf wire format is full of control bytes
//   (field tags 0x08, 0x12, ...), by evidence.binary whatever the name.
// - .toml/.ini/.cfg: .toml is refused with the other metadata formats (the
//   package's build lives in setup.py/CMakeLists.txt/Makefile under src/);
//   setup.cfg-style .cfg/.ini files are treated as text and content-checked.
#include "kzoo/util/ascii.hpp"
#include "kzoo/package/evidence.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

#include "kzoo/package/evidence_text.hpp"

namespace kzoo::package {
namespace {

using sv = std::string_view;
using evidence_detail::Finding;
using evidence_detail::TextKind;

const char* const kFixData =
    "remove it; generate such data in .kernel_package/build_test_env.py under the runner's workdir";
const char* const kFixBuild =
    "remove it; build products are made at run time (build_test_env.py) under the runner's workdir";
const char* const kFixArchive = "remove it; put the source it holds, unpacked, under src/";
const char* const kFixLog =
    "remove it; logs, traces, profiles and reports are produced per run under the runner's workdir and never "
    "kept in the package";
const char* const kFixTable =
    "remove it; kzoo measures the kernel itself and the server records results in bench_result.yaml";
const char* const kFixSummary =
    "remove the figures: kzoo measures the kernel itself and records its results in bench_result.yaml; describe "
    "the technique in words (what it does and why), not how fast it ran where";
const char* const kFixTuning =
    "keep the candidates (a triton.autotune config list) or a rule computed from the shape, and let the kernel "
    "tune at run time; per-shape results of a tuning run are not source";
const char* const kFixCensus =
    "remove it; the runner records the machine, driver and libraries of every result (state requirements as "
    "such: \"needs CUDA 12.4 or newer\")";
const char* const kFixMeta =
    "the only metadata files are .kernel_package/desc.yaml and .kernel_package/bench_result.yaml; express "
    "configuration in source (e.g. a Python dict in src/) or remove it";
const char* const kFixMedia = "remove it; describe what it shows in README.md as prose";
const char* const kFixNotebook = "notebooks carry outputs; export the code to a .py file under src/ and remove it";
const char* const kFixBinary =
    "kernel packages hold authored UTF-8 text only; remove it (generate data in .kernel_package/build_test_env.py "
    "under the runner's workdir) or re-save the source as UTF-8";


sv basename_of(sv path) {
  std::size_t slash = path.rfind('/');
  return slash == sv::npos ? path : path.substr(slash + 1);
}

// The extension after the last dot; hidden files without another dot
// (".gitignore") have none.
std::string extension_of(sv base) {
  std::size_t dot = base.rfind('.');
  if (dot == sv::npos || dot == 0) return {};
  return util::ascii_lower(base.substr(dot + 1));
}

struct Category {
  const char* what;
  const char* fix;
  const char* rule;
};

const Category kTensor{"a tensor, weight or dataset file", kFixData, "evidence.name"};
const Category kObject{"a compiled object or compiler output", kFixBuild, "evidence.name"};
const Category kArchive{"an archive or compressed file", kFixArchive, "evidence.name"};
const Category kLog{"a log, trace, profile or database file", kFixLog, "evidence.name"};
const Category kNotebook{"a Jupyter notebook", kFixNotebook, "evidence.name"};
const Category kMedia{"an image, document or media file", kFixMedia, "evidence.name"};
const Category kMeta{"a metadata/data file (YAML/JSON/CSV/TOML/XML)", kFixMeta, "evidence.metadata"};
const Category kReport{"a generated report", kFixLog, "evidence.name"};

const Category* category_of_extension(const std::string& ext) {
  static const std::set<std::string> tensor = {
      "pt",      "pth",     "ckpt",   "safetensors", "npy",   "npz",     "bin",     "h5",       "hdf5",   "hdf",
      "onnx",    "pb",      "tflite", "gguf",        "ggml",  "pkl",     "pickle",  "joblib",   "mat",    "parquet",
      "arrow",   "feather", "tfrecord", "tfrecords", "dat",   "raw",     "pdparams", "caffemodel", "mlmodel", "keras",
      "engine",  "trt",     "t7",     "lmdb",        "mdb",   "msgpack", "nc",      "zarr",     "idx",    "memmap",
      "weights", "params",  "model",  "torchscript", "ptl",   "mar"};
  static const std::set<std::string> object = {
      "o",    "obj",   "so",    "a",    "lib",  "dll",  "dylib", "exe",  "cubin", "fatbin", "ptx",  "sass",
      "pyc",  "pyo",   "pyd",   "elf",  "bc",   "ll",   "ttir",  "ttgir", "llir", "amdgcn", "hsaco", "gch",
      "pch",  "lo",    "class", "wasm", "nvvm", "ko"};
  static const std::set<std::string> archive = {"zip", "tar", "gz",  "tgz", "bz2", "tbz2", "xz",  "txz", "zst",
                                                "zstd", "7z", "rar", "whl", "egg", "lz4",  "lzma", "jar", "war",
                                                "deb",  "rpm", "iso", "dmg", "cab", "z",    "br",  "snappy"};
  static const std::set<std::string> logs = {"log",    "err",    "trace",   "nsys-rep", "ncu-rep", "qdrep",
                                             "qdstrm", "sqlite", "sqlite3", "db",       "prof",    "pstats",
                                             "nvvp",   "nvprof", "pftrace", "perfetto-trace", "etl", "speedscope",
                                             "cprofile", "lprof", "dump",   "core",     "stdout",  "stderr",  "out"};
  static const std::set<std::string> media = {"png", "jpg", "jpeg", "gif", "bmp",  "tif",  "tiff", "webp", "ico",
                                              "svg", "pdf", "eps",  "ps",  "mp4",  "mov",  "avi",  "webm", "mkv",
                                              "wav", "mp3", "flac", "ogg", "docx", "doc",  "xlsx", "xls",  "pptx",
                                              "ppt", "odt", "ods",  "odp", "psd",  "heic", "avif"};
  static const std::set<std::string> meta = {"yaml", "yml", "json", "jsonl", "ndjson", "json5", "csv",
                                             "tsv",  "toml", "xml", "plist", "proto.txt", "pbtxt", "prototxt"};
  static const std::set<std::string> report = {"html", "htm", "xhtml"};
  if (tensor.count(ext)) return &kTensor;
  if (object.count(ext)) return &kObject;
  if (archive.count(ext)) return &kArchive;
  if (logs.count(ext)) return &kLog;
  if (ext == "ipynb") return &kNotebook;
  if (media.count(ext)) return &kMedia;
  if (meta.count(ext)) return &kMeta;
  if (report.count(ext)) return &kReport;
  return nullptr;
}

// Directories that only ever hold caches, build trees or run output.
bool is_generated_dir(const std::string& seg) {
  static const std::set<std::string> dirs = {
      "__pycache__", ".ipynb_checkpoints", ".git",   ".hg",        ".svn",    ".pytest_cache", ".mypy_cache",
      ".ruff_cache", ".tox",               ".nox",   "cmakefiles", ".triton", "node_modules",  "wandb",
      "mlruns",      "lightning_logs",     ".cache", ".eggs",      "tensorboard", "nsight_reports"};
  return dirs.count(seg) > 0 || (seg.size() > 9 && seg.substr(seg.size() - 9) == ".egg-info") ||
         (seg.size() > 10 && seg.substr(seg.size() - 10) == ".dist-info");
}

// Names that are output whatever their extension.
bool is_generated_name(const std::string& base) {
  static const std::set<std::string> names = {
      "nohup.out",   "a.out",       "core",        "perf.data",       "perf.data.old", ".ninja_log",
      ".ninja_deps", "cmakecache.txt", "compile_commands.json", ".coverage", ".ds_store", "thumbs.db",
      "cmake_install.cmake", "install_manifest.txt"};
  if (names.count(base)) return true;
  // core.12345
  if (base.rfind("core.", 0) == 0 && base.size() > 5 &&
      std::all_of(base.begin() + 5, base.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return true;
  return false;
}

// Plain-text names (.txt, .md, none) whose stem says "captured output".
bool is_output_stem(const std::string& base, const std::string& ext) {
  if (!(ext.empty() || ext == "txt" || ext == "md" || ext == "rst")) return false;
  std::string stem = ext.empty() ? base : base.substr(0, base.size() - ext.size() - 1);
  for (char& c : stem) if (c == '-') c = '_';
  static const std::set<std::string> stems = {
      "stdout", "stderr",  "output",  "outputs", "log",     "logs",     "results", "result",  "timings",
      "timing", "trace",   "traces",  "profile", "profiling", "nvidia_smi", "collect_env", "env_dump",
      "environment", "pip_freeze", "census",  "golden",  "expected_output", "expected_outputs", "benchmark_results",
      "bench_results", "perf_results", "bench_log", "build_log", "compile_log", "ncu_report", "nsys_report"};
  return stems.count(stem) > 0;
}

bool is_authored_metadata(sv path) {
  return path == ".kernel_package/desc.yaml" || path == ".kernel_package/bench_result.yaml";
}

TextKind text_kind_of(const std::string& base, const std::string& ext) {
  static const std::set<std::string> code = {
      "py",  "pyi",  "cu",  "cuh", "cpp", "cc",  "cxx", "c",     "h",   "hpp",  "hh",   "hxx",
      "inl", "ipp",  "tpp", "cl",  "metal", "mlir", "rs", "go",  "java", "jl",  "sh",   "bash",
      "zsh", "cmake", "mk", "s",   "asm", "hip", "triton", "td", "pyx", "pxd", "f90", "f",  "lua", "swift",
      "ts",  "js",   "cfg", "ini", "in"};
  static const std::set<std::string> build_names = {"makefile", "gnumakefile", "cmakelists.txt", "dockerfile",
                                                    "sconstruct", "sconscript", "build", "build.bazel", "workspace",
                                                    "justfile", ".gitignore", ".gitattributes", ".clang-format"};
  if (code.count(ext) || build_names.count(base)) return TextKind::Code;
  return TextKind::Prose;
}

// ---------------------------------------------------------------- magic

bool has_prefix(sv s, sv magic) { return s.size() >= magic.size() && s.substr(0, magic.size()) == magic; }

std::optional<std::string> sniff_magic(sv c) {
  using namespace std::string_view_literals;
  auto u8 = [&](std::size_t i) { return i < c.size() ? static_cast<unsigned char>(c[i]) : 0u; };
  if (has_prefix(c, "PK\x03\x04"sv) || has_prefix(c, "PK\x05\x06"sv) || has_prefix(c, "PK\x07\x08"sv))
    return "a ZIP archive (also torch.save() .pt files, .npz, wheels, jars, Office files)";
  if (has_prefix(c, "\x1f\x8b"sv)) return "gzip-compressed data";
  if (has_prefix(c, "\x28\xb5\x2f\xfd"sv)) return "zstd-compressed data";
  if (has_prefix(c, "\xfd" "7zXZ\x00"sv)) return "xz-compressed data";
  if (has_prefix(c, "BZh"sv) && u8(3) >= '1' && u8(3) <= '9' &&
      (c.substr(4, 6) == "\x31\x41\x59\x26\x53\x59"sv || c.substr(4, 6) == "\x17\x72\x45\x38\x50\x90"sv))
    return "bzip2-compressed data";
  if (has_prefix(c, "7z\xbc\xaf\x27\x1c"sv)) return "a 7-Zip archive";
  if (has_prefix(c, "Rar!\x1a\x07"sv)) return "a RAR archive";
  if (has_prefix(c, "\x04\x22\x4d\x18"sv)) return "LZ4-compressed data";
  if (has_prefix(c, "\x7f" "ELF"sv)) return "an ELF executable, shared library or object file";
  if (has_prefix(c, "\xfe\xed\xfa\xce"sv) || has_prefix(c, "\xfe\xed\xfa\xcf"sv) ||
      has_prefix(c, "\xce\xfa\xed\xfe"sv) || has_prefix(c, "\xcf\xfa\xed\xfe"sv))
    return "a Mach-O executable or library";
  if (has_prefix(c, "\xca\xfe\xba\xbe"sv)) return "a Mach-O universal binary or Java class file";
  // "MZ" starts real text too ("MZ" is rare, but be exact): a DOS/PE header
  // follows it with binary fields, so require a non-printable byte soon after.
  if (has_prefix(c, "MZ"sv)) {
    bool binary_follows = c.size() < 4;
    for (std::size_t i = 2; i < std::min<std::size_t>(c.size(), 64); ++i)
      if (u8(i) < 0x09 || (u8(i) > 0x0d && u8(i) < 0x20) || u8(i) >= 0x80) binary_follows = true;
    if (binary_follows) return "a Windows PE/DOS executable or DLL";
  }
  if (has_prefix(c, "!<arch>\n"sv)) return "an ar archive (static library .a, .deb)";
  if (has_prefix(c, "\x93NUMPY"sv)) return "a NumPy .npy array";
  if (has_prefix(c, "\x89HDF"sv)) return "an HDF5 file";
  if (has_prefix(c, "\x0e\x03\x13\x01"sv)) return "an HDF4 file";
  if (u8(0) == 0x80 && u8(1) >= 2 && u8(1) <= 5) return "a Python pickle (protocol " + std::to_string(u8(1)) + ")";
  if (has_prefix(c, "\x89PNG\r\n\x1a\n"sv)) return "a PNG image";
  if (has_prefix(c, "\xff\xd8\xff"sv)) return "a JPEG image";
  if (has_prefix(c, "GIF87a"sv) || has_prefix(c, "GIF89a"sv)) return "a GIF image";
  if (has_prefix(c, "%PDF-"sv)) return "a PDF document";
  if (has_prefix(c, "%!PS"sv)) return "a PostScript document";
  if (has_prefix(c, "II*\x00"sv) || has_prefix(c, "MM\x00*"sv)) return "a TIFF image";
  if (has_prefix(c, "RIFF"sv) && c.size() >= 12) return "a RIFF container (WAV, AVI, WebP)";
  if (has_prefix(c, "SQLite format 3\x00"sv)) return "an SQLite database (Nsight Systems exports are SQLite)";
  if (has_prefix(c, "\x50\xed\x55\xba"sv)) return "a CUDA fat binary";
  if (has_prefix(c, "\xb1\x43\x62\x46"sv)) return "a CUDA fat binary wrapper";
  if (has_prefix(c, "\x00" "asm"sv)) return "a WebAssembly module";
  if (has_prefix(c, "GGUF"sv) && c.size() >= 8 && u8(4) < 0x20) return "a GGUF model file";
  if (c.size() >= 8 && c.substr(4, 4) == "TFL3"sv) return "a TensorFlow Lite model";
  if (has_prefix(c, "PAR1"sv)) return "a Parquet file";
  if (has_prefix(c, "ARROW1"sv)) return "an Arrow IPC file";
  if (has_prefix(c, "FEA1"sv)) return "a Feather file";
  if (has_prefix(c, "MATLAB 5.0 MAT-file"sv)) return "a MATLAB .mat file";
  if (has_prefix(c, "\x89LZO"sv)) return "LZO-compressed data";
  // Python bytecode: 2-byte version magic then "\r\n".
  if (c.size() >= 16 && u8(2) == '\r' && u8(3) == '\n' && u8(1) >= 0x0a && u8(1) <= 0x0f && u8(4) == 0)
    return "compiled Python bytecode (.pyc)";
  // safetensors: u64 little-endian header length, then the JSON header.
  if (c.size() >= 10 && c[8] == '{') {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | u8(i);
    if (n >= 2 && n <= (100u << 20)) return "a safetensors file (8-byte header length, then a JSON header)";
  }
  // Pickle protocols 0 and 1 are ASCII: "(dp0\n", "(lp0\n", "ccopy_reg\n_reconstructor\n" ... ending in '.'.
  sv body = c;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) body.remove_suffix(1);
  if (!body.empty() && body.back() == '.' &&
      (has_prefix(c, "(dp0\n"sv) || has_prefix(c, "(lp0\n"sv) || has_prefix(c, "(tp0\n"sv) ||
       has_prefix(c, "}q\x00"sv) || has_prefix(c, "]q\x00"sv) || has_prefix(c, "ccopy_reg\n"sv) ||
       has_prefix(c, "cnumpy"sv) || has_prefix(c, "ctorch"sv) || has_prefix(c, "c__builtin__\n"sv)))
    return "a Python pickle (text protocol 0/1)";
  return std::nullopt;
}

// ---------------------------------------------------------------- text

struct TextProblem {
  std::size_t offset;
  std::size_t line;
  std::string what;
};

// Whether the 8 bytes at `p` are all printable ASCII (0x20..0x7e): most of
// a source file, checked a word at a time (bit tricks from "Bit Twiddling
// Hacks": a byte below 0x20, a zero byte after XOR with DEL, a high bit).
bool printable_ascii8(const char* p) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  const std::uint64_t high = w & kHighs;
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;  // exact when no high bit is set
  const std::uint64_t x = w ^ (kOnes * 0x7f);
  const std::uint64_t del = (x - kOnes) & ~x & kHighs;
  return (high | below_space | del) == 0;
}

// First byte that makes `c` not authored UTF-8 text: NUL, a control
// character other than tab/newline/CR/form-feed, DEL, a C1 control, or an
// invalid, overlong, surrogate or out-of-range UTF-8 sequence.
std::optional<TextProblem> first_non_text(sv c) {
  std::size_t i = 0;
  if (c.size() >= 3 && c.substr(0, 3) == "\xef\xbb\xbf") i = 3;  // BOM
  auto hex = [](unsigned v) {
    const char* d = "0123456789abcdef";
    return std::string("0x") + d[(v >> 4) & 15] + d[v & 15];
  };
  // The line is counted only for the report, not while scanning.
  auto problem = [&](std::size_t at, std::string what) {
    const auto newlines = std::count(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    return TextProblem{at, static_cast<std::size_t>(newlines) + 1, std::move(what)};
  };
  while (i < c.size()) {
    if (i + 8 <= c.size() && printable_ascii8(c.data() + i)) {
      i += 8;
      continue;
    }
    unsigned char b = static_cast<unsigned char>(c[i]);
    if (b < 0x80) {
      if (b == 0) return problem(i, "a NUL byte");
      if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f') || b == 0x7f)
        return problem(i, "the control character " + hex(b));
      ++i;
      continue;
    }
    std::size_t len = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || i + len > c.size()) return problem(i, "invalid UTF-8 (byte " + hex(b) + ")");
    std::uint32_t cp = b & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (std::size_t k = 1; k < len; ++k) {
      unsigned char cb = static_cast<unsigned char>(c[i + k]);
      if ((cb & 0xc0) != 0x80) return problem(i, "invalid UTF-8 (byte " + hex(b) + ")");
      cp = (cp << 6) | (cb & 0x3f);
    }
    bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return problem(i, "invalid UTF-8 (overlong, surrogate or out-of-range sequence)");
    if (cp >= 0x80 && cp <= 0x9f) return problem(i, "a C1 control character");
    i += len;
  }
  return std::nullopt;
}

// The longest line (its length and 1-based number; the first of equals).
struct LongestLine {
  std::size_t length = 0, line = 0;
};

LongestLine longest_line(sv c) {
  LongestLine best;
  std::size_t start = 0, line = 1;
  while (true) {
    const std::size_t nl = c.find('\n', start);
    const std::size_t end = nl == sv::npos ? c.size() : nl;
    if (end - start > best.length) best = {end - start, line};
    if (nl == sv::npos) return best;
    start = nl + 1;
    ++line;
  }
}

// Old-Mac line ends (a lone CR, not part of CRLF).
bool has_lone_cr(sv c) {
  for (std::size_t i = c.find('\r'); i != sv::npos; i = c.find('\r', i + 1))
    if (i + 1 == c.size() || c[i + 1] != '\n') return true;
  return false;
}

}  // namespace

Violations scan_file_for_evidence(const PackageFile& file, const std::string& display_path,
                                  const EvidenceLimits& limits) {
  Violations out;
  auto add = [&](const std::string& rule, std::string pointer, const std::string& detail, const char* fix) {
    out.push_back(Violation{display_path, std::move(pointer), rule, detail + "; " + fix});
  };
  const sv path = file.path;
  const sv content = file.content;
  const std::string base = util::ascii_lower(basename_of(path));
  const std::string ext = extension_of(base);
  const bool authored_meta = is_authored_metadata(path);

  // ---- by name
  {
    std::size_t start = 0;
    while (true) {
      std::size_t slash = path.find('/', start);
      if (slash == sv::npos) break;
      std::string seg = util::ascii_lower(path.substr(start, slash - start));
      if (is_generated_dir(seg)) {
        add("evidence.name", "",
            "lies in \"" + std::string(path.substr(start, slash - start)) +
                "/\", a cache, build-tree, VCS or run-output directory",
            "remove the directory; nothing in it is authored source");
        break;
      }
      start = slash + 1;
    }
  }
  if (!authored_meta) {
    if (is_generated_name(base)) {
      add("evidence.name", "", "\"" + std::string(basename_of(path)) + "\" is the name of a generated file", kFixBuild);
    } else if (const Category* cat = category_of_extension(ext)) {
      add(cat->rule, "", "has the extension \"." + ext + "\" of " + cat->what, cat->fix);
    } else if (base.size() > 7 && (base.find(".tar.") != std::string::npos)) {
      add("evidence.name", "", "is named like a compressed tarball", kFixArchive);
    } else if (is_output_stem(base, ext)) {
      add("evidence.name", "", "\"" + std::string(basename_of(path)) + "\" is named like captured output", kFixLog);
    }
  }

  // ---- by content
  if (content.size() > limits.max_source_bytes) {
    add("evidence.too-large", "",
        "is " + std::to_string(content.size()) + " bytes; one source file may hold at most " +
            std::to_string(limits.max_source_bytes),
        "authored source is smaller than that: split it, or remove it if it is data");
  }
  if (auto magic = sniff_magic(content)) {
    add("evidence.magic", "line 1", "starts with the magic number of " + *magic + ", whatever its name says", kFixData);
  }
  if (auto bad = first_non_text(content)) {
    add("evidence.binary", "line " + std::to_string(bad->line),
        "is not text: " + bad->what + " at byte " + std::to_string(bad->offset), kFixBinary);
    return out;  // text heuristics below assume valid UTF-8 text
  }
  if (const LongestLine longest = longest_line(content); longest.length > limits.max_line_bytes) {
    add("evidence.long-line", "line " + std::to_string(longest.line),
        "has a line of " + std::to_string(longest.length) + " bytes (at most " + std::to_string(limits.max_line_bytes) +
            "): minified or encoded data is not authored source",
        "wrap the source, or remove the data and generate it in .kernel_package/build_test_env.py");
  }
  if (content.size() > limits.max_source_bytes) return out;

  // Old-Mac line ends (a lone CR) would hide every line structure below.
  std::string normalised;
  sv text = content;
  if (has_lone_cr(content)) {
    normalised.assign(content);
    for (std::size_t k = 0; k < normalised.size(); ++k)
      if (normalised[k] == '\r' && (k + 1 == normalised.size() || normalised[k + 1] != '\n')) normalised[k] = '\n';
    text = normalised;
  }
  // Split, trimmed and comment-stripped once for every detector below.
  const evidence_detail::TextLines lines = evidence_detail::split_text(text);
  if (auto f = evidence_detail::find_encoded_blob(lines)) add(f->rule, f->pointer, f->detail, kFixData);
  if (auto f = evidence_detail::find_compiler_output(lines)) add(f->rule, f->pointer, f->detail, kFixBuild);
  if (authored_meta) return out;  // numbers and key: value lines are what these files are made of
  const TextKind kind = text_kind_of(base, ext);
  const bool meta_by_name = ext == "json" || ext == "yaml" || ext == "yml" || ext == "xml" || ext == "jsonl";
  if (!meta_by_name) {
    if (auto f = evidence_detail::find_metadata_document(lines, kind)) add(f->rule, f->pointer, f->detail, kFixMeta);
  }
  if (auto f = evidence_detail::find_log(lines, kind)) add(f->rule, f->pointer, f->detail, kFixLog);
  if (ext != "csv" && ext != "tsv") {
    if (auto f = evidence_detail::find_table(lines, kind)) add(f->rule, f->pointer, f->detail, kFixTable);
  }
  if (auto f = evidence_detail::find_summary(lines, kind)) add(f->rule, f->pointer, f->detail, kFixSummary);
  if (auto f = evidence_detail::find_tuning_results(lines)) add(f->rule, f->pointer, f->detail, kFixTuning);
  if (auto f = evidence_detail::find_census(lines)) add(f->rule, f->pointer, f->detail, kFixCensus);
  return out;
}

}  // namespace kzoo::package
