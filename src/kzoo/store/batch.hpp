// Users' own batch jobs (the board seed's "Jobs are Slurm batch scripts"):
// a job of kind `batch` in the same jobs table as graded jobs, so it is
// claimed, leased, held (JobHeldAdmin), released and cancelled by the same
// transitions, and its id names its result ref refs/jobs/<id> without ever
// colliding with a graded job's. What only a batch job has -- its script, the
// limits it asked for, the commit it was built on, its submit directory, how
// it ended and how its result was judged -- is a batch_jobs row (migration 9).
//
// A batch job's jobs.state follows the job machine (job_queue.hpp); how it
// ended in Slurm's words is `end_state`:
//   COMPLETED (exit 0)              job accepted
//   FAILED / TIMEOUT / OUT_OF_MEMORY the script's own end: job rejected
//   NODE_FAIL                       the runner's trouble: job failed
//   CANCELLED                       scancel: job cancelled
// complete() refuses a batch job (finish_batch ends it); claim, heartbeat,
// retry, requeue_expired and release_job take both kinds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

// What sbatch asked for, checked against the partition by the server before
// it reaches the store (the store keeps only its own bounds).
struct NewBatch {
  std::string owner;     // the user (an agent's job is its person's)
  std::string token_id;  // the token it came with (concurrent-job cap)
  std::string name;      // --job-name (default: the script's file name), 1-200 bytes
  std::string script;    // the script's path as given to sbatch (relative to the clone's top), 1-320 bytes
  // The script itself, as Slurm keeps it: copied at submission, so it need
  // not be committed (a pushed commit changes only kernels' src/), and run
  // from outside the submit directory. 1-65536 bytes.
  std::string script_text;
  std::string partition;
  int time_s = 0, cpus = 0, memory_mb = 0, gpus = 0;
  std::string route;        // where its changes are judged: routes/<route>; empty: main
  std::string base_commit;  // the pushed commit the submit directory is (40 hex)
  std::string package_path, sha256;  // the stored submit directory (tar.gz) and its digest
  std::int64_t package_bytes = 0;
  bool held = false;       // an outsider's: held for a maintainer (JobHeldAdmin)
  int max_attempts = 3;    // claims before a lost lease fails it
  std::optional<std::int64_t> max_concurrent;  // the token's cap on queued or running jobs, this one included
};

struct BatchJob {
  Job job;
  std::string owner, token_id, name, script, script_text, partition;
  int time_s = 0, cpus = 0, memory_mb = 0, gpus = 0;
  std::string route, base_commit, package_path, sha256;
  std::int64_t package_bytes = 0;
  std::string end_state;  // empty until it ends; COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL OUT_OF_MEMORY
  std::optional<int> exit_code, exit_signal;
  std::optional<std::int64_t> elapsed_ms;
  std::string result_commit;  // refs/jobs/<id>: the submit directory as it was left; empty: none
  bool judged = false;        // the result commit was judged as a push (review holds how)
  nlohmann::json review;      // {"ok", "messages": [...], "violations": [...], "submissions": [...]}; null until judged
};

// How a runner saw a batch job end.
struct BatchEnd {
  std::string end_state;  // COMPLETED FAILED TIMEOUT OUT_OF_MEMORY NODE_FAIL
  int exit_code = 0;
  int exit_signal = 0;
  std::int64_t elapsed_ms = 0;
  std::string result_commit;  // empty when the runner could not return the submit directory
  nlohmann::json result;      // the runner's record (warnings, limits), kept on the job
};

struct BatchFilter {
  std::optional<std::string> owner;  // none: everyone's
  std::int64_t before_id = INT64_MAX;
  int limit = 100;  // 1-1000
};

// The Slurm states and `end_state` as squeue and sacct print them.
bool valid_end_state(std::string_view s);

class BatchStore {
 public:
  virtual ~BatchStore() = default;
  // A queued batch job (held for a maintainer when b.held); audited
  // `batch.submit`. invalid for values outside the schema's bounds; limited
  // over the token's concurrent-job cap.
  virtual StateResult<BatchJob> create_batch(const NewBatch& b) = 0;
  // not_found unless `job_id` is a batch job.
  virtual StateResult<BatchJob> get_batch(std::int64_t job_id) = 0;
  // Newest first.
  virtual StateResult<std::vector<BatchJob>> list_batch(const BatchFilter& f) = 0;
  // The holder of the running batch job ends it (the job's state from
  // e.end_state, above); audited `batch.end`. Only for the holder.
  virtual StateResult<BatchJob> finish_batch(std::int64_t job_id, const std::string& worker_id, const BatchEnd& e) = 0;
  // scancel: a queued (held or not) or running batch job becomes cancelled
  // (end_state CANCELLED); its holder learns from its next heartbeat
  // (wrong_state) and stops it. wrong_state once it has ended.
  virtual StateResult<BatchJob> cancel_batch(std::int64_t job_id, const std::string& reason) = 0;
  // Ended batch jobs with a result commit not yet judged, oldest first.
  virtual StateResult<std::vector<BatchJob>> unjudged_batches(int limit) = 0;
  // Takes the result commit for judging, once: wrong_state when another
  // server (or an earlier call) took it, or when there is no result yet. A
  // server that dies between this and record_judgement leaves the job marked
  // judged with no review: its result is never judged twice.
  virtual StateResult<BatchJob> begin_judgement(std::int64_t job_id) = 0;
  // How it was judged (after begin_judgement, once).
  virtual StateResult<BatchJob> record_judgement(std::int64_t job_id, const nlohmann::json& review) = 0;
};

}  // namespace kzoo::store
