#include "kzoo/store/evidence_retention.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kzoo::store {

StateResult<EvidenceSelection> select_expired_evidence(JobQueue& jobs, UnixMs now, int keep_days) {
  if (keep_days < 1 || keep_days > 36'500)
    return tl::unexpected(StateError{StateError::invalid,
                                     fmt::format("keep_days {} is out of range: give 1 to 36500 days (a job that has "
                                                 "just ended is still read by its submitter)",
                                                 keep_days)});
  EvidenceSelection sel;
  sel.cutoff = now - static_cast<UnixMs>(keep_days) * 86'400'000;
  JobFilter f;
  f.states = {State::rejected, State::failed, State::cancelled};
  f.limit = 1000;
  for (;;) {
    auto page = jobs.list_jobs(f);
    if (!page) return tl::unexpected(page.error());
    for (const auto& l : *page) {
      // A job cancelled before it ever ran has no finished_at on some paths:
      // its creation stands in, so it still ages out.
      const UnixMs ended = l.job.finished_at.value_or(l.job.created_at);
      if (ended >= sel.cutoff) ++sel.kept_recent;
      else if (l.kind == "baseline") ++sel.kept_baselines;
      else sel.expired.push_back(l.job.id);
    }
    if (page->size() < static_cast<std::size_t>(f.limit)) break;
    f.before_id = page->back().job.id;
  }
  std::sort(sel.expired.begin(), sel.expired.end());
  return sel;
}

}  // namespace kzoo::store
