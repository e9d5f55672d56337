// The records of the service's state (DESIGN §4) and the one error type of
// every state interface: what the store interfaces (job_queue.hpp,
// submission_store.hpp, accounts.hpp, pulls.hpp, board_audit.hpp) take and
// give. Plain values; no behaviour beyond naming their states.
//
// State machine (one enum for both; a job is never `received`):
//
//   submission: received ─enqueue─► queued ─claim─► running ─complete─► accepted | rejected | failed
//               received ─reject──► rejected            running ─lease expiry─► queued (attempts left)
//               received | queued | running ─cancel─► cancelled          └────► failed (none left)
//   job:        created queued by enqueue, then follows its submission:
//               queued ─claim─► running ─complete─► accepted | rejected | failed
//               running ─lease expiry─► queued | failed;  queued | running ─cancel─► cancelled
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

namespace kzoo::store {

using UnixMs = std::int64_t;

// This host's clock. The state's own times come from the database's clock
// (JobQueue::now); this one is for what the state does not decide.
UnixMs system_now_ms();

enum class State { received, queued, running, accepted, rejected, failed, cancelled };

std::string_view to_string(State s);
std::optional<State> parse_state(std::string_view s);
bool is_final(State s);  // accepted, rejected, failed, cancelled

// The three ways a worker may finish a job.
enum class Outcome { accepted, rejected, failed };
State to_state(Outcome o);

struct StateError {
  enum Kind {
    not_found,    // no submission / job with that id
    wrong_state,  // the transition does not start from the current state
    not_holder,   // the worker does not hold the job's lease
    invalid,      // a malformed argument (bad sha256, empty worker id...)
    busy,         // the database stayed locked past the busy timeout: retry
    io,           // the database failed (disk, corruption, schema)
    limited,      // over a per-token cap (NewSubmission::admission): retry later
  };
  Kind kind;
  std::string message;  // names the entity, the states or values, and what to do
};

template <class T>
using StateResult = tl::expected<T, StateError>;

std::string_view to_string(StateError::Kind k);

// The per-token caps a new submission must fit under. create_submission
// checks them in the transaction that records it, with the token's row
// locked, so servers admitting at once cannot together pass a cap; a check
// before reading the upload is only the early, cheap refusal.
struct Admission {
  std::int64_t per_hour = 0;         // submissions in the last hour, this one included
  std::int64_t concurrent_jobs = 0;  // the token's queued or running jobs, this one included
  std::int64_t bytes_per_day = 0;    // package bytes in the last day, this one included
};

struct NewSubmission {
  std::string kernel_id;
  std::string submitter_id;
  std::string summary;       // optimization_summary; may be empty
  std::string package_path;  // where the server stored the uploaded tarball
  std::string sha256;        // of the tarball, 64 lowercase hex digits
  std::string token_id;      // the token it came with (per-token limits); empty: none
  std::int64_t package_bytes = 0;  // the upload's size (upload bytes per day)
  std::string route;         // the route it targets (board/: branch routes/<route>); empty: main
  std::string kind = "submission";  // "submission" | "baseline" (a board's eager baseline measurement)
  std::string received_by;   // the server that received it (its recovery after a restart); empty: none named
  std::optional<Admission> admission;  // caps on token_id's use; none: not capped (server-made submissions)
};

struct Submission {
  std::int64_t id = 0;
  std::string kernel_id, submitter_id, summary, package_path, sha256;
  UnixMs created_at = 0;
  UnixMs updated_at = 0;
  State state = State::received;
  nlohmann::json verdict;            // null until decided
  std::vector<std::string> reasons;  // why rejected / failed / cancelled
  std::string accepted_commit;       // kernel_data commit of an accepted submission, else empty
                                     // (a baseline: the commit whose source it measured)
  std::string token_id;              // the token it came with; empty: none
  std::int64_t package_bytes = 0;
  std::string route;                 // empty: main
  std::string kind = "submission";   // "submission" | "baseline"
  std::string received_by;           // the server that received it; empty: none named
};

struct BoardStatus {
  int version = 0;
  std::string status;
  std::string set_by;
  UnixMs set_at = 0;
};

// A route: a named line of work, the branch routes/<name> in kernel_data,
// started (and owned) by one submitter.
struct Route {
  std::string name;
  std::string owner;  // the submitter id that started it
  UnixMs created_at = 0;
};

struct Job {
  std::int64_t id = 0;
  std::int64_t submission_id = 0;
  State state = State::queued;
  int attempts = 0;      // times claimed
  int max_attempts = 0;
  std::string lease_owner;  // current holder while running; last holder afterwards; empty if never claimed
  std::optional<UnixMs> lease_expires_at;  // set only while running
  std::optional<UnixMs> heartbeat_at;
  nlohmann::json result;  // the worker's result document; null until completed
  UnixMs created_at = 0;
  std::optional<UnixMs> started_at;  // last claim
  std::optional<UnixMs> finished_at;
  // A queued job that waits for a maintainer (Slurm's JobHeldAdmin): never
  // claimed until release_job. Only meaningful while queued.
  bool held = false;
  std::string released_by;  // who released it; empty if never held or not yet released
  std::optional<UnixMs> released_at;
  // Why it waits while held: kHeldAdmin (for a maintainer) or kHeldPullRequest
  // (for its route's owner to merge it); empty if never held.
  std::string hold_reason;
  // The compute capability, in tenths (90 = 9.0), a GPU runner needs to claim
  // it (desc.yaml min_arch_feature, the task's min_compute_capability); 0: any.
  int requires_cc = 0;
  // The GPUs of one node a GPU runner needs to claim it (the task's
  // environment.gpus, 1 when it names none; a batch job's, 0 when it asks none).
  int requires_gpus = 1;
  // The last GPU runner that left it, with only what it lacked: "<worker>
  // (compute capability 8.0) at <time>", "<worker> (1 GPU) at <time>" or
  // "<worker> (compute capability 8.0, 1 GPU) at <time>"; empty if none did.
  std::string passed_over;
  // "grade" (a submission's) or "batch" (a user's own script, batch.hpp: no
  // submission, submission_id 0).
  std::string kind = "grade";
  bool is_batch() const { return kind == "batch"; }
};

// What a job needs of the runner that claims it, read from the trusted side
// when it is queued (the package's desc.yaml on main, the catalog's task). A
// runner that has less leaves it to one that has enough.
struct JobNeeds {
  int compute_capability = 0;  // tenths (90 = 9.0); 0: any
  int gpus = 1;                // of one node, 1 to kMaxNodeGpus (the judge runs on one)
};

// What a claiming runner has. A GPU runner gives both, read from its driver
// and its --gpus; a CPU runner gives neither: it checks correctness and CPU
// timings, which count for no GPU board, so it may take any job.
struct RunnerHas {
  std::optional<int> compute_capability;  // tenths, the lowest of its GPUs
  std::optional<int> gpus;                // the GPUs of its node one job may take, 1 to kMaxNodeGpus
};
// More GPUs than one node holds: the bound on what a runner may say it has,
// hence on what a job may need (one needing more could never run).
inline constexpr int kMaxNodeGpus = 1024;

// What a worker hands back when it finishes a job.
struct Completion {
  Outcome outcome = Outcome::failed;
  nlohmann::json result;             // the job's result (benchmark output, evidence commit...)
  nlohmann::json verdict;            // the submission's verdict
  std::vector<std::string> reasons;  // human reasons, shown to the submitter
  std::string accepted_commit;       // required for Outcome::accepted, else empty
};

struct Requeued {
  std::int64_t job_id = 0;
  std::string lost_owner;  // the worker whose lease expired
  State now = State::queued;  // queued, or failed when attempts ran out
};

struct SubmissionFilter {
  std::optional<std::string> kernel_id;
  std::optional<std::string> submitter_id;
  std::optional<State> state;
  std::optional<std::string> route;
  std::optional<std::string> kind;
  std::optional<std::string> received_by;
  std::int64_t before_id = INT64_MAX;  // paging: ids strictly below, newest first
  int limit = 100;
};

// What the queue's listing (JobQueue::list_jobs) selects. Paged by job id:
// newest first below `before_id`, or, given `after_id`, oldest first above
// it, which is the order workers claim in (after_id = 0 starts at the head).
struct JobFilter {
  std::vector<State> states;         // any of these; empty: every state
  std::optional<bool> held;          // only queued jobs are held: true = waiting for a person, false = claimable
  std::optional<std::string> kernel_id;
  std::optional<std::string> submitter_id;
  std::int64_t before_id = INT64_MAX;
  std::optional<std::int64_t> after_id;
  int limit = 100;
};

// A job as the queue's listing shows it: with what it grades and, while a
// worker may claim it, its place in line.
struct JobListing {
  Job job;
  std::string kernel_id, submitter_id, route, kind;
  // 1 = the next job a worker claims; only for queued jobs that are not held.
  std::optional<std::int64_t> position;
};

}  // namespace kzoo::store
