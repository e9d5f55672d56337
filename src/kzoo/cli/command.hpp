// Subcommand registry for the kzoo CLI. Each subcommand lives in its own
// cmd_<name>.cpp and registers itself at static-initialisation time:
//
//   static const bool registered = kzoo::cli::register_command(
//       "validate", "Validate a package, tarball, task or metadata file",
//       [](CLI::App& sub) -> kzoo::cli::Runner { ...add options...; return [&]{ ... return 0; }; });
//
// The setup function adds options to `sub` and returns the function to run when
// that subcommand is chosen; it returns the process exit code. Exit codes
// across the CLI: 0 success / valid / accepted, 1 invalid / rejected,
// 2 usage or I/O error.
#pragma once

#include <cstdlib>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace kzoo::cli {

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App& sub)>;

bool register_command(std::string name, std::string description, Setup setup);

// Nested commands such as "task lint": register "task" as a group, then
// register_command("task lint", ...). The group is created on first use.
constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitError = 2;

// $name when it is set and not empty, else `fallback` (the commands' defaults: KZOO_PYTHON, KZOO_JUDGE_DIR).
inline std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace kzoo::cli
