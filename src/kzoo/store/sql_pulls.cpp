// Pull requests and their comments (pulls.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

StateResult<Job> SqlPulls::open_pull(std::int64_t submission_id, int max_attempts, JobNeeds needs) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Submission sub = c_.expect_submission(submission_id, {State::received}, "open a pull request for");
      Job j = c_.queue_job(submission_id, max_attempts, kHeldPullRequest, now, needs);
      c_.db().exec("INSERT INTO pulls(submission_id, route, author, created_at) VALUES ($1,$2,$3,$4)",
                   {submission_id, sub.route, sub.submitter_id, now});
      c_.audit(now, "pull.open", fmt::format("submission/{}", submission_id), {{"route", sub.route}, {"job", j.id}});
      return j;
    });
  });
}

StateResult<Pull> SqlPulls::decide_pull(std::int64_t submission_id, bool merge, bool then_admin, const std::string& why) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Pull p = c_.load_pull(submission_id, true);
      if (p.state != PullState::open)
        refuse(StateError::wrong_state,
               fmt::format("pull request {} is {} already (by {})", submission_id, to_string(p.state), p.decided_by));
      c_.db().exec("UPDATE pulls SET state=$1, decided_by=$2, decided_at=$3 WHERE submission_id=$4",
                   {std::string(to_string(merge ? PullState::merged : PullState::closed)), c_.actor.who, now,
                    submission_id});
      if (merge) {
        // Its job: claimable now, or on to a maintainer when it comes from outside the project.
        auto n = then_admin ? c_.db().exec("UPDATE jobs SET hold_reason='JobHeldAdmin' WHERE submission_id=$1 "
                                           "AND state='queued' AND held=1 AND hold_reason='PullRequest'",
                                           {submission_id})
                            : c_.db().exec("UPDATE jobs SET held=0, released_by=$2, released_at=$3 WHERE submission_id=$1 "
                                           "AND state='queued' AND held=1 AND hold_reason='PullRequest'",
                                           {submission_id, c_.actor.who, now});
        if (n != 1)
          refuse(StateError::wrong_state, fmt::format("pull request {} has no job waiting for its merge", submission_id));
        c_.audit(now, "pull.merge", fmt::format("submission/{}", submission_id),
                 {{"route", p.route}, {"then", then_admin ? "held for a maintainer" : "queued"}});
      } else {
        c_.expect_submission(submission_id, {State::received, State::queued, State::running}, "close");
        c_.cancel_active_job(submission_id, now);
        c_.finish_submission(submission_id, State::cancelled, nullptr,
                             {why.empty() ? "pull request closed by " + c_.actor.who : why}, "", now);
        c_.audit(now, "pull.close", fmt::format("submission/{}", submission_id), {{"route", p.route}, {"why", why}});
      }
      return c_.load_pull(submission_id);
    });
  });
}

StateResult<Pull> SqlPulls::get_pull(std::int64_t submission_id) {
  return c_.guarded([&] { return c_.load_pull(submission_id); });
}

StateResult<std::vector<Pull>> SqlPulls::list_pulls(const std::optional<std::string>& route,
                                                    const std::optional<PullState>& state, int limit) {
  return c_.guarded([&] {
    if (limit < 1 || limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    std::vector<Pull> out;
    for (const auto& r : c_.db().query(fmt::format("SELECT {} FROM pulls WHERE (CAST($1 AS TEXT) IS NULL OR route = $1) "
                                                   "AND (CAST($2 AS TEXT) IS NULL OR state = $2) ORDER BY submission_id DESC LIMIT $3",
                                                   Core::kPullCols),
                                       {route ? Value(*route) : Value(nullptr),
                                        state ? Value(std::string(to_string(*state))) : Value(nullptr),
                                        std::int64_t{limit}}))
      out.push_back(Core::pull_of(r));
    return out;
  });
}

StateResult<Comment> SqlPulls::add_comment(std::int64_t submission_id, ReviewKind kind, const std::string& body) {
  return c_.guarded([&] {
    if (body.empty() || body.size() > 10000)
      refuse(StateError::invalid, fmt::format("a comment is 1-10000 bytes; this one is {}", body.size()));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      (void)c_.load_pull(submission_id);
      auto rows = c_.db().query("INSERT INTO comments(submission_id, who, token_id, kind, body, at) "
                                "VALUES ($1,$2,$3,$4,$5,$6) RETURNING id",
                                {submission_id, c_.actor.who, c_.actor.token_id, std::string(to_string(kind)), body, now});
      Comment c{rows.at(0).i64(0), submission_id, c_.actor.who, c_.actor.token_id, kind, body, now};
      c_.audit(now, kind == ReviewKind::comment ? "pull.comment" : "pull.review",
               fmt::format("submission/{}", submission_id), {{"comment", c.id}, {"kind", to_string(kind)}});
      return c;
    });
  });
}

StateResult<std::vector<Comment>> SqlPulls::comments(std::int64_t submission_id) {
  return c_.guarded([&] {
    (void)c_.load_pull(submission_id);
    std::vector<Comment> out;
    for (const auto& r : c_.db().query("SELECT id, submission_id, who, token_id, kind, body, at FROM comments "
                                       "WHERE submission_id=$1 ORDER BY id",
                                       {submission_id}))
      out.push_back({r.i64(0), r.i64(1), r.text(2), r.text(3),
                     parse_review_kind(r.text(4)).value_or(ReviewKind::comment), r.text(5), r.i64(6)});
    return out;
  });
}

}  // namespace kzoo::store::sql
