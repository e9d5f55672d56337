// libFuzzer target for the canonical_work expression language: any byte string
// must parse or fail with an error that points inside the text, and a parsed
// expression must evaluate (or fail) deterministically against a binding
// that offers every kind of value (numbers, zero, booleans, lists, a nested
// list, an empty list and a string).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kzoo/task/work_expr.hpp"

namespace {

const nlohmann::json& dims() {
  static const nlohmann::json d = {
      {"M", 4096}, {"N", 1000}, {"K", 7}, {"Z", 0},  {"X", -3.5},        {"causal", true},
      {"f", false}, {"counts", {1, 2, 3}}, {"pairs", {{1, 2}, {3, 4}}}, {"empty", nlohmann::json::array()},
      {"s", "text"}};
  return d;
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = kzoo::task::WorkExpr::parse(text);
  if (!e) {
    // An error names a place inside the text (or just past its end).
    check(e.error().column >= 1 && e.error().column <= size + 1);
    check(!e.error().problem.empty());
    return 0;
  }
  check(e->text() == text);
  for (const auto& n : e->names()) check(!n.empty());
  auto a = e->evaluate(dims());
  auto b = e->evaluate(dims());
  check(a.has_value() == b.has_value());
  if (a) {
    check(a->to_json() == b->to_json());
    if (a->kind == kzoo::task::ExprValue::Kind::kNumber) check(a->number == a->number);  // never NaN
  } else {
    check(a.error().kind == b.error().kind && a.error().column == b.error().column);
    check(a.error().column <= size + 1);
  }
  (void)e->evaluate_work(dims());
  (void)e->evaluate_extent(dims());
  return 0;
}
