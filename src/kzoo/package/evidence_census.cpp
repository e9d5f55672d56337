// evidence.census: hardware/software census records (driver version, exact
// library builds, GPU model and memory, clocks, CPU model, OS release), in
// any format; requirements ("CUDA 12.4 or newer", torch>=2.3) are authored
// and pass. See evidence_summary.cpp for the family.
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

// ---------------------------------------------------------------- census

const WordSet& software_names() {
  static const WordSet s{"cuda",   "torch",  "pytorch", "triton",  "cudnn",     "nccl",      "cublas",  "cutlass",
                         "python", "gcc",    "g++",     "nvcc",    "clang",     "rocm",      "hip",     "jax",
                         "jaxlib", "numpy",  "cupy",    "tensorrt", "flash-attn", "flash_attn", "flashinfer",
                         "transformers", "vllm", "xformers", "llvm", "cuda-python", "nvidia-smi", "cuda_runtime",
                         "runtime"};
  return s;
}

const WordSet& requirement_words() {
  static const WordSet s{"require", "requires", "required", "requirement", "requirements", "need", "needs",
                         "needed",  "minimum",  "least",    "newer",       "later",        "older", "support",
                         "supports", "supported", "compatible", "compatibility", "install", "installed", "pip",
                         "conda",   "or",       "above",   "prior",  "before", "since", "deprecated", "until"};
  return s;
}

// A build string nobody types by hand: "2.3.0+cu121", "+rocm6.0",
// "V12.4.131", "cuda_12.4.r12.4", "5.15.0-91-generic".
bool is_build_string(sv w) {
  if (w.find('+') != sv::npos && (contains_ci(w, "+cu") || contains_ci(w, "+rocm") || contains_ci(w, "+git")))
    return is_version(w);
  if ((w[0] == 'V') && is_version(w)) {
    std::size_t dots = std::count(w.begin(), w.end(), '.');
    return dots >= 2;
  }
  if (starts_with(w, "cuda_") && contains_ci(w, ".r")) return true;
  // Linux kernel releases
  if (w.find('-') != sv::npos && is_version(w) && (ends_with(w, "-generic") || ends_with(w, "-aws") || ends_with(w, "-azure") ||
                        ends_with(w, "-gcp") || contains_ci(w, ".el") || contains_ci(w, "-amd64")))
    return true;
  return false;
}

enum CensusKind : std::uint32_t {
  kDriver = 1u << 0, kBuild = 1u << 1, kGpu = 1u << 2, kClock = 1u << 3, kCpu = 1u << 4, kOs = 1u << 5,
  kPower = 1u << 6, kSoftware = 1u << 7,  // software versions: one bit per name above this
};

// The census facts of one line, as bits (kSoftware << k for the k-th
// distinct software name seen in the file, tracked by the caller).
struct CensusLine {
  std::uint32_t kinds = 0;
  std::vector<sv> software;  // names with a version on this line
};

// Whether a line can state a census fact at all: a version ("550.54",
// "12.4"), a clock ("Hz"), a memory size after a digit ("80GB"). One pass,
// no words: most lines of code stop here.
bool may_be_census(sv line) {
  // The bytes a fact can end on; every other byte is passed over by table.
  static constexpr std::array<bool, 256> kEnds = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : sv(".zZBbPeTvy")) t[c] = true;
    return t;
  }();
  for (std::size_t i = 1; i < line.size(); ++i) {
    const char c = line[i];
    if (!kEnds[static_cast<unsigned char>(c)]) continue;
    const char before = line[i - 1];
    if (c == '.' && is_digit(before) && i + 1 < line.size() && is_digit(line[i + 1])) return true;
    if ((c == 'z' || c == 'Z') && (before == 'H' || before == 'h')) return true;
    if ((c == 'B' || c == 'b') && (before == 'G' || before == 'g') && i >= 2 && is_digit(line[i - 2])) return true;
    // CPU models: "EPYC 9654", "Xeon(R) Platinum 8480+", "Core(TM) i9", "Neoverse-V2", "Ryzen"
    if ((before == 'E' && line.substr(i, 3) == "PYC") || ((before == 'X' || before == 'x') && line.substr(i, 3) == "eon") ||
        (before == '(' && line.substr(i, 3) == "TM)") || (before == 'N' && line.substr(i, 6) == "everse") ||
        (before == 'R' && line.substr(i, 4) == "yzen"))
      return true;
  }
  return false;
}

// Whether a line states a requirement or a pin ("CUDA 12.4 or newer",
// "torch>=2.3", "12.0+"): authored, not a census.
bool is_requirement(sv line, const std::vector<Word>& words) {
  if (line.find(">=") != sv::npos || line.find("==") != sv::npos || line.find("~=") != sv::npos ||
      line.find("\xe2\x89\xa5") != sv::npos)
    return true;
  for (const Word& w : words)
    if (requirement_words().contains_ci(w.text) || (ends_with(w.text, "+") && is_version(w.text.substr(0, w.text.size() - 1))))
      return true;
  return false;
}

// A GPU with its memory or form factor: "H100 80GB HBM3", "A100-SXM4-80GB".
bool is_gpu_memory_word(sv m) {
  if (m.size() < 3) return false;
  if (is_digit(m[0]) && (ends_with(m, "GB") || ends_with(m, "gb"))) return true;
  const char c = lower_ascii(m[0]);
  // "HBM3e", "SXM5", "PCIe" alone, or inside "A100-SXM4-80GB"
  if (c == 'h' || c == 's' || c == 'p') return contains_ci(m.substr(0, 4), "hbm") || contains_ci(m.substr(0, 4), "sxm") || contains_ci(m.substr(0, 4), "pcie");
  if (m.find('-') == sv::npos) return false;
  return contains_ci(m, "-sxm") || contains_ci(m, "-pcie") || contains_ci(m, "gb");
}

