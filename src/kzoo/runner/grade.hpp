// Grading one package on this machine, with no server: read it (directory or
// .tar.gz), inspect it, find its task in the catalog, lay out a fresh workdir
// with the TRUSTED harness, run build_test_env.py then benchmark.py in the
// sandbox, and accept the judge's document only if its HMAC signature (keyed
// by a secret seed passed on an inherited descriptor) matches and it is a
// valid benchmark_output document.
//
// The pieces the server's worker needs on its own (running one harness step
// with the seed, checking what came back) are exposed too: run_harness_step
// and verify_benchmark_output.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/runner/sandbox.hpp"
#include "kzoo/runner/workdir.hpp"
#include "kzoo/runner/bytecode_cache.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::runner {

// Where the sandbox shows the judge directory (the judge's PYTHONPATH there).
inline constexpr const char* kSandboxJudgeDir = "/kzoo/judge";

struct GradeOptions {
  std::string package_path;              // package directory or .tar.gz
  std::string device = "cpu";            // cpu | cuda
  std::string catalog_dir;               // holds tasks/ and kernel_data/
  std::optional<std::string> task_file;  // overrides desc.yaml's task reference
  std::string judge_dir;                 // the directory holding kzoo_judge/
  std::string python = "/usr/bin/python3";
  std::chrono::seconds timeout{1800};    // benchmark.py's wall-clock limit
  std::chrono::seconds build_timeout{300};
  std::optional<int> iterations;         // KZOO_OPTIONS {"iterations": N}
  nlohmann::json judge_options;          // more KZOO_OPTIONS keys (an object), e.g. {"incumbent_src": ...}
  std::vector<Bind> extra_ro_binds;      // more read-only binds (e.g. the incumbent's source inside W)
  std::string runner_id;                 // default: host name
  std::uint64_t memory_bytes = 0;        // 0: 3/4 of RAM, at most 32 GiB
  std::uint64_t max_pids = 4096;         // threads count too
  int cpus = 0;                          // CPU time of at most this many CPUs (the board's partition); 0: no cap
  std::vector<int> gpus;                 // cuda: the GPUs the run sees (nvidia-smi indices); empty: all
  std::vector<int> cpu_affinity;         // the CPUs the run's processes start on (gpu_cpus.hpp); empty: any
  std::string bytecode_cache = default_bytecode_cache();  // compiled modules bound into the sandbox; "": none
  bool sandboxed = true;
  bool keep_workdir = false;
  std::string bwrap = default_bwrap_path();
  std::function<void(std::string_view)> progress;   // one line per phase
  std::function<void(std::string_view)> on_stderr;  // raw stderr chunks (untrusted bytes)
};

enum class GradeStatus { accepted, rejected, error };

const char* to_string(GradeStatus s);
int exit_code(GradeStatus s);  // 0 accepted, 1 rejected, 2 error

struct GradeOutcome {
  GradeStatus status = GradeStatus::error;
  std::string reason;         // one sentence: why
  nlohmann::json document;    // the verified benchmark output (null if none)
  Violations violations;      // inspection or schema violations behind `reason`
  std::string kernel_id;
  std::string stderr_tail;    // the last step's stderr, signature line removed
  std::string workdir;        // kept only with keep_workdir
  std::vector<std::string> warnings;
};

GradeOutcome grade(const GradeOptions& options);

// The second half of grade(), for callers that laid out W themselves (the
// server's worker, with the repository's harness and the incumbent): runs
// build_test_env.py then benchmark.py in the sandbox over `w` and verifies
// the signed document for `kernel_id`. options.package_path and task_file
// are not used; catalog_dir only for device_classes.json.
// With `warm` (started on this W's skeleton, warm_judge.hpp), benchmark.py
// runs in it when its sandbox is the one this run needs; else, or when it ended
// before it took the run, benchmark.py starts cold as without it.
class WarmJudge;
GradeOutcome grade_workdir(const Workdir& w, const std::string& kernel_id, const GradeOptions& options,
                           WarmJudge* warm = nullptr);

// The sandbox both harness steps run in over `w` (its argv is the interpreter
// alone; the step appends its script), the options for it, and the steps'
// complete environment. Fails when the judge or the GPUs are missing.
struct HarnessSetup {
  SandboxSpec spec;
  SandboxOptions options;
  std::vector<std::pair<std::string, std::string>> env;
};
Result<HarnessSetup> harness_setup(const Workdir& w, const std::string& kernel_id, const GradeOptions& options);

// The bytecode cache a grade under `options` reads (bytecode_cache.hpp), as
// harness_setup asks for it: the same interpreter, judge and judge path, so the same
// stamp. prepare_bytecode_cache warms it ahead of the first grade (a worker before it
// claims its first job, `kzoo prepare`): its directory, or why it cannot be used.
BytecodeCacheRequest bytecode_request(const GradeOptions& options);
Result<std::string> prepare_bytecode_cache(const GradeOptions& options);

// What one harness step left: the sandbox's result, and what the program
// wrote on its verdict channel (signature.hpp).
struct HarnessRun {
  SandboxResult sandbox;
  std::string verdict;  // at most kVerdictCap bytes
};

inline constexpr std::size_t kVerdictCap = 4096;

// The judge's exit status for its own failure (an exception in the judge, not
// in the submission): it still signs a document, and the run is an
// infrastructure error, retried by the worker, never a rejection.
inline constexpr int kJudgeInternalErrorStatus = 3;

// One harness step: `python3 .kernel_package/<script>` in the sandbox with
// `env`, and, when `seed` is non-empty, the seed (hex) on an inherited pipe
// named by KZOO_SEED_FD and a second pipe, named by KZOO_VERDICT_FD, for the
// judge's signature. The seed never appears in argv, env or a file.
Result<HarnessRun> run_harness_step(const Workdir& w, const std::string& script,
                                    std::vector<std::pair<std::string, std::string>> env,
                                    std::string_view seed, SandboxSpec base, const SandboxOptions& options);

// The checks on benchmark.py's output, in order: killed at the time or
// memory limit, over the stdout cap, or no output at all (rejected: the
// submission can kill the judge, so a missing result is its failure); a
// signature on the verdict channel matching the seed (else rejected: forged);
// exactly one strict JSON document (else error), valid against the
// benchmark_output schema and naming `kernel_id` (else error); the judge's
// own failure (exit status kJudgeInternalErrorStatus with a signed document:
// error). On success `document` holds it and status reflects overall.accept.
GradeOutcome verify_benchmark_output(const HarnessRun& run, std::string_view seed,
                                     const std::string& kernel_id);

// A 32-byte secret from getrandom(2).
Result<std::string> make_seed();

}  // namespace kzoo::runner
