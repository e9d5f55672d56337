// libFuzzer target for the CPU list reader: any bytes. It must never crash or
// trip a sanitizer; a success is ascending, unique and in range, and formats
// to a list that reads back the same; a refusal has a message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kzoo/runner/cpu_list.hpp"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "cpu_list_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = kzoo::runner::parse_cpu_list(text);
  if (!r) {
    if (r.error().message.empty()) die("refused without a message", std::string(text));
    return 0;
  }
  for (std::size_t i = 0; i < r->size(); ++i) {
    int c = (*r)[i];
    if (c < 0 || c > kzoo::runner::kMaxCpu) die("out of range", std::to_string(c));
    if (i && (*r)[i - 1] >= c) die("not ascending and unique", std::string(text));
  }
  std::string again = kzoo::runner::format_cpu_list(*r);
  auto back = kzoo::runner::parse_cpu_list(again);
  if (!back || *back != *r) die("does not round-trip", again);
  return 0;
}
