// How grading one job (grade_job.hpp) reaches the service's state and
// repository: the seam between grading and where jobs come from.
//
//   direct  (direct.hpp)   the state (store::StateDb, SQLite or PostgreSQL)
//           and kernel_data.git (store::KernelRepo) themselves. One machine,
//           or hosts that share the repository and the state. The server's
//           runner API uses this same class on its side of the wire.
//   api     (worker/api_transport.hpp)  the server's runner API over HTTP
//           with a runner token (docs/SERVER.md "Runner API"): a compute node
//           then needs no access at all to the data directory. The JSON of
//           the wire is wire.hpp, shared by both sides.
//
// Both keep the store's contract: only the lease holder heartbeats, records,
// accepts and completes; a lost lease answers not_holder or wrong_state.
// In api mode the server names the holder "<token id>/<worker id>", so one
// runner token cannot act on another's job.
//
// Threads: one object per thread; another() opens a second handle (the
// heartbeat thread's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/board/rules.hpp"
#include "kzoo/package/package_tree.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/jobs/bench_result.hpp"

namespace kzoo::jobs {

// The package at the tip of the job's branch: the trusted harness and the incumbent.
struct TrustedPackage {
  std::string base;  // the commit
  package::PackageTree tree;
};

// A commit an earlier holder of the job made on main before dying, and the
// verdict it recorded as evidence (null when none).
struct Recovery {
  std::string commit;  // empty: none
  nlohmann::json verdict;
};

struct AcceptRequest {
  std::int64_t job_id = 0;
  std::string kernel_id;
  // The submission's src/. Direct mode commits it; the server's runner API
  // ignores what a runner would send and reads the stored upload itself.
  package::PackageTree src;
  nlohmann::json benchmark_output;  // for the server-owned bench_result.yaml
  Directions directions;            // api mode: recomputed by the server from the trusted package
  std::string evidence_commit;
  std::string now_iso;
  std::string message;
  store::Person author;
  std::string measured_at;  // the base the candidate was measured against
  // false: onto the job's branch (main, or its route's). true: adoption, onto
  // main, of what was just accepted on a route; only where the board's rules
  // say `adopt: auto` (or there are none), else refused.
  bool adopt = false;
};

// What the board (board/) asks of one job, settled by the side that holds the
// repository: the rules in force, the branch an accept lands on, and for a
// baseline job the source it measures. The figures a check reports its score
// from are read before grading: a score computed while another job lands on
// the same route can lag it by that one kernel (the board recomputes).
struct BoardContext {
  std::optional<board::Rules> rules;       // none: the project declares no board (no `checks` tag)
  std::string branch = "main";             // main, or routes/<route> for a submission to a route
  std::string baseline_commit;             // a baseline job: the commit whose source it measures
  package::PackageTree baseline_tree;      // ... and that source
  nlohmann::json baseline_measured;        // the kernel's baseline's measured cases; null: none yet
  std::map<std::string, double> standing;  // speed-ups of the board's kernels on the branch scored
};

class JobTransport {
 public:
  virtual ~JobTransport() = default;
  // "data directory DIR" or "server URL", for logs.
  virtual std::string describe() const = 0;
  // Takes back expired leases (direct mode; the server does it in api mode).
  virtual store::StateResult<std::vector<store::Requeued>> requeue_expired() = 0;
  // `has`: a GPU runner's compute capability and GPUs, so that it takes only
  // jobs its node can run (JobQueue::claim_job); neither: a CPU runner.
  virtual store::StateResult<std::optional<store::Job>> claim(const std::string& worker_id, int lease_seconds,
                                                              const store::RunnerHas& has) = 0;
  virtual store::StateResult<store::Job> heartbeat(std::int64_t job_id, const std::string& worker_id,
                                                   int lease_seconds) = 0;
  virtual store::StateResult<store::Job> complete(std::int64_t job_id, const std::string& worker_id,
                                                  const store::Completion& c) = 0;
  // Hands a running job back after an infrastructure failure (StateDb::retry).
  virtual store::StateResult<store::Job> retry(std::int64_t job_id, const std::string& worker_id,
                                               const std::vector<std::string>& reasons, const nlohmann::json& result) = 0;
  virtual store::StateResult<store::Submission> submission(std::int64_t id) = 0;
  // The job's uploaded tarball as a local file (api mode: downloaded into
  // `scratch_dir`, which the caller removes).
  virtual Result<std::string> package_file(const store::Job& job, const store::Submission& sub,
                                           const std::string& scratch_dir) = 0;
  // `kernel_id` at the tip of the job's branch (main until its route exists).
  virtual Result<TrustedPackage> trusted(const std::string& kernel_id, std::int64_t job_id) = 0;
  // A commit on the job's branch by an earlier holder of it.
  virtual Result<Recovery> recover(const std::string& kernel_id, std::int64_t job_id, std::size_t scan) = 0;
  // Commits `files` to refs/jobs/<job_id>; returns the commit.
  virtual Result<std::string> record_evidence(std::int64_t job_id, const std::string& worker_id,
                                              const std::map<std::string, std::string>& files,
                                              const std::string& message) = 0;
  virtual Result<store::AcceptResult> accept(const AcceptRequest& r, const std::string& worker_id) = 0;
  virtual Result<BoardContext> board(std::int64_t job_id) = 0;

  // A batch job (store/batch.hpp): what it asks, and its submit directory's
  // tarball as a local file (api mode: downloaded into `scratch_dir`).
  virtual store::StateResult<store::BatchJob> batch(std::int64_t job_id) = 0;
  virtual Result<std::string> batch_file(const store::BatchJob& b, const std::string& scratch_dir) = 0;
  // Its end: `tree` (the submit directory as the job left it; none when it
  // could not be read back) committed to refs/jobs/<id> on its base commit,
  // then the job ended with that commit. Only for the lease holder.
  virtual Result<store::BatchJob> finish_batch(std::int64_t job_id, const std::string& worker_id,
                                               const store::BatchEnd& end,
                                               const std::optional<package::PackageTree>& tree) = 0;
  // A second handle, for another thread.
  virtual Result<std::unique_ptr<JobTransport>> another() = 0;
};

}  // namespace kzoo::jobs
