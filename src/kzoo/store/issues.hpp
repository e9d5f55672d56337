// Issues (seed: "Anyone signed in can open issues"): a title, a body and a
// thread of comments, open until their author or a maintainer closes them.
// The records and the interface that keeps them (IssueStore); access/ decides
// who may do what, the server checks the texts' encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

enum class IssueState { open, closed };
std::string_view to_string(IssueState s);
std::optional<IssueState> parse_issue_state(std::string_view s);

// Bounds kept by the store (and by the schema's CHECKs under it).
inline constexpr std::size_t kIssueTitleMax = 200;
inline constexpr std::size_t kIssueBodyMax = 20000;
inline constexpr std::size_t kIssueCommentMax = 10000;
inline constexpr std::size_t kIssueCloseReasonMax = 1000;

struct Issue {
  std::int64_t id = 0;
  std::string title;   // 1-200 bytes
  std::string body;    // 0-20000 bytes
  std::string author;  // the user (an agent's issue is its person's)
  std::string token_id;
  IssueState state = IssueState::open;
  UnixMs created_at = 0;
  UnixMs updated_at = 0;   // the last comment or state change
  std::string closed_by;   // empty while open
  std::optional<UnixMs> closed_at;
  std::string close_reason;
  std::int64_t comments = 0;
};

struct IssueComment {
  std::int64_t id = 0;
  std::int64_t issue_id = 0;
  std::string who;
  std::string token_id;
  std::string body;  // 1-10000 bytes
  UnixMs at = 0;
};

struct IssueFilter {
  std::optional<IssueState> state;    // none: both
  std::optional<std::string> author;
  std::optional<std::int64_t> before;  // ids below this one (the next page)
  int limit = 50;                      // 1-1000
};

class IssueStore {
 public:
  virtual ~IssueStore() = default;
  // A new open issue by the current actor.
  virtual StateResult<Issue> open_issue(const std::string& title, const std::string& body) = 0;
  virtual StateResult<Issue> get_issue(std::int64_t id) = 0;
  // Newest first.
  virtual StateResult<std::vector<Issue>> list_issues(const IssueFilter& f) = 0;
  // A comment by the current actor, on an open or a closed issue.
  virtual StateResult<IssueComment> comment_issue(std::int64_t id, const std::string& body) = 0;
  // Oldest first.
  virtual StateResult<std::vector<IssueComment>> issue_comments(std::int64_t id) = 0;
  // By the current actor (access/ has checked they may); wrong_state when closed already.
  virtual StateResult<Issue> close_issue(std::int64_t id, const std::string& why) = 0;
};

}  // namespace kzoo::store
