// A Violation is one broken rule in a user's input: the file it is in, where
// inside that file (a JSON pointer, a line, or empty), the rule's stable name
// (e.g. "schema.required", "tar.symlink", "evidence.tensor-magic"), and a
// detail sentence that names the offending value and says how to fix it.
// Validators collect every violation rather than stopping at the first.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo {

struct Violation {
  std::string path;     // file or entry path as the user knows it
  std::string pointer;  // JSON pointer / "line N" inside the file; may be empty
  std::string rule;     // stable machine-readable rule id
  std::string detail;   // human sentence: the value, the rule, the fix

  bool operator==(const Violation&) const = default;
};

using Violations = std::vector<Violation>;

// "path[#pointer]: rule: detail" — one line, for terminals and logs.
std::string to_string(const Violation& v);
nlohmann::json to_json(const Violation& v);
nlohmann::json to_json(const Violations& vs);

// True if any violation in `vs` has exactly this rule id.
bool has_rule(const Violations& vs, const std::string& rule);

}  // namespace kzoo
