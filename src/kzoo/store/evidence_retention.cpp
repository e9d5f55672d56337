#include "kzoo/store/evidence_retention.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kzoo::store {

namespace {

enum class BatchKeep { none, accepted, pending };

// Why an old batch job's result must stay, read from how it was judged: the
// review lists the submissions the result became (batch_api.cpp, judge_batches).
StateResult<BatchKeep> batch_keep(StateDb& db, const BatchJob& b) {
  if (!b.result_commit.empty() && !b.judged) return BatchKeep::pending;
  if (!b.review.is_object() || !b.review.contains("submissions") || !b.review["submissions"].is_array())
    return BatchKeep::none;
  BatchKeep keep = BatchKeep::none;
  for (const auto& entry : b.review["submissions"]) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer()) continue;
    auto s = db.get_submission(entry["id"].get<std::int64_t>());
    if (!s) {
      if (s.error().kind == StateError::not_found) continue;  // nothing of it can be on the board
      return tl::unexpected(s.error());
    }
    if (s->state == State::accepted) return BatchKeep::accepted;
    if (!is_final(s->state)) keep = BatchKeep::pending;
  }
  return keep;
}

}  // namespace

StateResult<EvidenceSelection> select_expired_evidence(StateDb& db, UnixMs now, int keep_days) {
  if (keep_days < 1 || keep_days > 36'500)
    return tl::unexpected(StateError{StateError::invalid,
                                     fmt::format("keep_days {} is out of range: give 1 to 36500 days (a job that has "
                                                 "just ended is still read by its submitter)",
                                                 keep_days)});
  EvidenceSelection sel;
  sel.cutoff = now - static_cast<UnixMs>(keep_days) * 86'400'000;
  // A job cancelled before it ever ran has no finished_at on some paths: its
  // creation stands in, so it still ages out.
  auto ended = [](const Job& j) { return j.finished_at.value_or(j.created_at); };

  // Graded jobs (list_jobs joins each job's submission: batch jobs have none).
  JobFilter f;
  f.states = {State::rejected, State::failed, State::cancelled};
  f.limit = 1000;
  for (;;) {
    auto page = db.list_jobs(f);
    if (!page) return tl::unexpected(page.error());
    for (const auto& l : *page) {
      if (ended(l.job) >= sel.cutoff) ++sel.kept_recent;
      else if (l.kind == "baseline") ++sel.kept_baselines;
      else sel.expired.push_back(l.job.id);
    }
    if (page->size() < static_cast<std::size_t>(f.limit)) break;
    f.before_id = page->back().job.id;
  }

  // Users' batch jobs, every outcome: COMPLETED says only that the script
  // exited 0, not that anything of its result was kept.
  BatchFilter bf;
  bf.limit = 1000;
  for (;;) {
    auto page = db.list_batch(bf);
    if (!page) return tl::unexpected(page.error());
    for (const auto& b : *page) {
      if (!is_final(b.job.state)) continue;
      if (ended(b.job) >= sel.cutoff) {
        ++sel.kept_recent;
        continue;
      }
      auto keep = batch_keep(db, b);
      if (!keep) return tl::unexpected(keep.error());
      if (*keep == BatchKeep::accepted) ++sel.kept_batch_accepted;
      else if (*keep == BatchKeep::pending) ++sel.kept_batch_pending;
      else {
        sel.expired.push_back(b.job.id);
        ++sel.expired_batch;
      }
    }
    if (page->size() < static_cast<std::size_t>(bf.limit)) break;
    bf.before_id = page->back().job.id;
  }
  std::sort(sel.expired.begin(), sel.expired.end());
  return sel;
}

}  // namespace kzoo::store
