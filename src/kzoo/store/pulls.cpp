#include "kzoo/store/pulls.hpp"

namespace kzoo::store {

std::string_view to_string(PullState s) {
  switch (s) {
    case PullState::open: return "open";
    case PullState::merged: return "merged";
    case PullState::closed: return "closed";
  }
  return "open";
}

std::optional<PullState> parse_pull_state(std::string_view s) {
  for (PullState p : {PullState::open, PullState::merged, PullState::closed})
    if (to_string(p) == s) return p;
  return std::nullopt;
}

std::string_view to_string(ReviewKind k) {
  switch (k) {
    case ReviewKind::comment: return "comment";
    case ReviewKind::approve: return "approve";
    case ReviewKind::request_changes: return "request_changes";
  }
  return "comment";
}

std::optional<ReviewKind> parse_review_kind(std::string_view s) {
  for (ReviewKind k : {ReviewKind::comment, ReviewKind::approve, ReviewKind::request_changes})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

}  // namespace kzoo::store
