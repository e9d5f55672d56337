// Which graded jobs' evidence (refs/jobs/<id>) a maintenance pass may delete
// (docs/SCALE.md §4, `kzoo maintain`). At 100,000 jobs a day every job's
// evidence kept is 93 GB a year of packed objects and 36 million refs; most
// of it is rejected attempts nobody reads after a few weeks.
//
// The rule: a job that ended rejected, failed or cancelled more than
// `keep_days` ago loses its evidence. Kept forever:
//   - accepted jobs: the board's best entries and each accept commit's
//     Kzoo-Evidence trailer name them;
//   - baseline measurements of any outcome: the board reads its eager figures
//     from them (board.cpp, baseline_for).
// Every verdict, reason and figure stays in the state database: only the git
// copy of the evidence goes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kzoo/store/job_queue.hpp"

namespace kzoo::store {

struct EvidenceSelection {
  std::vector<std::int64_t> expired;  // ended before the cutoff, deletable; ascending ids
  std::int64_t kept_recent = 0;       // ended rejected/failed/cancelled, but within keep_days
  std::int64_t kept_baselines = 0;    // baseline measurements that did not pass, kept for the board
  UnixMs cutoff = 0;                  // jobs that finished before this instant are expired
};

// Scans every job that ended rejected, failed or cancelled (pages of 1000,
// newest first) and sorts them by the rule above, against `now` (the
// database's clock) minus `keep_days` (1 or more: a job that just ended may
// still be read by its submitter; invalid otherwise).
StateResult<EvidenceSelection> select_expired_evidence(JobQueue& jobs, UnixMs now, int keep_days);

}  // namespace kzoo::store
