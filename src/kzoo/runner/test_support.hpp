// Helpers shared by the runner's tests (not part of libkzoo's interface):
// temporary directories that clean up after themselves and a check that
// bubblewrap can make namespaces on this machine.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <unistd.h>

#include "kzoo/runner/sandbox.hpp"

namespace kzoo::runner::testing {

// An environment variable set (or, with nullptr, unset) for a scope, as it was after.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/kzoo-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
    // bwrap runs as the sandbox uid when we are root and must reach the dir.
    std::filesystem::permissions(path_, std::filesystem::perms(0755));
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Empty when bwrap works here; otherwise why it does not (for GTEST_SKIP).
inline std::string bwrap_unusable_reason() {
  static const std::string reason = [] {
    if (::access(default_bwrap_path().c_str(), X_OK) != 0)
      return "bubblewrap is not installed (" + default_bwrap_path() + ")";
    TempDir wd;
    SandboxSpec spec;
    spec.argv = {"/usr/bin/true"};
    spec.workdir = wd.path();
    spec.wall_limit = std::chrono::seconds(20);
    auto r = run_sandbox(spec);
    if (!r) return "bwrap cannot create a sandbox here: " + r.error().message;
    if (r->exit_code != 0) return "bwrap ran /usr/bin/true but it failed: " + r->stderr_tail;
    return std::string();
  }();
  return reason;
}

}  // namespace kzoo::runner::testing
