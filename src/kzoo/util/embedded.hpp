// Files compiled into the kzoo binary (see cmake/EmbedFiles.cmake).
#pragma once

#include <span>
#include <string_view>

namespace kzoo {

struct EmbeddedFile {
  std::string_view name;     // file name, e.g. "desc.schema.json"
  std::string_view content;  // the file's bytes
};

// The JSON Schema files of schemas/, embedded at build time.
std::span<const EmbeddedFile> embedded_schemas();

}  // namespace kzoo
