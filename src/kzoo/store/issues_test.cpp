// Issues and their comments (issues.hpp), on SQLite and on PostgreSQL: opened
// by anyone signed in, commented on while open or closed, closed once, listed
// newest first by page, counted against the token's hourly writing limit,
// and audited.
#include <gtest/gtest.h>

#include <algorithm>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class IssuesTest : public StateTest {
 protected:
  std::int64_t open(const std::string& who, const std::string& title, const std::string& token = "") {
    db->set_actor({who, token});
    auto i = db->open_issue(title, "what I saw, and how to see it again");
    EXPECT_TRUE(i) << i.error().message;
    return i ? i->id : 0;
  }
};

KZOO_ON_BOTH_ENGINES(IssuesTest);

TEST_P(IssuesTest, AnIssueIsOpenedByItsAuthorAndReadBack) {
  std::int64_t id = open("bob", "softmax's eager baseline is slower than torch.softmax", "00000000000000b1");
  auto i = db->get_issue(id);
  ASSERT_TRUE(i) << i.error().message;
  EXPECT_EQ(i->title, "softmax's eager baseline is slower than torch.softmax");
  EXPECT_EQ(i->body, "what I saw, and how to see it again");
  EXPECT_EQ(i->author, "bob");
  EXPECT_EQ(i->token_id, "00000000000000b1");
  EXPECT_EQ(i->state, IssueState::open);
  EXPECT_EQ(i->created_at, now);
  EXPECT_EQ(i->updated_at, now);
  EXPECT_EQ(i->comments, 0);
  EXPECT_TRUE(i->closed_by.empty());
  EXPECT_FALSE(i->closed_at);
  EXPECT_EQ(db->get_issue(9999).error().kind, StateError::not_found);
  EXPECT_NE(db->get_issue(9999).error().message.find("kzoo issue list"), std::string::npos);
}

TEST_P(IssuesTest, TitlesAndBodiesOutsideTheirBoundsAreRefusedAndNothingIsStored) {
  db->set_actor({"bob", ""});
  EXPECT_EQ(db->open_issue("", "body").error().kind, StateError::invalid);
  EXPECT_EQ(db->open_issue(std::string(kIssueTitleMax + 1, 't'), "").error().kind, StateError::invalid);
  auto big = db->open_issue("t", std::string(kIssueBodyMax + 1, 'b'));
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("0-20000 bytes; this one is 20001"), std::string::npos) << big.error().message;
  EXPECT_TRUE(db->open_issue(std::string(kIssueTitleMax, 't'), ""));  // an empty body is allowed
  EXPECT_EQ(db->list_issues({})->size(), 1u);
}

TEST_P(IssuesTest, CommentsAreKeptInOrderOnOpenAndClosedIssues) {
  std::int64_t id = open("bob", "fp8 tolerance too loose");
  now += 1000;
  db->set_actor({"ann", "00000000000000a1"});
  ASSERT_TRUE(db->comment_issue(id, "which shape?"));
  db->set_actor({"bob", ""});
  ASSERT_TRUE(db->comment_issue(id, "the second"));
  ASSERT_TRUE(db->close_issue(id, "fixed in the catalog"));
  now += 1000;
  db->set_actor({"ann", "00000000000000a1"});
  ASSERT_TRUE(db->comment_issue(id, "confirmed after the fix"));
  auto cs = db->issue_comments(id);
  ASSERT_TRUE(cs);
  ASSERT_EQ(cs->size(), 3u);
  EXPECT_EQ((*cs)[0].who, "ann");
  EXPECT_EQ((*cs)[0].token_id, "00000000000000a1");
  EXPECT_EQ((*cs)[1].body, "the second");
  EXPECT_EQ((*cs)[2].at, now);
  auto i = db->get_issue(id);
  EXPECT_EQ(i->comments, 3);
  EXPECT_EQ(i->updated_at, now);
  EXPECT_EQ(db->comment_issue(id, "").error().kind, StateError::invalid);
  EXPECT_EQ(db->comment_issue(id, std::string(kIssueCommentMax + 1, 'x')).error().kind, StateError::invalid);
  EXPECT_EQ(db->comment_issue(9999, "x").error().kind, StateError::not_found);
  EXPECT_EQ(db->issue_comments(9999).error().kind, StateError::not_found);
}

