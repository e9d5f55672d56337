// Reading a small file whole, with a cap so a runaway file cannot exhaust
// memory: the catalog's task.json, device_classes.json.
#pragma once

#include <cstddef>
#include <string>

#include "kzoo/util/result.hpp"

namespace kzoo::util {

// The bytes of `path`; an error naming the path when it cannot be read or
// holds more than `cap` bytes.
Result<std::string> read_file_capped(const std::string& path, std::size_t cap);

}  // namespace kzoo::util
