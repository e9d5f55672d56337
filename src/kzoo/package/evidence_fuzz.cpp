// libFuzzer: the evidence scanner (hand-written, byte-level: word-at-a-time
// ASCII checks, sampled base64 search, line splitting shared by every
// detector) never reads out of bounds or crashes on any bytes under any name,
// is deterministic, and reports only evidence.* rules naming the file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kzoo/package/evidence.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first byte picks the name: code, prose, data and unknown kinds are scanned differently.
  static const char* const kNames[] = {"src/kernel.py", "src/kernel.cu", "src/README.md", "src/notes.txt",
                                       "src/data.csv",  "src/tune.json", "src/Makefile",  "src/x"};
  if (size == 0) return 0;
  kzoo::package::PackageFile file;
  file.path = kNames[data[0] % (sizeof(kNames) / sizeof(kNames[0]))];
  file.content.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  kzoo::package::EvidenceLimits limits;
  limits.max_line_bytes = 512;  // reachable within -max_len
  auto first = kzoo::package::scan_file_for_evidence(file, file.path, limits);
  auto again = kzoo::package::scan_file_for_evidence(file, file.path, limits);
  if (first != again) std::abort();
  for (const auto& v : first)
    if (v.rule.rfind("evidence.", 0) != 0 || v.path != file.path || v.detail.empty()) std::abort();
  return 0;
}
