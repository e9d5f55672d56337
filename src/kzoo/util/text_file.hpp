// Reading a whole file that a person or a tool wrote (a task, rules, a page),
// with a cap, and an error that names the path and what is wrong with it.
#pragma once

#include <cstddef>
#include <string>

#include "kzoo/util/result.hpp"

namespace kzoo {

// Fails when `path` is missing, not a regular file, larger than `max_bytes`
// or unreadable.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes);

}  // namespace kzoo
