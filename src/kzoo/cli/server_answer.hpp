// What the client verbs do with a server's answer: its text fields shown
// safely on a terminal, and a refusal turned into a message and an exit code.
#pragma once

#include <iostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"

namespace kzoo::cli {

// Field `k` of `j` when it is a string, with its control characters shown
// (shown()); "" otherwise.
inline std::string shown_field(const nlohmann::json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? shown(j[k].get<std::string>()) : "";
}

// "kzoo <verb>: <why>" on stderr; exit 2 when the server could not be asked
// or failed (5xx), 1 when it refused the request itself (4xx).
inline int refused(std::string_view verb, const Result<server::Answer>& a) {
  if (!a) {
    std::cerr << "kzoo " << verb << ": " << a.error().message << "\n";
    return kExitError;
  }
  std::cerr << "kzoo " << verb << ": " << server::describe_error(*a) << "\n";
  return a->status >= 500 ? kExitError : kExitInvalid;
}

}  // namespace kzoo::cli
