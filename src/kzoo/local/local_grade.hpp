// `kzoo grade`: a package graded on this machine the way the service's worker
// grades a submission, so that a contributor can predict the server's verdict
// before submitting:
//
//   - the TRUSTED harness: the catalog's package with the same kernel ID (the
//     server's is the repository's at HEAD); the package's own only when the
//     catalog has none, and then the run says it is untrusted;
//   - the task from the catalog, named by the trusted desc.yaml;
//   - the incumbent (--against PKG): its src/ laid out read-only at
//     W/.kzoo/incumbent and handed to the judge as `incumbent_src`, exactly
//     where the worker puts the source at HEAD, for the same A/B;
//   - the board's rules (a scienceslack.json: --rules, else the catalog's,
//     else those `kzoo init` writes): the judge's run counts and elementwise
//     bounds, then board::decide_run, the worker's own decision function.
//
// Refused before anything runs (never silently ignored): a task whose
// environment the device lacks (task_env.hpp), a package that breaks a rule,
// an incumbent of another kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/board/decision.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/local/task_env.hpp"
#include "kzoo/package/package_tree.hpp"
#include "kzoo/runner/grade.hpp"
#include "kzoo/runner/warm_judge.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"
#include "kzoo/verdict/verdict.hpp"

namespace kzoo::local {

// A package as read from a directory or a tarball, with its kernel ID.
struct PackageInput {
  std::string display;       // how messages name it (its path)
  std::string kernel_id;
  package::PackageTree tree;
  Violations violations;     // reading it (tree.*, tar.*, kernel-id.mismatch)
};

// The catalog a package's kernel_data root belongs to: the root's parent when
// it holds tasks/ (the catalog layout: CATALOG/tasks, CATALOG/kernel_data).
std::optional<std::string> catalog_of_root(const std::string& kernel_data_root);

struct LocalGradeOptions {
  runner::GradeOptions grade;  // device, judge, python, timeout, iterations, sandbox, progress...
  std::string catalog_dir;     // holds tasks/, kernel_data/ and device_classes.json
  std::optional<std::string> task_file;  // instead of the one desc.yaml names
  std::optional<board::Rules> rules;     // null: the project declares no rules
  verdict::Policy policy;
  DeviceFacts device;          // what this machine offers (probe_device)
  std::string device_class;    // the catalog's device class of the results (KZOO_DEVICE_CLASS)
  // The judge started while the package is read and laid out (runner/warm_judge.hpp):
  // its interpreter, torch and CUDA context then cost the grade nothing they would not
  // cost anyway. Never with keep_workdir (the warm judge's W goes with it).
  runner::WarmMode warm = runner::WarmMode::auto_;
  // Graded as its kernel's eager baseline, as the worker grades a `kind: baseline`
  // submission (board::decide_run's is_baseline): it measures the call a PyTorch user
  // makes, so its check passes when it is correct within the board's guardrails; the
  // accept policy's gates (a vendor library the reference does not call: SDPA's cuDNN
  // kernels) and the A/B do not decide it. Never with an incumbent.
  bool baseline = false;
};

struct LocalGrade {
  runner::GradeOutcome graded;  // the sandboxed run and its verified document
  std::string kernel_id;
  std::string harness;          // where the harness came from
  bool trusted_harness = false;
  bool had_incumbent = false;
  std::optional<board::RunDecision> decision;  // when the judge produced a document
  std::vector<std::string> notes;              // what the run does not show (a CPU run of a GPU task...)
  runner::GradeStatus status = runner::GradeStatus::error;
  std::string summary;                         // one sentence

  nlohmann::json to_json() const;
};

// The rules a catalog's board would hold `kernel_id` to when none are given:
// its kernel_data root's scienceslack.json, else kzoo init's for `device_class`.
Result<board::Rules> default_rules(const std::string& catalog_dir, const std::string& kernel_id,
                                   const std::string& device_class);

LocalGrade grade_locally(const PackageInput& package, const std::optional<PackageInput>& incumbent,
                         const LocalGradeOptions& options);

}  // namespace kzoo::local
