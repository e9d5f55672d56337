// Running a program and reading what it prints: the Slurm client commands
// (sbatch, squeue, scancel, scontrol). argv[0] is looked up on PATH; no shell
// is involved, so arguments are never re-parsed.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::util {

struct CommandOutput {
  int exit_code = -1;  // -1: killed by a signal (the timeout's included)
  std::string out, err;
};

// Runs `argv` to its end, or kills it after `timeout`. An error only when it
// cannot be started; a failing program is a CommandOutput with its exit code.
Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace kzoo::util
