// `kzoo worker`: claims graded jobs from the state database, runs each in
// the sandbox against the package's accepted source (A/B), decides with the
// verdict policy and, on accept, commits to kernel_data (DESIGN §1, §4).
//
// Grading one job is jobs::grade_job (jobs/grade_job.hpp); the worker
// claims jobs, takes back expired leases, and hands each job to it over a
// transport (jobs/transport.hpp): direct, or the server's runner API.
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

#include "kzoo/jobs/grade_job.hpp"
#include "kzoo/jobs/transport.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::worker {

// What the worker grades with (jobs::GradeJobOptions) and where its jobs come from.
struct WorkerOptions : jobs::GradeJobOptions {
  std::string data_dir;     // DATA: kernel_data.git, uploads/, and the state unless state_url says otherwise
  std::string state_url;    // store/open_state.hpp; empty: sqlite:DATA/state.db
  // Api mode (worker/api_transport.hpp) when set: jobs come from this server's
  // runner API with `token` (a runner token), and data_dir is not used.
  std::string server_url;
  std::string token;
  // The next job's judge started when a job's run ends (runner/warm_judge.hpp):
  // auto is on for cuda. Not with a pool of GPUs, whose next GPU is unknown.
  runner::WarmMode warm = runner::WarmMode::auto_;
};

using jobs::JobReport;
using jobs::JobTransport;

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
  // number of jobs handled. Half a second: a job queued while the worker
  // idles waits 0.25 s on average for it (it was 1 s, out of a 20 s target
  // from upload to verdict); the empty claims cost the state database 64 / 0.5
  // = 128 a second with 64 idle workers, and only when there is no work
  // (docs/SCALE.md, "Claims through PostgreSQL").
  std::int64_t run_loop(const std::atomic<bool>& stop, std::chrono::milliseconds idle = std::chrono::milliseconds(500));

  const WorkerOptions& options() const { return o_; }

 private:
  Worker(WorkerOptions o, std::unique_ptr<JobTransport> t);
  void say(const std::string& line) const;

  WorkerOptions o_;
  std::unique_ptr<JobTransport> t_;
};

}  // namespace kzoo::worker
