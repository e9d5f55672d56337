// Issues and their comments (issues.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {
namespace {

constexpr const char* kIssueCols =
    "i.id, i.title, i.body, i.author, i.token_id, i.state, i.created_at, i.updated_at, i.closed_by, i.closed_at, "
    "i.close_reason, (SELECT count(*) FROM issue_comments c WHERE c.issue_id = i.id)";

Issue issue_of(const Row& r) {
  Issue i;
  i.id = r.i64(0);
  i.title = r.text(1);
  i.body = r.text(2);
  i.author = r.text(3);
  i.token_id = r.text(4);
  i.state = parse_issue_state(r.text(5)).value_or(IssueState::open);
  i.created_at = r.i64(6);
  i.updated_at = r.i64(7);
  i.closed_by = r.text(8);
  i.closed_at = r.opt(9);
  i.close_reason = r.text(10);
  i.comments = r.i64(11);
  return i;
}

Issue load_issue(Core& c, std::int64_t id, bool lock = false) {
  // The count is a subquery, so the row lock (FOR UPDATE) applies to the issue alone.
  auto rows = c.db().query(fmt::format("SELECT {} FROM issues i WHERE i.id=$1{}", kIssueCols,
                                       lock ? c.db().lock_rows() : ""),
                           {id});
  if (rows.empty())
    refuse(StateError::not_found, fmt::format("there is no issue {} (GET /api/issues or `kzoo issue list` lists them)", id));
  return issue_of(rows.front());
}

void check_size(std::string_view what, const std::string& s, std::size_t min, std::size_t max) {
  if (s.size() < min || s.size() > max)
    refuse(StateError::invalid, fmt::format("{} is {}-{} bytes; this one is {}", what, min, max, s.size()));
}

}  // namespace

StateResult<Issue> SqlIssues::open_issue(const std::string& title, const std::string& body) {
  return c_.guarded([&] {
    check_size("an issue's title", title, 1, kIssueTitleMax);
    check_size("an issue's body", body, 0, kIssueBodyMax);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      auto rows = c_.db().query("INSERT INTO issues(title, body, author, token_id, created_at, updated_at) "
                                "VALUES ($1,$2,$3,$4,$5,$5) RETURNING id",
                                {title, body, c_.actor.who, c_.actor.token_id, now});
      const std::int64_t id = rows.at(0).i64(0);
      c_.audit(now, "issue.open", fmt::format("issue/{}", id), {{"title", title}});
      return load_issue(c_, id);
    });
  });
}

StateResult<Issue> SqlIssues::get_issue(std::int64_t id) {
  return c_.guarded([&] { return load_issue(c_, id); });
}

StateResult<std::vector<Issue>> SqlIssues::list_issues(const IssueFilter& f) {
  return c_.guarded([&] {
    if (f.limit < 1 || f.limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    std::vector<Issue> out;
    for (const auto& r : c_.db().query(
             fmt::format("SELECT {} FROM issues i WHERE (CAST($1 AS TEXT) IS NULL OR i.state = $1) "
                         "AND (CAST($2 AS TEXT) IS NULL OR i.author = $2) "
                         "AND (CAST($3 AS BIGINT) IS NULL OR i.id < $3) ORDER BY i.id DESC LIMIT $4",
                         kIssueCols),
             {f.state ? Value(std::string(to_string(*f.state))) : Value(nullptr),
              f.author ? Value(*f.author) : Value(nullptr), f.before ? Value(*f.before) : Value(nullptr),
              std::int64_t{f.limit}}))
      out.push_back(issue_of(r));
    return out;
  });
}

StateResult<IssueComment> SqlIssues::comment_issue(std::int64_t id, const std::string& body) {
  return c_.guarded([&] {
    check_size("a comment", body, 1, kIssueCommentMax);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      (void)load_issue(c_, id, true);
      auto rows = c_.db().query("INSERT INTO issue_comments(issue_id, who, token_id, body, at) "
                                "VALUES ($1,$2,$3,$4,$5) RETURNING id",
                                {id, c_.actor.who, c_.actor.token_id, body, now});
      c_.db().exec("UPDATE issues SET updated_at=$1 WHERE id=$2", {now, id});
      IssueComment c{rows.at(0).i64(0), id, c_.actor.who, c_.actor.token_id, body, now};
      c_.audit(now, "issue.comment", fmt::format("issue/{}", id), {{"comment", c.id}});
      return c;
    });
  });
}

StateResult<std::vector<IssueComment>> SqlIssues::issue_comments(std::int64_t id) {
  return c_.guarded([&] {
    (void)load_issue(c_, id);
    std::vector<IssueComment> out;
    for (const auto& r : c_.db().query("SELECT id, issue_id, who, token_id, body, at FROM issue_comments "
                                       "WHERE issue_id=$1 ORDER BY id",
                                       {id}))
      out.push_back({r.i64(0), r.i64(1), r.text(2), r.text(3), r.text(4), r.i64(5)});
    return out;
  });
}

StateResult<Issue> SqlIssues::close_issue(std::int64_t id, const std::string& why) {
  return c_.guarded([&] {
    check_size("a close reason", why, 0, kIssueCloseReasonMax);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Issue i = load_issue(c_, id, true);
      if (i.state == IssueState::closed)
        refuse(StateError::wrong_state, fmt::format("issue {} is closed already (by {})", id, i.closed_by));
      c_.db().exec("UPDATE issues SET state='closed', closed_by=$1, closed_at=$2, close_reason=$3, updated_at=$2 "
                   "WHERE id=$4",
                   {c_.actor.who, now, why, id});
      c_.audit(now, "issue.close", fmt::format("issue/{}", id), {{"why", why}});
      return load_issue(c_, id);
    });
  });
}

}  // namespace kzoo::store::sql
