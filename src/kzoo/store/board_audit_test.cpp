// Boards' status and the audit trail (board_audit.hpp), on SQLite and on
// PostgreSQL: every transition is written with its actor in its own
// transaction, a refused one leaves no row, and the trail is append-only.
#include <gtest/gtest.h>

#include <algorithm>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class BoardAuditTest : public StateTest {};
KZOO_ON_BOTH_ENGINES(BoardAuditTest);

TEST_P(BoardAuditTest, EveryTransitionIsAuditedWithItsActorAndTheTrailIsAppendOnly) {
  db->set_actor({"local:root", ""});
  ASSERT_TRUE(db->add_user("ann", Role::outsider));
  ASSERT_TRUE(db->add_token(token("00000000000000f1", "ann")));
  db->set_actor({"ann", "00000000000000f1"});
  auto job = submit_with("00000000000000f1", 10, true);
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

  auto raw_db = raw();
  ASSERT_TRUE(raw_db);
  EXPECT_THROW(raw_db->exec("UPDATE audit SET who='nobody'"), sql::EngineFailure);
  EXPECT_THROW(raw_db->exec("DELETE FROM audit"), sql::EngineFailure);
  EXPECT_EQ(raw_db->query("SELECT count(*) FROM audit WHERE who='nobody'").at(0).i64(0), 0);
  EXPECT_EQ(db->audit_log({})->size(), 8u);
}

TEST_P(BoardAuditTest, ARefusedTransitionWritesNoAuditRow) {
  auto before = db->audit_log({})->size();
  EXPECT_FALSE(db->release_job(42));
  EXPECT_FALSE(db->add_user("a b", Role::member));
  EXPECT_EQ(db->audit_log({})->size(), before);
}

TEST_P(BoardAuditTest, ABoardsStatusIsTheLastAMaintainerSetAndEachSettingIsAudited) {
  EXPECT_FALSE(*db->board_status(1));  // never set: the rules file's stands
  db->set_actor({"mia", "00000000000000m1"});
  ASSERT_TRUE(db->set_board_status(1, "saturated"));
  now += 1000;
  auto s = db->set_board_status(1, "flawed");
  ASSERT_TRUE(s) << s.error().message;
  auto got = db->board_status(1);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->status, "flawed");
  EXPECT_EQ((*got)->set_by, "mia");
  EXPECT_EQ((*got)->set_at, now);
  EXPECT_FALSE(*db->board_status(2));
  EXPECT_EQ(db->set_board_status(1, "quiet").error().kind, StateError::invalid);  // computed, never set
  EXPECT_EQ(db->set_board_status(0, "active").error().kind, StateError::invalid);
  auto seen = actions();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "mia board.status"), 2);
}

TEST_P(BoardAuditTest, AnAuditRowKeepsTheAddressTheChangeCameFrom) {
  db->set_actor({"ann", "00000000000000a1", "203.0.113.7"});
  auto s = submit();
  db->set_actor({"local:root", ""});
  ASSERT_TRUE(db->append_audit("repo.note", "kernel/x", {{"why", "test"}}));
  auto log = db->audit_log({});
  ASSERT_TRUE(log);
  ASSERT_EQ(log->size(), 2u);
  EXPECT_EQ((*log)[1].action, "submission.create");
  EXPECT_EQ((*log)[1].address, "203.0.113.7");
  EXPECT_EQ((*log)[0].address, "") << "a local change has no address";
}

}  // namespace
}  // namespace kzoo::store
