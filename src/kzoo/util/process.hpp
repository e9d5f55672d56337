// Running a helper program and reading what it prints: the judge's Python for
// `kzoo task calibrate`, the driver's nvidia-smi. No shell: argv is passed as
// it is, so no argument is ever re-parsed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo {

struct ProcessOptions {
  std::optional<std::vector<std::string>> env;  // "K=V" entries; nullopt: this process's environment
  bool capture_stdout = true;    // else stdout goes to /dev/null
  bool quiet_stderr = false;     // stderr to /dev/null; else it stays this process's (a traceback reaches the user)
  bool stderr_to_stdout = false; // stderr into `out` with stdout (a tool's error message, to quote; needs capture_stdout)
  std::string stdin_path;        // a file to read stdin from; empty: this process's stdin
  std::size_t stdout_cap = 64u << 20;  // bytes kept; the rest is read and dropped
};

struct ProcessResult {
  int status = 0;  // the exit status, or 128 + the signal that ended it
  std::string out;
};

// Runs argv[0] (looked up on PATH when it has no '/') and waits for it. Fails
// only when it cannot be started.
Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

}  // namespace kzoo
