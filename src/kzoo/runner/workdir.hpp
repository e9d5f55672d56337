// The workdir W of one graded run, laid out as docs/ARCHITECTURE.md fixes it:
//
//   W/.kernel_package/{desc.yaml, bench_result.yaml, build_test_env.py, benchmark.py}
//                        from the TRUSTED harness tree (the repository's or the
//                        catalog's package with the same kernel ID), never the
//                        submission's: a submission that edits its benchmark.py
//                        or bench_result.yaml changes nothing.
//   W/src/...            the submission's src/ and nothing else of it
//   W/.kzoo/task.json    the task, from the catalog
//   W/.kzoo/run/         empty; build_test_env.py generates into it
//
// Files are written through package::write_tree (openat + O_EXCL|O_NOFOLLOW
// from directory fds), so no path in either tree can land outside W.
#pragma once

#include <string>
#include <string_view>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::runner {

struct Workdir {
  std::string root;         // W
  std::string harness_dir;  // W/.kernel_package
  std::string src_dir;      // W/src
  std::string task_file;    // W/.kzoo/task.json
  std::string run_dir;      // W/.kzoo/run
};

// The tree W will hold: the four .kernel_package/ files of `harness`, the
// src/ files of `submission`, and task.json. Fails naming the file when the
// harness lacks one of the four files or the submission has no src/ file.
Result<package::PackageTree> workdir_tree(const package::PackageTree& harness,
                                          const package::PackageTree& submission, std::string_view task_json);

// Writes workdir_tree(...) into `fresh_dir`, which must not exist yet.
Result<Workdir> lay_out_workdir(const std::string& fresh_dir, const package::PackageTree& harness,
                                const package::PackageTree& submission, std::string_view task_json);

// The skeleton of a W a judge is started on before its job exists
// (warm_judge.hpp): `fresh_dir` (must not exist) with empty .kernel_package/,
// src/, .kzoo/run/ and .kzoo/incumbent/src/, and an empty .kzoo/task.json. The
// sandbox's binds of them are made when it starts, so the job's files must land
// in these very directories and that very file: fill_workdir.
Result<Workdir> make_workdir_skeleton(const std::string& fresh_dir);

// lay_out_workdir into a skeleton: the same tree, task.json written in place.
// Fails as lay_out_workdir does, and when anything but the skeleton is there.
Result<Workdir> fill_workdir(const Workdir& skeleton, const package::PackageTree& harness,
                             const package::PackageTree& submission, std::string_view task_json);

}  // namespace kzoo::runner
