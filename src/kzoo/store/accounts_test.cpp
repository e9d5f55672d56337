// Users and tokens (accounts.hpp), on SQLite and on PostgreSQL: one role per
// user, runner tokens for maintainers only, a revoked token stays listed,
// and what a token used in a window of time.
#include <gtest/gtest.h>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class AccountsTest : public StateTest {};
KZOO_ON_BOTH_ENGINES(AccountsTest);

TEST_P(AccountsTest, UsersHaveOneRoleAndAValidUniqueName) {
  ASSERT_TRUE(db->add_user("mia", Role::maintainer));
  ASSERT_TRUE(db->add_user("ann", Role::member));
  auto dup = db->add_user("ann", Role::maintainer);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().kind, StateError::wrong_state);
  for (std::string bad : {std::string(), std::string("-x"), std::string("a b"), std::string("a/b"), std::string(65, 'a'), std::string("é")}) {
    auto r = db->add_user(bad, Role::member);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind, StateError::invalid);
  }
  auto all = db->list_users();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "ann");
  EXPECT_EQ((*all)[1].role, Role::maintainer);
  EXPECT_EQ(db->get_user("nobody").error().kind, StateError::not_found);
}

TEST_P(AccountsTest, TokensBelongToAUserAndRunnerTokensOnlyToMaintainers) {
  ASSERT_TRUE(db->add_user("mia", Role::maintainer));
  ASSERT_TRUE(db->add_user("ann", Role::member));
  EXPECT_EQ(db->add_token(token("00000000000000a1", "ghost")).error().kind, StateError::not_found);
  auto runner = db->add_token(token("00000000000000a2", "ann", TokenKind::runner, "gpu-1"));
  ASSERT_FALSE(runner);
  EXPECT_EQ(runner.error().kind, StateError::invalid);
  EXPECT_EQ(db->add_token(token("00000000000000a3", "ann", TokenKind::agent, "")).error().kind, StateError::invalid);
  EXPECT_EQ(db->add_token(token("00000000000000a4", "ann", TokenKind::person, "x")).error().kind, StateError::invalid);
  EXPECT_EQ(db->add_token(token("NOTHEX0000000000", "ann")).error().kind, StateError::invalid);

  ASSERT_TRUE(db->add_token(token("00000000000000b1", "mia", TokenKind::runner, "gpu-1")));
  auto agent = db->add_token(token("00000000000000b2", "ann", TokenKind::agent, "claude"));
  ASSERT_TRUE(agent) << agent.error().message;
  EXPECT_EQ(agent->role, Role::member);
  EXPECT_EQ(agent->hash, std::string(32, 'h'));
  auto got = db->get_token("00000000000000b1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->kind, TokenKind::runner);
  EXPECT_EQ(got->role, Role::maintainer);
  EXPECT_EQ(db->list_tokens(std::string("ann"))->size(), 1u);
  EXPECT_EQ(db->list_tokens(std::nullopt)->size(), 2u);
}

TEST_P(AccountsTest, ARevokedTokenStaysListedAndCannotBeRevokedTwice) {
  ASSERT_TRUE(db->add_user("ann", Role::member));
  ASSERT_TRUE(db->add_token(token("00000000000000c1", "ann")));
  now += 5;
  auto r = db->revoke_token("00000000000000c1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->revoked_at, now);
  EXPECT_EQ(db->revoke_token("00000000000000c1").error().kind, StateError::wrong_state);
  EXPECT_EQ(db->revoke_token("00000000000000ff").error().kind, StateError::not_found);
  EXPECT_TRUE(db->get_token("00000000000000c1")->revoked_at);
}

TEST_P(AccountsTest, UsageCountsATokensSubmissionsBytesAndActiveJobsInTheWindow) {
  submit_with("00000000000000e1", 100);
  now += 1000;
  auto second = submit_with("00000000000000e1", 50);
  submit_with("00000000000000e2", 7);  // another token
  auto u = db->token_usage("00000000000000e1", now - 10'000);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->submissions, 2);
  EXPECT_EQ(u->upload_bytes, 150);
  EXPECT_EQ(u->oldest_submission, now - 1000);
  EXPECT_EQ(u->active_jobs, 2);
  auto late = db->token_usage("00000000000000e1", now - 500);  // the first has left the window
  EXPECT_EQ(late->submissions, 1);
  EXPECT_EQ(late->upload_bytes, 50);
  EXPECT_EQ(late->active_jobs, 2);  // active jobs count whenever submitted
  auto s = db->get_job(second);
  ASSERT_TRUE(db->cancel(s->submission_id, "test"));
  EXPECT_EQ(db->token_usage("00000000000000e1", now)->active_jobs, 1);
}

}  // namespace
}  // namespace kzoo::store
