// Grading one claimed job, from its submission to its completion (DESIGN §1,
// §4): below both the worker (which claims jobs and calls this) and the
// server (whose runner API is the other side of an api-mode transport).
//
// One job, in order, each a named step that returns its result or why the
// job ends (grade_job.cpp):
//   1. the submission's tarball, read with the kernel ID as the only allowed
//      top-level directory, and inspected (layout, evidence policy):
//      violations reject it before anything runs;
//   2. the TRUSTED harness: the package's four .kernel_package files at the
//      tip of the job's branch (the submission's are never used, its
//      bench_result.yaml never read); the incumbent = the package's src/ at
//      that same commit;
//   3. the task from the catalog (desc.yaml's reference_sources {kind: task});
//   4. W laid out (runner/workdir.hpp) + W/.kzoo/incumbent/src (read-only in
//      the sandbox), then build_test_env.py and benchmark.py in the sandbox
//      with KZOO_OPTIONS {"incumbent_src": ...}; the signed document verified;
//   5. evidence (benchmark_output.json, stderr.log, run.json, verdict.json,
//      check.json) committed to refs/jobs/<job id>;
//   6. verdict::decide; on accept KernelRepo::accept (src/ + the server's
//      bench_result.yaml, message with `Kzoo-Job:` / `Kzoo-Submission:` /
//      `Kzoo-Evidence:` trailers, measured_at = the commit of step 2), then
//      complete. If another accept replaced the package's src/ meanwhile,
//      nothing is committed and 2-6 run again against the new incumbent (at
//      most 3 measurements).
// A heartbeat thread (its own transport handle) extends the lease every
// lease/3 seconds while the job runs.
//
// Crash safety: commit-then-complete. A worker that dies between the two
// leaves a commit whose `Kzoo-Job:` trailer names the job; the next holder
// (after the lease expires) finds it in the package's recent history and
// completes with it instead of committing twice. A worker that lost its lease
// (the store refuses its heartbeat or completion) commits nothing more and
// moves on. Infrastructure trouble the submission did not cause (the judge
// crashed, the sandbox could not start) hands the job back for another
// attempt; other trouble of ours (an unreadable repository) completes it as
// `failed` with the reason; the submission's own failures (incorrect,
// crashed, timed out, forged output) are `rejected`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/jobs/gpu_pool.hpp"
#include "kzoo/jobs/transport.hpp"
#include "kzoo/runner/warm_judge.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/verdict/verdict.hpp"

namespace kzoo::jobs {

// How to grade: the sandbox, the judge, the device, and the verdict policy.
struct GradeJobOptions {
  std::string catalog_dir;  // holds tasks/<name>/task.json and device_classes.json
  std::string judge_dir;    // holds kzoo_judge/
  std::string python = "/usr/bin/python3";
  std::string worker_id;    // lease owner
  std::string device = "cpu";
  std::string device_class;  // the catalog's device class of the results
  std::string gpu_name;      // as the driver reported it (cuda)
  int gpu_count = 0;         // GPUs the machine shows (cuda); a job sees `gpus`' when set
  // The device's compute capability in tenths (90 = 9.0), read from the driver
  // (cuda): the worker claims only jobs needing no more, and every job's task
  // environment is checked against it. nullopt: a CPU worker.
  std::optional<int> compute_capability;
  int lease_seconds = 120;
  bool sandboxed = true;
  std::chrono::seconds timeout{1800};  // benchmark.py's wall-clock limit
  std::optional<int> iterations;       // KZOO_OPTIONS iterations
  nlohmann::json judge_options = nlohmann::json::object();  // more KZOO_OPTIONS keys
  std::uint64_t memory_bytes = 0;
  std::vector<int> gpus;  // cuda: the GPUs this worker's jobs run on (nvidia-smi indices); empty: all
  // cuda, `kzoo worker --gpus` with several: the node's GPUs, shared by its job
  // slots. Each job takes its task's environment.gpus of them (one by default)
  // before its sandbox starts, instead of `gpus`.
  std::shared_ptr<GpuPool> gpu_pool;
  // The slot's judge started ahead (runner/warm_judge.hpp): a run takes it when it
  // is there and fits, and starts the next one when its own sandbox run ends.
  // Null: every run starts its judge cold.
  std::shared_ptr<runner::WarmSlot> warm_slot;
  // cuda: the CPUs each GPU's jobs run on (runner/gpu_cpus.hpp); a job runs on
  // those of its GPUs. Empty: not pinned (a job's processes may use any CPU).
  std::map<int, std::vector<int>> gpu_cpus;
  // The CPUs a job on `job_gpus` runs on: the union of their shares, or empty
  // (not pinned) unless every one of them has a share.
  std::vector<int> cpus_for(const std::vector<int>& job_gpus) const;
  // The GPUs one job of this worker may take (cuda): the node's pool, else
  // `gpus`, else every GPU the machine shows; 0 when none is known. The claim
  // says it, so that a job needing more is left to a node that has them.
  int node_gpus() const {
    return gpu_pool ? static_cast<int>(gpu_pool->size()) : gpus.empty() ? gpu_count : static_cast<int>(gpus.size());
  }
  verdict::Policy policy;
  std::size_t history_scan = 200;  // commits of the package searched for a job's trailer
  std::function<void(std::string_view)> log;  // one line per event
};

struct JobReport {
  std::int64_t job_id = 0;
  std::int64_t submission_id = 0;
  store::Outcome outcome = store::Outcome::failed;
  std::vector<std::string> reasons;
  std::string accepted_commit;
  std::string evidence_commit;
  bool completed = false;  // false: the store refused (lease lost); nothing was completed by us
  bool reused_commit = false;  // completed with a commit an earlier holder made
  bool retried = false;  // an infrastructure failure: handed back to the queue for another attempt
};

// What every run of this runner's jobs is graded with, before a job's own limits, GPUs and
// guardrails: its device, catalog, judge and interpreter, sandboxed or not. The worker warms
// the bytecode cache with these before its first claim (the stamp a job's grade checks).
runner::GradeOptions runner_grade_options(const GradeJobOptions& options);

// Grades `job`, which options.worker_id holds through `t`, and completes it
// (or hands it back for another attempt). Never throws.
JobReport grade_job(JobTransport& t, const store::Job& job, const GradeJobOptions& options);

}  // namespace kzoo::jobs
