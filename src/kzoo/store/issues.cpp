#include "kzoo/store/issues.hpp"

namespace kzoo::store {

std::string_view to_string(IssueState s) { return s == IssueState::closed ? "closed" : "open"; }

std::optional<IssueState> parse_issue_state(std::string_view s) {
  if (s == "open") return IssueState::open;
  if (s == "closed") return IssueState::closed;
  return std::nullopt;
}

}  // namespace kzoo::store
