#include "kzoo/util/temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kzoo {

namespace fs = std::filesystem;

Result<TempDirectory> TempDirectory::make(const std::string& prefix, unsigned mode) {
  std::error_code ec;
  std::string tmpl = fs::temp_directory_path(ec).string();
  if (ec) tmpl = "/tmp";
  tmpl += "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    return fail("cannot make a temporary directory " + tmpl + ": " + std::strerror(errno) + " (set TMPDIR elsewhere)");
  fs::permissions(tmpl, static_cast<fs::perms>(mode), ec);
  return TempDirectory(tmpl);
}

TempDirectory::TempDirectory(TempDirectory&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

TempDirectory::~TempDirectory() {
  std::error_code ec;
  if (!path_.empty() && !keep_) fs::remove_all(path_, ec);
}

}  // namespace kzoo
