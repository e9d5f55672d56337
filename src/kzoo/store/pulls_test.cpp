// Pull requests and comments (pulls.hpp), on SQLite and on PostgreSQL: a
// submission to someone else's route waits held (PullRequest) until merged or
// closed; comments and reviews; the audit trail of each step.
#include <gtest/gtest.h>

#include <algorithm>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

const std::string kPullSha(64, 'c');

class PullsTest : public StateTest {
 protected:
  void SetUp() override {
    StateTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(db->ensure_route("ann-fast", "ann"));
  }
  // A submission by `who` to route `route`, opened as a pull request.
  std::int64_t pull(const std::string& who, const std::string& route = "ann-fast") {
    NewSubmission n{"cuda/softmax", who, "fused", "/u/x.tar.gz", kPullSha};
    n.route = route;
    auto s = db->create_submission(n);
    EXPECT_TRUE(s) << s.error().message;
    db->set_actor({who, ""});
    auto j = db->open_pull(s->id, 3);
    EXPECT_TRUE(j) << j.error().message;
    return s->id;
  }
};

KZOO_ON_BOTH_ENGINES(PullsTest);

TEST_P(PullsTest, APullRequestWaitsForItsRoutesOwnerAndIsNeverClaimedBefore) {
  std::int64_t id = pull("bob");
  auto p = db->get_pull(id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->route, "ann-fast");
  EXPECT_EQ(p->author, "bob");
  EXPECT_EQ(p->state, PullState::open);
  auto jobs = db->jobs_of(id);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE((*jobs)[0].held);
  EXPECT_EQ((*jobs)[0].hold_reason, kHeldPullRequest);
  EXPECT_FALSE(*db->claim_job("w1", 60));
  // A maintainer's release is not a merge: the route's owner decides.
  auto rel = db->release_job((*jobs)[0].id);
  ASSERT_FALSE(rel);
  EXPECT_EQ(rel.error().kind, StateError::wrong_state);
  EXPECT_NE(rel.error().message.find("kzoo merge"), std::string::npos) << rel.error().message;
  auto held = db->held_jobs();
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].reason, kHeldPullRequest);
  EXPECT_EQ((*held)[0].route, "ann-fast");
}

TEST_P(PullsTest, MergedItIsClaimedAndGradedLikeAnyOther) {
  std::int64_t id = pull("bob");
  db->set_actor({"ann", ""});
  auto m = db->decide_pull(id, true, false, "");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->state, PullState::merged);
  EXPECT_EQ(m->decided_by, "ann");
  EXPECT_EQ(m->decided_at, now);
  auto j = db->claim_job("w1", 60);
  ASSERT_TRUE(j && *j);
  EXPECT_EQ((*j)->submission_id, id);
  EXPECT_EQ((*j)->released_by, "ann");
  auto again = db->decide_pull(id, false, false, "");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, StateError::wrong_state);
  EXPECT_NE(again.error().message.find("merged already (by ann)"), std::string::npos) << again.error().message;
}

TEST_P(PullsTest, AnOutsidersPullRequestMergedByTheOwnerWaitsOnForAMaintainer) {
  std::int64_t id = pull("ola");
  db->set_actor({"ann", ""});
  ASSERT_TRUE(db->decide_pull(id, true, /*then_admin=*/true, ""));
  auto jobs = db->jobs_of(id);
  EXPECT_TRUE((*jobs)[0].held);
  EXPECT_EQ((*jobs)[0].hold_reason, kHeldAdmin);
  EXPECT_FALSE(*db->claim_job("w1", 60));
  db->set_actor({"mia", ""});
  ASSERT_TRUE(db->release_job((*jobs)[0].id));
  EXPECT_TRUE(*db->claim_job("w1", 60));
}

TEST_P(PullsTest, ClosedItIsCancelledWithItsReason) {
  std::int64_t id = pull("bob");
  db->set_actor({"ann", ""});
  auto c = db->decide_pull(id, false, false, "not on this route: open your own");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->state, PullState::closed);
  auto s = db->get_submission(id);
  EXPECT_EQ(s->state, State::cancelled);
  EXPECT_EQ(s->reasons, std::vector<std::string>{"not on this route: open your own"});
  EXPECT_EQ((*db->jobs_of(id))[0].state, State::cancelled);
  EXPECT_FALSE(*db->claim_job("w1", 60));
}

