// The rules of "Who can do what", as a table: every action for every kind of
// principal. The server's route matrix (server/access_matrix_test.cpp) checks
// that the endpoints ask this function; this checks its answers.
#include "kzoo/access/policy.hpp"

#include <map>

#include <gtest/gtest.h>

namespace kzoo::access {
namespace {

using store::Role;
using store::TokenKind;

// 'A' allowed, 'H' allowed but held, '1' 401, '3' 403.
struct Row {
  Action action;
  const char* expect;  // anonymous, maintainer, maint-agent, member, member-agent, outsider, runner
};

std::optional<Principal> who(int i) {
  switch (i) {
    case 0: return std::nullopt;
    case 1: return Principal{"mia", Role::maintainer, TokenKind::person, "a", ""};
    case 2: return Principal{"mia", Role::maintainer, TokenKind::agent, "b", "bot"};
    case 3: return Principal{"ann", Role::member, TokenKind::person, "c", ""};
    case 4: return Principal{"ann", Role::member, TokenKind::agent, "d", "bot"};
    case 5: return Principal{"ola", Role::outsider, TokenKind::person, "e", ""};
    default: return Principal{"mia", Role::maintainer, TokenKind::runner, "f", "gpu-1"};
  }
}

char code(const Decision& d) {
  if (d.status == 0) return d.held ? 'H' : 'A';
  return d.status == 401 ? '1' : '3';
}

TEST(Policy, EveryActionForEveryPrincipal) {
  const Row rows[] = {
      {Action::read, "AAAAAAA"},
      {Action::submit, "1AAAAH3"},
      {Action::start_route, "1AAAAA3"},
      {Action::open_pull_request, "1AAAAA3"},
      {Action::comment, "1AAAAA3"},
      {Action::open_issue, "1AAAAA3"},
      {Action::close_issue, "1AA3333"},  // with no author known, maintainers only
      {Action::push_main, "1AA3333"},
      {Action::measure_baselines, "1AA3333"},
      {Action::read_held, "1AA3333"},
      {Action::read_audit, "1AA3333"},
      {Action::move_checks_tag, "1A33333"},
      {Action::change_project_files, "1A33333"},  // by a push to main: a maintainer's own token only
      {Action::set_board_status, "1A33333"},
      {Action::release_job, "1A33333"},
      {Action::runner_work, "133333A"},
      {Action::cancel_batch, "1AA3333"},  // with no owner known, maintainers only
  };
  for (const auto& r : rows)
    for (int i = 0; i < 7; ++i) {
      auto d = authorize(who(i), r.action);
      EXPECT_EQ(code(d), r.expect[i]) << to_string(r.action) << " by principal " << i << ": " << d.reason;
      if (!d.allowed()) {
        EXPECT_FALSE(d.reason.empty());
      }
    }
}

TEST(Policy, RoutesBelongToTheirOwnerWithTheirAgentsAndToMaintainers) {
  Context ann_route{false, "ann"};
  for (Action a : {Action::push_route, Action::merge_into_route}) {
    EXPECT_EQ(code(authorize(who(3), a, ann_route)), 'A');
    EXPECT_EQ(code(authorize(who(4), a, ann_route)), 'A');  // her agent
    EXPECT_EQ(code(authorize(who(1), a, ann_route)), 'A');  // a maintainer
    EXPECT_EQ(code(authorize(who(2), a, ann_route)), 'A');
    EXPECT_EQ(code(authorize(who(5), a, ann_route)), '3');  // someone else opens a pull request
    EXPECT_EQ(code(authorize(who(6), a, ann_route)), '3');
    EXPECT_EQ(code(authorize(std::nullopt, a, ann_route)), '1');
  }
  Context ola_route{false, "ola"};
  EXPECT_EQ(code(authorize(who(5), Action::push_route, ola_route)), 'H');  // an outsider's own route: held
  EXPECT_EQ(code(authorize(who(3), Action::push_route, ola_route)), '3');
  auto refused = authorize(who(5), Action::push_route, ann_route);
  EXPECT_NE(refused.reason.find("pull request"), std::string::npos) << refused.reason;
}

TEST(Policy, ABatchJobIsCancelledByItsOwnerWithTheirAgentsOrByAMaintainer) {
  Context anns{};
  anns.job_owner = "ann";
  EXPECT_EQ(code(authorize(who(3), Action::cancel_batch, anns)), 'A');
  EXPECT_EQ(code(authorize(who(4), Action::cancel_batch, anns)), 'A');  // her agent
  EXPECT_EQ(code(authorize(who(1), Action::cancel_batch, anns)), 'A');  // a maintainer, any job
  EXPECT_EQ(code(authorize(who(6), Action::cancel_batch, anns)), '3');  // a runner token
  auto stranger = authorize(who(5), Action::cancel_batch, anns);
  EXPECT_EQ(code(stranger), '3');
  EXPECT_NE(stranger.reason.find("belongs to ann"), std::string::npos) << stranger.reason;
}

TEST(Policy, AnIssueIsClosedByItsAuthorWithTheirAgentsOrByAMaintainer) {
  Context anns{};
  anns.issue_author = "ann";
  EXPECT_EQ(code(authorize(who(3), Action::close_issue, anns)), 'A');
  EXPECT_EQ(code(authorize(who(4), Action::close_issue, anns)), 'A');  // her agent
  EXPECT_EQ(code(authorize(who(1), Action::close_issue, anns)), 'A');  // a maintainer, any issue
  EXPECT_EQ(code(authorize(who(2), Action::close_issue, anns)), 'A');
  EXPECT_EQ(code(authorize(who(6), Action::close_issue, anns)), '3');  // a runner token writes nothing
  EXPECT_EQ(code(authorize(std::nullopt, Action::close_issue, anns)), '1');
  auto other = authorize(who(5), Action::close_issue, anns);
  EXPECT_EQ(code(other), '3');
  EXPECT_NE(other.reason.find("opened by ann"), std::string::npos) << other.reason;
  EXPECT_NE(other.reason.find("comment"), std::string::npos) << other.reason;
  Context olas{};
  olas.issue_author = "ola";
  EXPECT_EQ(code(authorize(who(5), Action::close_issue, olas)), 'A');  // an outsider closes their own
}

TEST(Policy, ReadsNeedATokenOnlyWhenTheServerSaysSo) {
  EXPECT_EQ(code(authorize(std::nullopt, Action::read, Context{true, {}})), '1');
  for (int i = 1; i < 7; ++i) EXPECT_EQ(code(authorize(who(i), Action::read, Context{true, {}})), 'A');
}

}  // namespace
}  // namespace kzoo::access
