// libFuzzer target for the Python literal reader: any bytes, as a literal and
// as a module. It must never crash or trip a sanitizer; a success must be a
// JSON value that serialises (valid UTF-8, finite numbers) and reads back
// equal; a refusal must carry a known rule and a message JSON can hold.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "kzoo/format/py_literal.hpp"

namespace {

using kzoo::Violation;
using nlohmann::json;

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "py_literal_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check(const tl::expected<json, Violation>& r) {
  if (r) {
    std::string text = r->dump();  // throws (uncaught: a crash) on invalid UTF-8
    if (json::parse(text) != *r) die("does not round-trip", text);
    return;
  }
  const Violation& v = r.error();
  static const char* kRules[] = {"literal.syntax",     "literal.not-literal", "literal.key-type",
                                 "literal.duplicate-key", "literal.too-deep", "literal.too-large",
                                 "literal.int-range",  "literal.float-range", "literal.utf8",
                                 "literal.missing",    "literal.reassigned"};
  bool known = false;
  for (const char* rule : kRules) known = known || v.rule == rule;
  if (!known) die("unknown rule", v.rule);
  if (v.detail.empty()) die("empty detail", v.rule);
  if (v.rule != "literal.missing" && v.pointer.rfind("line ", 0) != 0) die("pointer is not a line", v.pointer);
  (void)kzoo::to_json(v).dump();  // the message must be valid UTF-8
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kzoo::format::LiteralLimits limits;  // small, so the fuzzer reaches every cap
  limits.max_bytes = 2048;
  limits.max_depth = 12;
  limits.max_items = 300;
  check(kzoo::format::parse_py_literal(text, "fuzz.py", limits));
  check(kzoo::format::extract_py_assignment(text, "X", "fuzz.py", limits));
  return 0;
}
