// Which jobs' evidence (refs/jobs/<id>) a maintenance pass may delete
// (docs/SCALE.md §4, docs/STORE.md "Retention", `kzoo maintain`). At 100,000
// jobs a day every job's evidence kept is 93 GB a year of packed objects and
// 36 million refs; most of it is rejected attempts nobody reads after a few
// weeks.
//
// Graded jobs: one that ended rejected, failed or cancelled more than
// `keep_days` ago loses its evidence. Kept forever:
//   - accepted jobs: the board's best entries and each accept commit's
//     Kzoo-Evidence trailer name them;
//   - baseline measurements of any outcome: the board reads its eager figures
//     from them (board.cpp, baseline_for).
// Users' batch jobs (batch.hpp, docs/BATCH.md): the ref holds what the job
// left in its submit directory, and goes `keep_days` after the job ended,
// however it ended. Kept:
//   - a result one of whose submissions was accepted: it is where that
//     board entry's source came from;
//   - a result not judged yet (the judge reads it from the ref), or one whose
//     submissions are not all decided (an outsider's may be held for weeks):
//     kept until they are, then aged from the job's end like the rest.
// Every verdict, reason and figure stays in the state database: only the git
// copy of the evidence goes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kzoo/store/state_db.hpp"

namespace kzoo::store {

struct EvidenceSelection {
  std::vector<std::int64_t> expired;  // ended before the cutoff, deletable; ascending ids, batch jobs' included
  std::int64_t expired_batch = 0;     // of `expired`, users' batch jobs
  std::int64_t kept_recent = 0;       // ended rejected/failed/cancelled (a batch job: ended at all), but within keep_days
  std::int64_t kept_baselines = 0;    // baseline measurements that did not pass, kept for the board
  std::int64_t kept_batch_accepted = 0;  // batch jobs ended before the cutoff whose result became an accepted submission
  std::int64_t kept_batch_pending = 0;   // ... whose result is not judged yet, or whose submissions are not all decided
  UnixMs cutoff = 0;                  // jobs that finished before this instant are expired
};

// Scans every graded job that ended rejected, failed or cancelled, and every
// batch job that ended (pages of 1000, newest first), and sorts them by the
// rules above, against `now` (the database's clock) minus `keep_days` (1 or
// more: a job that just ended may still be read by its submitter; invalid
// otherwise).
StateResult<EvidenceSelection> select_expired_evidence(StateDb& db, UnixMs now, int keep_days);

}  // namespace kzoo::store
