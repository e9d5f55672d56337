#include "kzoo/util/violation.hpp"

#include <algorithm>

namespace kzoo {

std::string to_string(const Violation& v) {
  std::string out = v.path;
  if (!v.pointer.empty()) out += "#" + v.pointer;
  out += ": " + v.rule + ": " + v.detail;
  return out;
}

nlohmann::json to_json(const Violation& v) {
  nlohmann::json j = {{"path", v.path}, {"rule", v.rule}, {"detail", v.detail}};
  if (!v.pointer.empty()) j["pointer"] = v.pointer;
  return j;
}

nlohmann::json to_json(const Violations& vs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& v : vs) arr.push_back(to_json(v));
  return arr;
}

bool has_rule(const Violations& vs, const std::string& rule) {
  return std::any_of(vs.begin(), vs.end(), [&](const Violation& v) { return v.rule == rule; });
}

}  // namespace kzoo
