// A fresh directory under the system's temporary directory for one run (a
// grade's workdir), removed with everything in it when the owner goes away,
// unless the user asked to keep it for inspection.
#pragma once

#include <string>

#include "kzoo/util/result.hpp"

namespace kzoo {

class TempDirectory {
 public:
  // mkdtemp("<tmp>/<prefix>XXXXXX"), then chmod `mode` (a sandbox running as
  // another uid must reach what is inside).
  static Result<TempDirectory> make(const std::string& prefix, unsigned mode = 0755);

  TempDirectory(TempDirectory&& other) noexcept;
  TempDirectory& operator=(TempDirectory&&) = delete;
  TempDirectory(const TempDirectory&) = delete;
  ~TempDirectory();

  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  explicit TempDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool keep_ = false;
};

}  // namespace kzoo
