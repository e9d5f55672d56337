// Pull requests: how someone contributes to a route they do not own (seed:
// "Others contribute to it by pull request"). In kzoo a pull request is a
// submission aimed at such a route whose job waits, held with the reason
// PullRequest, until the route's owner (or their agent, or a maintainer)
// merges it -- then it is graded like any other and lands on the route if the
// checks accept it -- or someone closes it. Anyone signed in may comment on it
// and review it. The records and the interface that keeps them (PullStore);
// access/ decides who may do what.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

enum class PullState { open, merged, closed };
std::string_view to_string(PullState s);
std::optional<PullState> parse_pull_state(std::string_view s);

struct Pull {
  std::int64_t submission_id = 0;  // a pull request is named by its submission
  std::string route;               // the route it is aimed at (its owner merges); empty: main (maintainers merge)
  std::string author;              // the submitter
  PullState state = PullState::open;
  UnixMs created_at = 0;
  std::string decided_by;  // who merged or closed it; empty while open
  std::optional<UnixMs> decided_at;
};

// A review is a comment with a stance.
enum class ReviewKind { comment, approve, request_changes };
std::string_view to_string(ReviewKind k);
std::optional<ReviewKind> parse_review_kind(std::string_view s);

struct Comment {
  std::int64_t id = 0;
  std::int64_t submission_id = 0;
  std::string who;
  std::string token_id;
  ReviewKind kind = ReviewKind::comment;
  std::string body;  // 1-10000 bytes of UTF-8 (the server checks the encoding)
  UnixMs at = 0;
};

// Why a queued job waits: for a maintainer (an outsider's job) or for a
// route owner's merge (a pull request).
inline constexpr std::string_view kHeldAdmin = "JobHeldAdmin";
inline constexpr std::string_view kHeldPullRequest = "PullRequest";

class PullStore {
 public:
  virtual ~PullStore() = default;

  // Queues received submission `submission_id` as a pull request to its route
  // (none: main): its job held (kHeldPullRequest) until decide_pull, and for
  // GPU runners that have what it `needs`.
  virtual StateResult<Job> open_pull(std::int64_t submission_id, int max_attempts = 3, JobNeeds needs = {}) = 0;
  // merge: the job becomes claimable, or, when `then_admin` (an outsider's
  // pull request merged by someone who cannot release their jobs), waits on
  // for a maintainer as kHeldAdmin. close: the submission is cancelled with
  // `why`. Only an open pull request; wrong_state otherwise.
  virtual StateResult<Pull> decide_pull(std::int64_t submission_id, bool merge, bool then_admin,
                                        const std::string& why) = 0;
  virtual StateResult<Pull> get_pull(std::int64_t submission_id) = 0;
  // Newest first; route and state narrow it.
  virtual StateResult<std::vector<Pull>> list_pulls(const std::optional<std::string>& route,
                                                    const std::optional<PullState>& state, int limit = 100) = 0;
  // A comment or review by the current actor on an existing pull request, open or not.
  virtual StateResult<Comment> add_comment(std::int64_t submission_id, ReviewKind kind, const std::string& body) = 0;
  // Oldest first.
  virtual StateResult<std::vector<Comment>> comments(std::int64_t submission_id) = 0;
};

}  // namespace kzoo::store
