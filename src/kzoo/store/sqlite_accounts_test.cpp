// Users, tokens, held jobs, per-token usage and the audit trail on a real
// SQLite file.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include "kzoo/store/sqlite_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::SqliteFixture;

const std::string kSha(64, 'b');

class AccountsTest : public SqliteFixture {
 protected:
  Token token(const std::string& id, const std::string& user, TokenKind kind = TokenKind::person,
              const std::string& label = "") {
    Token t;
    t.id = id;
    t.user = user;
    t.kind = kind;
    t.label = label;
    t.hash = std::string(32, 'h');
    return t;
  }
  std::int64_t submit(const std::string& token_id, std::int64_t bytes, bool held = false) {
    auto s = db->create_submission({"cuda/softmax", "ann", "", "/u/x.tar.gz", kSha, token_id, bytes});
    EXPECT_TRUE(s) << s.error().message;
    auto j = db->enqueue(s->id, 3, held);
    EXPECT_TRUE(j) << j.error().message;
    return j->id;
  }
};

TEST_F(AccountsTest, UsersHaveOneRoleAndAValidUniqueName) {
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

TEST_F(AccountsTest, TokensBelongToAUserAndRunnerTokensOnlyToMaintainers) {
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

TEST_F(AccountsTest, ARevokedTokenStaysListedAndCannotBeRevokedTwice) {
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

TEST_F(AccountsTest, AHeldJobIsNeverClaimedUntilReleased) {
  auto held = submit("", 10, true);
  auto none = db->claim_job("w1", 60);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto list = db->held_jobs();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].job_id, held);

  auto free_job = submit("", 10, false);
  auto c = db->claim_job("w1", 60);
  ASSERT_TRUE(c && *c);
  EXPECT_EQ((**c).id, free_job);  // the later, unheld job goes first

  db->set_actor({"mia", "00000000000000d1"});
  auto rel = db->release_job(held);
  ASSERT_TRUE(rel) << rel.error().message;
  EXPECT_FALSE(rel->held);
  EXPECT_EQ(rel->released_by, "mia");
  EXPECT_EQ(db->release_job(held).error().kind, StateError::wrong_state);
  EXPECT_EQ(db->release_job(free_job).error().kind, StateError::wrong_state);
  EXPECT_EQ(db->release_job(999).error().kind, StateError::not_found);
  EXPECT_TRUE(db->held_jobs()->empty());
  auto c2 = db->claim_job("w2", 60);
  ASSERT_TRUE(c2 && *c2);
  EXPECT_EQ((**c2).id, held);
}

TEST_F(AccountsTest, UsageCountsATokensSubmissionsBytesAndActiveJobsInTheWindow) {
  submit("00000000000000e1", 100);
  now += 1000;
  auto second = submit("00000000000000e1", 50);
  submit("00000000000000e2", 7);  // another token
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

TEST_F(AccountsTest, EveryTransitionIsAuditedWithItsActorAndTheTrailIsAppendOnly) {
  db->set_actor({"local:root", ""});
  ASSERT_TRUE(db->add_user("ann", Role::outsider));
  ASSERT_TRUE(db->add_token(token("00000000000000f1", "ann")));
  db->set_actor({"ann", "00000000000000f1"});
  auto job = submit("00000000000000f1", 10, true);
  db->set_actor({"mia", "00000000000000f2"});
  ASSERT_TRUE(db->release_job(job));
  db->set_actor({"mia", "00000000000000f3"});
  auto c = db->claim_job("runner-1", 60);
  ASSERT_TRUE(c && *c);
  ASSERT_TRUE(db->complete(job, "runner-1", {Outcome::rejected, nullptr, nullptr, {"slow"}, ""}));
  ASSERT_TRUE(db->revoke_token("00000000000000f1"));

  auto log = db->audit_log({});
  ASSERT_TRUE(log);
  std::vector<std::string> actions;
  for (auto it = log->rbegin(); it != log->rend(); ++it) actions.push_back(it->who + " " + it->action + " " + it->target);
  EXPECT_EQ(actions, (std::vector<std::string>{
                         "local:root user.add user/ann", "local:root token.issue token/00000000000000f1",
                         "ann submission.create submission/1", "ann job.hold job/1", "mia job.release job/1",
                         "mia job.claim job/1", "mia job.complete job/1", "mia token.revoke token/00000000000000f1"}));
  EXPECT_EQ(log->front().token_id, "00000000000000f3");
  EXPECT_EQ((*log)[1].detail["outcome"], "rejected");
  auto mine = db->audit_log({INT64_MAX, 100, std::string("ann")});
  EXPECT_EQ(mine->size(), 2u);

  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  EXPECT_THROW(raw.exec("UPDATE audit SET who='nobody'"), SQLite::Exception);
  EXPECT_THROW(raw.exec("DELETE FROM audit"), SQLite::Exception);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM audit WHERE who='nobody'").getInt(), 0);
  EXPECT_EQ(db->audit_log({})->size(), 8u);
}

TEST_F(AccountsTest, ARefusedTransitionWritesNoAuditRow) {
  auto before = db->audit_log({})->size();
  EXPECT_FALSE(db->release_job(42));
  EXPECT_FALSE(db->add_user("a b", Role::member));
  EXPECT_EQ(db->audit_log({})->size(), before);
}

}  // namespace
}  // namespace kzoo::store
