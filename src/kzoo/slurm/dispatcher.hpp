// The Slurm runner (issue 22 §2): graded jobs run as Slurm batch jobs. A
// dispatcher beside the server keeps one batch job pending for every job
// queued in the state; each batch job runs `kzoo worker --once` in api mode
// inside its allocation, which claims the oldest queued job and grades it
// like any worker (jobs/grade_job.hpp). Slurm only decides where and when a
// worker runs; leases still decide who holds a job, so a node that dies takes
// only a lease with it: the job is queued again (the dispatcher takes expired
// leases back itself) and a new batch job grades it.
//
// Each step: take back expired leases; follow the batch jobs it submitted
// (squeue); record how each ended (scontrol, before Slurm forgets it: there
// is no accounting) in DIR/batch.jsonl; scancel one that outlives its time
// or waits too long for an allocation, and pending ones no queued job needs
// any more (cancelled, or claimed by other workers); submit more while jobs
// wait, asking for the partition the board's checks run on (partition.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/slurm/cluster.hpp"
#include "kzoo/slurm/partition.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::slurm {

struct DispatchOptions {
  // `kzoo worker --once --server URL --token-file FILE ...`: what each batch
  // job runs (its --timeout is added from the partition).
  std::vector<std::string> worker;
  std::string dir;      // the batch script, each job's log (<id>.log) and pid, batch.jsonl
  int max_batch = 4;    // batch jobs pending or running at once
  std::chrono::milliseconds poll{1000};
  int pending_timeout_s = 900;  // scancel a batch job still waiting for its allocation after this
  std::function<void(std::string_view)> log;
};

// One batch job the dispatcher follows.
struct Batch {
  std::string id;
  std::int64_t submitted_at = 0;  // ms, this host's clock
  std::int64_t started_at = 0;    // first seen running; 0: not yet
  std::string state = "PENDING";
};

class Dispatcher {
 public:
  // Picks up the batch jobs DIR/batch.jsonl says are still out (a restart).
  static Result<Dispatcher> open(DispatchOptions o, store::StateDb& db, store::KernelRepo repo);
  // One pass; an error leaves everything as it was, to retry.
  Result<void> step();
  // step() every poll until `stop`.
  void run(const std::atomic<bool>& stop);
  const std::map<std::string, Batch>& outstanding() const { return out_; }

 private:
  Dispatcher(DispatchOptions o, store::StateDb& db, store::KernelRepo repo);
  Result<Partition> partition();
  Result<void> follow(const Partition& p);
  Result<void> fill(const Partition& p);
  Result<void> submit(const Partition& p);
  void ended(const std::string& id, const std::optional<BatchEnd>& end, const std::string& why);
  void note(const nlohmann::json& event);
  void say(const std::string& line) const;

  DispatchOptions o_;
  store::StateDb& db_;
  store::KernelRepo repo_;
  std::map<std::string, Batch> out_;
};

// The batch script: records its pid (DIR/<job id>.pid), then becomes `argv`.
std::string batch_script(const std::vector<std::string>& argv, const std::string& dir);

}  // namespace kzoo::slurm
