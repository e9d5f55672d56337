// Jobs and their leases: the queue workers pull from (DESIGN §4). One
// implementation per database engine (sql_state.hpp); the contract is the
// engine's, not the caller's, to keep.
//
// Leases: claim_job hands the oldest queued job that is not held to one
// worker until lease_expires_at, measured by the database's clock (now());
// heartbeat extends it; only the current holder may extend, complete or hand
// it back. requeue_expired takes jobs back from vanished workers, so a late
// completion from such a worker is refused (not_holder or wrong_state) and a
// job is never completed twice with two outcomes. `attempts` counts claims: a
// job whose lease expires after its max_attempts-th claim fails instead of
// being queued again.
//
// Every transition is one transaction that reads the current state and
// refuses (StateError::wrong_state, naming both states) when it is not one the
// transition starts from: nothing is ever a silent no-op. Any number of
// connections, in any number of processes and hosts, may claim at once: no
// two ever hold the same job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/accounts.hpp"
#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

class JobQueue {
 public:
  virtual ~JobQueue() = default;

  // The oldest queued job that is not held, now running under `worker_id`
  // until now + lease. nullopt when nothing is queued. A GPU runner says what
  // it `has`: its compute capability (tenths: 90 = 9.0) and the GPUs of its
  // node. It takes only jobs that need no more of either, and the jobs it
  // leaves for that reason record it in `passed_over` with what it lacked, so
  // that a job no runner can take says why it waits. What it does not say
  // (a CPU runner, which checks correctness but measures no GPU figure, says
  // neither) filters nothing.
  virtual StateResult<std::optional<Job>> claim_job(const std::string& worker_id, int lease_seconds,
                                                    const RunnerHas& has = {}) = 0;
  // Extends the lease to now + lease_seconds; only for the holder of a running job.
  virtual StateResult<Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease_seconds) = 0;
  // running → outcome, for the job and its submission; only for the holder.
  virtual StateResult<Job> complete(std::int64_t job_id, const std::string& worker_id, const Completion& c) = 0;
  // The holder hands a running job back after an infrastructure failure (the
  // judge crashed, the device failed): running → queued while attempts remain,
  // so that any worker may claim it again, else → failed with `reasons`, the
  // submission with it. `result` (the failed attempt's evidence) is kept on the
  // job either way. Only for the holder.
  virtual StateResult<Job> retry(std::int64_t job_id, const std::string& worker_id,
                                 const std::vector<std::string>& reasons, const nlohmann::json& result) = 0;
  // Every running job whose lease expired at or before `now` (a time of the
  // database's clock: pass now()). Idempotent: every server may run it.
  virtual StateResult<std::vector<Requeued>> requeue_expired(UnixMs now) = 0;

  virtual StateResult<Job> get_job(std::int64_t id) = 0;
  virtual StateResult<std::vector<Job>> jobs_of(std::int64_t submission_id) = 0;
  virtual StateResult<std::int64_t> count_jobs(State s) = 0;
  // Queued jobs a worker may claim now (not held): the work waiting for a runner.
  virtual StateResult<std::int64_t> count_claimable() = 0;
  // The same, by the GPUs of one node each needs (requires_gpus -> jobs): what
  // a dispatcher sizes its allocations by (slurm/dispatcher.hpp).
  virtual StateResult<std::map<int, std::int64_t>> claimable_by_gpus() = 0;

  // Holds. A held queued job becomes claimable; wrong_state unless queued
  // and held for a maintainer (kHeldAdmin).
  virtual StateResult<Job> release_job(std::int64_t job_id) = 0;
  // Held jobs, oldest first.
  virtual StateResult<std::vector<HeldJob>> held_jobs(int limit = 100) = 0;

  // The queue as people read it (GET /api/jobs, `kzoo queue`): jobs with
  // their submission's kernel and submitter, filtered and paged (JobFilter).
  // invalid for a limit outside 1-1000 or a negative cursor.
  virtual StateResult<std::vector<JobListing>> list_jobs(const JobFilter& f) = 0;
  // Where a job stands in line: 1 when a worker's next claim takes it;
  // nullopt when it is not waiting to be claimed (held, running, finished).
  virtual StateResult<std::optional<std::int64_t>> queue_position(std::int64_t job_id) = 0;

  // The database's clock (leases and expiry are measured by it).
  virtual UnixMs now() = 0;
};

}  // namespace kzoo::store
