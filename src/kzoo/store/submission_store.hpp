// Submissions and the routes they aim at: what the server records when a
// package arrives and what it answers when asked about one. A submission is
// queued (with its job) by enqueue, and moves with that job afterwards
// (job_queue.hpp); before that it is `received`, which only this interface
// leaves: enqueue, reject or cancel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

class SubmissionStore {
 public:
  virtual ~SubmissionStore() = default;

  // Records a received submission. With `s.admission`, refused (limited)
  // when it would take its token over a cap, checked atomically with the
  // insert (state_records.hpp Admission).
  virtual StateResult<Submission> create_submission(const NewSubmission& s) = 0;
  // received → queued, and creates its job (queued; `held` when it must wait
  // for a maintainer's release_job before any worker may claim it; only GPU
  // runners that have what it `needs` claim it: JobQueue::claim_job).
  // Returns the job.
  virtual StateResult<Job> enqueue(std::int64_t submission_id, int max_attempts = 3, bool held = false,
                                   JobNeeds needs = {}) = 0;
  // received → rejected (validation failed before any job ran).
  virtual StateResult<Submission> reject(std::int64_t submission_id, const std::vector<std::string>& reasons,
                                         const nlohmann::json& verdict) = 0;
  // received | queued | running → cancelled, the active job with it.
  virtual StateResult<Submission> cancel(std::int64_t submission_id, const std::string& reason) = 0;

  virtual StateResult<Submission> get_submission(std::int64_t id) = 0;
  virtual StateResult<std::vector<Submission>> list_submissions(const SubmissionFilter& f) = 0;

  // Routes. ensure_route creates `name` owned by `owner` unless it exists
  // (then it is returned as it is: the first submitter keeps it).
  virtual StateResult<Route> ensure_route(const std::string& name, const std::string& owner) = 0;
  virtual StateResult<std::vector<Route>> list_routes() = 0;
};

}  // namespace kzoo::store