TEST_P(IssuesTest, AnIssueIsClosedOnceWithWhoAndWhy) {
  std::int64_t id = open("bob", "the board's plot has no axis labels");
  now += 5000;
  db->set_actor({"mia", ""});
  auto c = db->close_issue(id, "duplicate of 1");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->state, IssueState::closed);
  EXPECT_EQ(c->closed_by, "mia");
  EXPECT_EQ(c->closed_at, now);
  EXPECT_EQ(c->close_reason, "duplicate of 1");
  auto again = db->close_issue(id, "");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, StateError::wrong_state);
  EXPECT_NE(again.error().message.find("closed already (by mia)"), std::string::npos) << again.error().message;
  EXPECT_EQ(db->close_issue(id + 1, "").error().kind, StateError::not_found);
  std::int64_t other = open("bob", "another");
  db->set_actor({"bob", ""});
  EXPECT_EQ(db->close_issue(other, std::string(kIssueCloseReasonMax + 1, 'w')).error().kind, StateError::invalid);
  EXPECT_EQ(db->get_issue(other)->state, IssueState::open);
}

TEST_P(IssuesTest, ListedNewestFirstByStateAndAuthorAndPagedByBefore) {
  std::int64_t a = open("bob", "a"), b = open("ola", "b"), c = open("bob", "c"), d = open("bob", "d");
  db->set_actor({"mia", ""});
  ASSERT_TRUE(db->close_issue(c, ""));
  auto all = db->list_issues({});
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].id, d);
  EXPECT_EQ((*all)[3].id, a);
  auto open_bob = db->list_issues({.state = IssueState::open, .author = std::string("bob")});
  ASSERT_EQ(open_bob->size(), 2u);
  EXPECT_EQ((*open_bob)[0].id, d);
  EXPECT_EQ((*open_bob)[1].id, a);
  auto closed = db->list_issues({.state = IssueState::closed});
  ASSERT_EQ(closed->size(), 1u);
  EXPECT_EQ((*closed)[0].id, c);
  // Pages: two at a time, the next page starts below the last id seen.
  auto p1 = db->list_issues({.limit = 2});
  ASSERT_EQ(p1->size(), 2u);
  auto p2 = db->list_issues({.before = p1->back().id, .limit = 2});
  ASSERT_EQ(p2->size(), 2u);
  EXPECT_EQ((*p2)[0].id, b);
  EXPECT_EQ((*p2)[1].id, a);
  EXPECT_TRUE(db->list_issues({.before = a})->empty());
  EXPECT_EQ(db->list_issues({.limit = 0}).error().kind, StateError::invalid);
  EXPECT_EQ(db->list_issues({.limit = 1001}).error().kind, StateError::invalid);
}

TEST_P(IssuesTest, IssuesAndTheirCommentsCountAgainstTheTokensWritingLimit) {
  const std::string tok = "00000000000000c1";
  const UnixMs start = now;
  std::int64_t id = open("cy", "one", tok);
  now += 10;
  db->set_actor({"cy", tok});
  ASSERT_TRUE(db->comment_issue(id, "two"));
  ASSERT_TRUE(db->comment_issue(id, "three"));
  db->set_actor({"bob", "00000000000000b1"});
  ASSERT_TRUE(db->comment_issue(id, "someone else's"));
  auto u = db->token_usage(tok, start - 1);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->comments, 3);
  EXPECT_EQ(u->oldest_comment, start);
  EXPECT_EQ(db->token_usage(tok, now)->comments, 0);
}

TEST_P(IssuesTest, EveryStepIsAudited) {
  std::int64_t id = open("bob", "x");
  db->set_actor({"ann", ""});
  ASSERT_TRUE(db->comment_issue(id, "y"));
  db->set_actor({"bob", ""});
  ASSERT_TRUE(db->close_issue(id, "z"));
  auto seen = actions();
  for (const char* want : {"bob issue.open", "ann issue.comment", "bob issue.close"})
    EXPECT_NE(std::find(seen.begin(), seen.end(), want), seen.end()) << want << " not in " << ::testing::PrintToString(seen);
}

}  // namespace
}  // namespace kzoo::store