bool names_gpu(sv w) {
  return gpu_names().contains_ci(w) || contains_ci(w, "h100") || contains_ci(w, "a100") || contains_ci(w, "h200");
}

// The facts are found from their values: a version looks back for the name
// it belongs to (driver, a library, an OS), a memory size for a GPU's name.
// Words without digits are only looked at when a value points at them.
void read_census(sv line, std::vector<Word>& words, CensusLine& out) {
  out.kinds = 0;
  out.software.clear();
  if (!may_be_census(line)) return;
  split_words(line, words);
  for (std::size_t k = 0; k < words.size(); ++k) {
    const sv w = words[k].text;
    const bool numeric = starts_like_number(w) || ((w[0] == 'V' || w[0] == 'v') && w.size() > 1 && is_digit(w[1]));
    if (numeric) {
      if (is_build_string(w)) out.kinds |= kBuild;
      const NumberLiteral n = read_number(w);
      const sv unit = n.length < w.size() ? w.substr(n.length) : (k + 1 < words.size() ? words[k + 1].text : sv{});
      if (iequals(unit, "mhz") || iequals(unit, "ghz")) out.kinds |= kClock;
      if ((iequals(unit, "w") || iequals(unit, "watts")) && contains_ci(line, "power")) out.kinds |= kPower;
      if (is_version(w)) {
        for (std::size_t j = k >= 3 ? k - 3 : 0; j < k; ++j) {
          const sv name = words[j].text;
          if (starts_like_number(name)) continue;
          if (iequals(name, "driver")) {
            if (j + 3 >= k && w.size() >= 6 && is_digit(w[0]) && is_digit(w[1]) && is_digit(w[2]) && w[3] == '.')
              out.kinds |= kDriver;
          } else if (j + 2 >= k && software_names().contains_ci(name)) {
            if (std::find(out.software.begin(), out.software.end(), name) == out.software.end())
              out.software.push_back(name);
          } else if (j + 2 >= k && (iequals(name, "ubuntu") || iequals(name, "debian") || iequals(name, "centos") ||
                                    iequals(name, "rhel") || iequals(name, "rocky") || iequals(name, "almalinux") ||
                                    iequals(name, "fedora"))) {
            out.kinds |= kOs;
          }
        }
      }
    } else if ((iequals(w, "mhz") || iequals(w, "ghz")) && k + 1 < words.size() && starts_like_number(words[k + 1].text)) {
      out.kinds |= kClock;  // lscpu: "CPU max MHz: 3707.8120"
    } else {
      const char c = lower_ascii(w[0]);
      if ((c == 'x' || c == 'e' || c == 'r' || c == 't' || c == 'n' || c == 'c') &&
          (iequals(w, "xeon") || iequals(w, "epyc") || iequals(w, "ryzen") || iequals(w, "threadripper") ||
           iequals(w, "neoverse") || iequals(w, "core(tm)") || iequals(w, "xeon(r)")))
        out.kinds |= kCpu;
    }
    if (is_gpu_memory_word(w)) {
      for (std::size_t j = k >= 3 ? k - 3 : 0; j <= k; ++j)
        if (names_gpu(words[j].text)) out.kinds |= kGpu;
    }
  }
  if ((out.kinds || !out.software.empty()) && is_requirement(line, words)) {
    out.kinds = 0;
    out.software.clear();
  }
}

}  // namespace

std::optional<Finding> find_census(const TextLines& text) {
  std::vector<Word> words;
  CensusLine line;
  std::uint32_t kinds = 0;
  std::vector<std::string> software;
  std::size_t first = sv::npos;
  for (std::size_t n = 0; n < text.size(); ++n) {
    const sv s = text.stripped[n];
    if (text.digits[n] < 2) continue;
    read_census(s, words, line);
    for (sv name : line.software) {
      std::string lowered;
      for (char c : name) lowered += lower_ascii(c);
      if (std::find(software.begin(), software.end(), lowered) == software.end()) software.push_back(lowered);
    }
    if ((line.kinds || !line.software.empty()) && first == sv::npos) first = n;
    kinds |= line.kinds;
  }
  const int facts = std::popcount(kinds) + static_cast<int>(software.size());
  const int score = facts + ((kinds & kDriver) ? 1 : 0);
  if (score < 3 || facts < 2) return std::nullopt;
  std::string what;
  auto add = [&](std::uint32_t bit, const char* name) {
    if (kinds & bit) what += std::string(what.empty() ? "" : ", ") + name;
  };
  add(kDriver, "driver version");
  add(kGpu, "GPU model and memory");
  add(kBuild, "exact build strings");
  add(kClock, "clocks");
  add(kPower, "power limit");
  add(kCpu, "CPU model");
  add(kOs, "OS or kernel release");
  for (const std::string& s : software) what += (what.empty() ? "" : ", ") + s + " version";
  return Finding{"evidence.census", line_ptr(first),
                 "records the machine a run was made on (" + what + ", e.g. \"" +
                     std::string(trim(text.stripped[first]).substr(0, 70)) +
                     "\"): a hardware/software census, whatever its format"};
}

}  // namespace kzoo::package::evidence_detail