TEST_P(PullsTest, OnlyAReceivedSubmissionCanBeOpenedAndOneWithoutARouteIsAimedAtMain) {
  auto s = db->create_submission({"cuda/softmax", "bob", "", "/u/x.tar.gz", kSha});
  ASSERT_TRUE(db->open_pull(s->id, 3));
  EXPECT_EQ(db->get_pull(s->id)->route, "");  // main: its maintainers merge it
  EXPECT_EQ(db->list_pulls(std::string(""), PullState::open)->size(), 1u);
  std::int64_t id = pull("bob");
  auto twice = db->open_pull(id, 3);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().kind, StateError::wrong_state);
  EXPECT_EQ(db->get_pull(9999).error().kind, StateError::not_found);
  EXPECT_EQ(db->decide_pull(9999, true, false, "").error().kind, StateError::not_found);
}

TEST_P(PullsTest, CommentsAndReviewsAreKeptInOrderOnOpenAndDecidedPullRequests) {
  std::int64_t id = pull("bob");
  db->set_actor({"ann", "00000000000000a1"});
  ASSERT_TRUE(db->add_comment(id, ReviewKind::request_changes, "keep the fp32 accumulator"));
  db->set_actor({"bob", ""});
  ASSERT_TRUE(db->add_comment(id, ReviewKind::comment, "done"));
  db->set_actor({"ann", "00000000000000a1"});
  ASSERT_TRUE(db->decide_pull(id, true, false, ""));
  ASSERT_TRUE(db->add_comment(id, ReviewKind::approve, "merged, thanks"));
  auto cs = db->comments(id);
  ASSERT_TRUE(cs);
  ASSERT_EQ(cs->size(), 3u);
  EXPECT_EQ((*cs)[0].kind, ReviewKind::request_changes);
  EXPECT_EQ((*cs)[0].token_id, "00000000000000a1");
  EXPECT_EQ((*cs)[1].who, "bob");
  EXPECT_EQ((*cs)[2].body, "merged, thanks");
  EXPECT_EQ(db->add_comment(id, ReviewKind::comment, "").error().kind, StateError::invalid);
  EXPECT_EQ(db->add_comment(id, ReviewKind::comment, std::string(10001, 'x')).error().kind, StateError::invalid);
  EXPECT_EQ(db->add_comment(9999, ReviewKind::comment, "x").error().kind, StateError::not_found);
}

TEST_P(PullsTest, ListedNewestFirstByRouteAndState) {
  ASSERT_TRUE(db->ensure_route("cy-alt", "cy"));
  std::int64_t a = pull("bob"), b = pull("ola"), c = pull("ann", "cy-alt");
  db->set_actor({"ann", ""});
  ASSERT_TRUE(db->decide_pull(a, false, false, ""));
  auto all = db->list_pulls(std::nullopt, std::nullopt);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].submission_id, c);
  auto open_ann = db->list_pulls(std::string("ann-fast"), PullState::open);
  ASSERT_EQ(open_ann->size(), 1u);
  EXPECT_EQ((*open_ann)[0].submission_id, b);
  EXPECT_EQ(db->list_pulls(std::nullopt, std::nullopt, 0).error().kind, StateError::invalid);
}

TEST_P(PullsTest, EveryStepIsAudited) {
  std::int64_t a = pull("bob"), b = pull("ola");
  db->set_actor({"ann", ""});
  ASSERT_TRUE(db->add_comment(a, ReviewKind::approve, "yes"));
  ASSERT_TRUE(db->add_comment(a, ReviewKind::comment, "and thanks"));
  ASSERT_TRUE(db->decide_pull(a, true, false, ""));
  ASSERT_TRUE(db->decide_pull(b, false, false, "no"));
  auto seen = actions();
  for (const char* want : {"bob pull.open", "ola pull.open", "ann pull.review", "ann pull.comment", "ann pull.merge",
                           "ann pull.close"})
    EXPECT_NE(std::find(seen.begin(), seen.end(), want), seen.end()) << want << " not in " << ::testing::PrintToString(seen);
}

}  // namespace
}  // namespace kzoo::store
