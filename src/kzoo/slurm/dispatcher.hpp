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
  int gpus = 0;                   // the GPUs its allocation asked for
};

// The GPUs a batch job asks for to run a job needing `need` of one node, on a
// partition whose checks get `partition_gpus`: the partition's, or the job's
// when it needs more. A CPU board's partition (0 GPUs) runs every check on
// the CPU, whatever GPU count a job carries: 0.
int allocation_gpus(int need, int partition_gpus);

// One step's decision about the pending batch jobs, apart from Slurm (tests):
// for every allocation size, as many pending as there are claimable jobs that
// need that size; the newest pending of a size in excess are cancelled; new
// ones are submitted round-robin over the sizes short of them, while fewer
// than `max_batch` are out.
struct FillPlan {
  std::vector<std::string> cancel;  // pending batch jobs no queued job needs, newest first
  std::vector<int> submit;          // the GPUs of each batch job to submit, in order
};
// `queued`: claimable jobs by the GPUs each needs (StateDb::claimable_by_gpus);
// `pending`: each pending batch job's id and GPUs; `outstanding`: batch jobs out,
// pending or running.
FillPlan plan_fill(const std::map<int, std::int64_t>& queued, const std::map<std::string, int>& pending,
                   int outstanding, int max_batch, int partition_gpus);

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
  Result<void> submit(const Partition& p, int gpus);
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
