// `kzoo task calibrate`: measures a task's error floor E (reference versus its
// independent.py) and drop error D (reference versus its drop.py). The
// measurement is the judge's (Python, torch): this runs
//   PYTHON -m kzoo_judge calibrate --task-dir DIR --device DEV [--write]
// with the judge on PYTHONPATH, and relays its stdout/stderr. The judge prints
// {"measured_floor_E", "measured_drop_D", "basis"} and, with --write, stores
// them into DIR/task.json.
#pragma once

#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::task {

struct CalibrateOptions {
  std::string task_dir;
  std::string device = "cpu";  // cpu | cuda
  bool write = false;
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch (LIBNOTES)
  std::string judge_dir;                    // holds kzoo_judge/; empty = <source>/judge
};

// The command line run (argv[0] = python).
std::vector<std::string> calibrate_argv(const CalibrateOptions& options);

// Checks the prerequisites (task dir with task.json, independent.py, drop.py;
// the interpreter; the judge package; torch importable), then runs the judge
// with inherited stdout/stderr. Returns the judge's exit status, or an error
// saying which prerequisite is missing and how to get it.
Result<int> run_calibrate(const CalibrateOptions& options);

}  // namespace kzoo::task
