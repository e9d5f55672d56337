// `kzoo worker`: claims graded jobs from the state database, runs each in
// the sandbox against the package's accepted source (A/B), decides with the
// verdict policy and, on accept, commits to kernel_data (DESIGN §1, §4).
//
// One job, in order:
//   1. the submission's tarball (DATA/uploads/...), read with the kernel ID as
//      the only allowed top-level directory, and inspected (layout, evidence
//      policy): violations reject it before anything runs;
//   2. the TRUSTED harness: the package's four .kernel_package files at HEAD of
//      kernel_data `main` (the submission's are never used, its bench_result.yaml
//      never read); the incumbent = the package's src/ at that same commit;
//   3. the task from the catalog (desc.yaml's reference_sources {kind: task});
//   4. W laid out (runner/workdir.hpp) + W/.kzoo/incumbent/src (read-only in
//      the sandbox), then build_test_env.py and benchmark.py in the sandbox
//      with KZOO_OPTIONS {"incumbent_src": ...}; the signed document verified;
//   5. evidence (benchmark_output.json, stderr.log, run.json, verdict.json)
//      committed to refs/jobs/<job id>;
//   6. verdict::decide; on accept KernelRepo::accept (src/ + the server's
//      bench_result.yaml, message with `Kzoo-Job:` / `Kzoo-Submission:` /
//      `Kzoo-Evidence:` trailers, measured_at = the commit of step 2), then
//      StateDb::complete. If another accept replaced the package's src/
//      meanwhile, nothing is committed and 2-6 run again against the new
//      incumbent (at most 3 measurements).
// A heartbeat thread (its own database connection) extends the lease every
// lease/3 seconds while the job runs.
//
// Crash safety: commit-then-complete. A worker that dies between the two
// leaves a commit whose `Kzoo-Job:` trailer names the job; the next holder
// (after the lease expires) finds it in the package's recent history and
// completes with it instead of committing twice. A worker that lost its lease
// (the store refuses its heartbeat or completion) commits nothing more and
// moves on. Infrastructure trouble (an exception, a sandbox that could not
// start, an unreadable repository) completes the job as `failed` with the
// reason; the submission's own failures (incorrect, crashed, timed out,
// forged output) are `rejected`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/verdict/verdict.hpp"
#include "kzoo/worker/transport.hpp"

namespace kzoo::worker {

struct WorkerOptions {
  std::string data_dir;     // DATA: kernel_data.git, state.db, uploads/ (server/data_dir.hpp)
  // Api mode (transport.hpp) when set: jobs come from this server's runner
  // API with `token` (a runner token), and data_dir is not used.
  std::string server_url;
  std::string token;
  std::string catalog_dir;  // holds tasks/<name>/task.json and device_classes.json
  std::string judge_dir;    // holds kzoo_judge/
  std::string python = "/usr/bin/python3";
  std::string worker_id;    // lease owner; default host:pid
  std::string device = "cpu";
  // --device-class: the catalog's device class of this worker's results. Empty: read from the
  // GPU (worker/device_class.hpp); Worker::open sets it, and refuses to start without one.
  std::string device_class;
  std::string gpu_name;  // as the driver reported it (cuda; set by Worker::open)
  int lease_seconds = 120;
  bool sandboxed = true;
  std::chrono::seconds timeout{1800};  // benchmark.py's wall-clock limit
  std::optional<int> iterations;       // KZOO_OPTIONS iterations
  nlohmann::json judge_options = nlohmann::json::object();  // more KZOO_OPTIONS keys
  std::uint64_t memory_bytes = 0;
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

class Worker {
 public:
  // Direct mode over options.data_dir, or api mode when options.server_url is set.
  static Result<std::unique_ptr<Worker>> open(WorkerOptions options);
  // Over a transport the caller opened.
  static Result<std::unique_ptr<Worker>> open(WorkerOptions options, std::unique_ptr<JobTransport> transport);
  ~Worker();

  // requeue_expired, then claim and run one job. nullopt: nothing queued.
  Result<std::optional<JobReport>> run_once();

  // run_once until `stop`; sleeps `idle` when nothing is queued. Returns the
  // number of jobs handled.
  std::int64_t run_loop(const std::atomic<bool>& stop, std::chrono::milliseconds idle = std::chrono::seconds(2));

  const WorkerOptions& options() const { return o_; }

 private:
  Worker(WorkerOptions o, std::unique_ptr<JobTransport> t);
  JobReport process(const store::Job& job);
  void say(const std::string& line) const;

  WorkerOptions o_;
  std::unique_ptr<JobTransport> t_;
};

}  // namespace kzoo::worker
