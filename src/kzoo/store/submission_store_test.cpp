// Submissions and routes (submission_store.hpp), on SQLite and on PostgreSQL:
// a submission is received, queued with its job, and ends with that job;
// transitions from the wrong state are refused and change nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class SubmissionsTest : public StateTest {};
KZOO_ON_BOTH_ENGINES(SubmissionsTest);

TEST_P(SubmissionsTest, CreateSubmissionValidatesItsFields) {
  EXPECT_REFUSED(db->create_submission({"k", "alice", "", "/p", "ABC"}), invalid);
  EXPECT_REFUSED(db->create_submission({"k", "alice", "", "/p", std::string(64, 'G')}), invalid);
  EXPECT_REFUSED(db->create_submission({"k", "al ice", "", "/p", kSha}), invalid);
  EXPECT_REFUSED(db->create_submission({"", "alice", "", "/p", kSha}), invalid);
  EXPECT_REFUSED(db->create_submission({"k", "alice", "", "", kSha}), invalid);
  auto s = db->create_submission({"k", "alice", "", "/p", kSha});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, State::received);
  EXPECT_EQ(s->created_at, now.load());
  EXPECT_TRUE(s->verdict.is_null());
}

TEST_P(SubmissionsTest, TheHappyPathMovesSubmissionAndJobTogether) {
  auto s = submit();
  auto job = db->enqueue(s.id);
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->state, State::queued);
  EXPECT_EQ(submission_state(s.id), State::queued);

  now += 1000;
  auto claimed = db->claim_job("w1", 60);
  ASSERT_TRUE(claimed && *claimed);
  EXPECT_EQ((*claimed)->id, job->id);
  EXPECT_EQ((*claimed)->state, State::running);
  EXPECT_EQ((*claimed)->attempts, 1);
  EXPECT_EQ((*claimed)->lease_owner, "w1");
  EXPECT_EQ((*claimed)->lease_expires_at, now.load() + 60'000);
  EXPECT_EQ(submission_state(s.id), State::running);

  now += 5000;
  auto done = db->complete(job->id, "w1", accepted());
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->state, State::accepted);
  EXPECT_EQ(done->finished_at, now.load());
  EXPECT_FALSE(done->lease_expires_at);
  EXPECT_EQ(done->result["speedup"], 1.5);
  auto after = db->get_submission(s.id);
  EXPECT_EQ(after->state, State::accepted);
  EXPECT_EQ(after->accepted_commit, kCommit);
  EXPECT_EQ(after->verdict["accept"], true);
}

TEST_P(SubmissionsTest, RejectAndFailOutcomesReachTheSubmission) {
  for (Outcome o : {Outcome::rejected, Outcome::failed}) {
    Job j = queued();
    ASSERT_TRUE(db->claim_job("w1", 60));
    auto r = db->complete(j.id, "w1", {o, {}, {{"accept", false}}, {"slower than the baseline"}, ""});
    ASSERT_TRUE(r) << r.error().message;
    auto s = db->get_submission(j.submission_id);
    EXPECT_EQ(s->state, to_state(o));
    EXPECT_EQ(s->reasons, std::vector<std::string>{"slower than the baseline"});
    EXPECT_EQ(s->accepted_commit, "");
  }
}

TEST_P(SubmissionsTest, TransitionsFromTheWrongStateAreRefusedAndChangeNothing) {
  auto s = submit();
  EXPECT_REFUSED(db->enqueue(999), not_found);
  ASSERT_TRUE(db->enqueue(s.id));
  EXPECT_REFUSED(db->enqueue(s.id), wrong_state);                     // queued, not received
  EXPECT_REFUSED(db->reject(s.id, {"bad"}, nullptr), wrong_state);    // rejection is for received only
  Job j = db->jobs_of(s.id)->at(0);
  EXPECT_REFUSED(db->heartbeat(j.id, "w1", 60), wrong_state);         // queued, not running
  EXPECT_REFUSED(db->complete(j.id, "w1", accepted()), wrong_state);  // nobody claimed it
  EXPECT_EQ(submission_state(s.id), State::queued);

  ASSERT_TRUE(db->claim_job("w1", 60));
  EXPECT_REFUSED(db->heartbeat(j.id, "w2", 60), not_holder);
  EXPECT_REFUSED(db->complete(j.id, "w2", accepted()), not_holder);
  EXPECT_REFUSED(db->heartbeat(12345, "w1", 60), not_found);
  EXPECT_REFUSED(db->heartbeat(j.id, "w1", 0), invalid);
  EXPECT_REFUSED(db->claim_job("", 60), invalid);
  EXPECT_REFUSED(db->claim_job("w 1", 60), invalid);

  Completion no_commit = accepted();
  no_commit.accepted_commit = "";
  EXPECT_REFUSED(db->complete(j.id, "w1", no_commit), invalid);
  Completion stray_commit{Outcome::rejected, {}, {}, {"x"}, kCommit};
  EXPECT_REFUSED(db->complete(j.id, "w1", stray_commit), invalid);
  EXPECT_EQ(job_state(j.id), State::running) << "refusals left the job as it was";

  ASSERT_TRUE(db->complete(j.id, "w1", accepted()));
  EXPECT_REFUSED(db->cancel(s.id, "too late"), wrong_state);
  EXPECT_REFUSED(db->reject(s.id, {"too late"}, nullptr), wrong_state);
}

TEST_P(SubmissionsTest, RejectIsForSubmissionsThatNeverQueued) {
  auto s = submit();
  EXPECT_REFUSED(db->reject(s.id, {}, nullptr), invalid);
  auto r = db->reject(s.id, {"tarball holds a symlink: src/x"}, {{"violations", 1}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->state, State::rejected);
  EXPECT_EQ(r->reasons.at(0), "tarball holds a symlink: src/x");
  EXPECT_TRUE(db->jobs_of(s.id)->empty());
  EXPECT_REFUSED(db->enqueue(s.id), wrong_state);
}

TEST_P(SubmissionsTest, CancelStopsAQueuedOrRunningJob) {
  Job q = queued();
  auto c = db->cancel(q.submission_id, "withdrawn by submitter");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->state, State::cancelled);
  EXPECT_EQ(job_state(q.id), State::cancelled);
  EXPECT_FALSE(*db->claim_job("w1", 60)) << "a cancelled job is not claimable";

  Job r = queued();
  ASSERT_TRUE(db->claim_job("w1", 60));
  ASSERT_TRUE(db->cancel(r.submission_id, "maintainer stopped it"));
  EXPECT_REFUSED(db->heartbeat(r.id, "w1", 60), wrong_state);  // the worker learns to stop
  EXPECT_REFUSED(db->complete(r.id, "w1", accepted()), wrong_state);
  EXPECT_FALSE(db->get_job(r.id)->lease_expires_at);

  auto s = submit();
  EXPECT_TRUE(db->cancel(s.id, ""));
  EXPECT_REFUSED(db->cancel(s.id, ""), wrong_state);
}

TEST_P(SubmissionsTest, ListsSubmissionsByFilterNewestFirstWithPaging) {
  auto a = submit("k1", "alice");
  auto b = submit("k2", "bob");
  auto c = submit("k1", "bob");
  ASSERT_TRUE(db->enqueue(c.id));
  SubmissionFilter by_kernel;
  by_kernel.kernel_id = "k1";
  auto k1 = db->list_submissions(by_kernel);
  ASSERT_TRUE(k1);
  ASSERT_EQ(k1->size(), 2u);
  EXPECT_EQ((*k1)[0].id, c.id);
  EXPECT_EQ((*k1)[1].id, a.id);
  SubmissionFilter bobs_received;
  bobs_received.submitter_id = "bob";
  bobs_received.state = State::received;
  EXPECT_EQ(db->list_submissions(bobs_received)->at(0).id, b.id);
  SubmissionFilter paged;
  paged.before_id = c.id;
  paged.limit = 1;
  auto page = db->list_submissions(paged);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, b.id);
  EXPECT_EQ(*db->count_jobs(State::queued), 1);
  SubmissionFilter none;
  none.limit = 0;
  EXPECT_REFUSED(db->list_submissions(none), invalid);
}

TEST_P(SubmissionsTest, ARouteKeepsTheOwnerThatStartedIt) {
  auto first = db->ensure_route("fast-softmax", "ann");
  ASSERT_TRUE(first) << first.error().message;
  now += 10;
  auto again = db->ensure_route("fast-softmax", "bob");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->owner, "ann");
  EXPECT_EQ(again->created_at, first->created_at);
  ASSERT_TRUE(db->ensure_route("alpha", "bob"));
  auto all = db->list_routes();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "alpha");
  EXPECT_REFUSED(db->ensure_route("", "ann"), invalid);
  EXPECT_REFUSED(db->ensure_route(std::string(65, 'r'), "ann"), invalid);
  auto log = db->audit_log({});
  EXPECT_EQ(log->size(), 2u) << "only the two creations are audited";
}

TEST_P(SubmissionsTest, ASubmissionNamesTheServerThatReceivedItSoARestartRecoversOnlyItsOwn) {
  NewSubmission mine{"k", "alice", "", "/p", kSha};
  mine.received_by = "front-a";
  NewSubmission theirs = mine;
  theirs.received_by = "front-b";
  auto a = db->create_submission(mine);
  auto b = db->create_submission(theirs);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(db->get_submission(a->id)->received_by, "front-a");
  SubmissionFilter f;
  f.state = State::received;
  f.received_by = "front-a";
  auto left = db->list_submissions(f);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].id, a->id);
  mine.received_by = std::string(129, 's');
  EXPECT_REFUSED(db->create_submission(mine), invalid);
}

TEST_P(SubmissionsTest, ATokensCapsAreCheckedWithTheRecordSoConcurrentServersCannotPassThem) {
  ASSERT_TRUE(db->add_user("ann", Role::member));
  ASSERT_TRUE(db->add_token(token("00000000000000a1", "ann")));
  NewSubmission n{"k", "ann", "", "/p", kSha, "00000000000000a1", 10};
  n.admission = Admission{3, 100, 1'000'000};
  // Eight connections (as on several servers) submit for the token at once.
  std::atomic<int> admitted{0}, limited{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto mine = open();
      if (!mine) return;
      auto r = mine->create_submission(n);
      if (r) ++admitted;
      else if (r.error().kind == StateError::limited) ++limited;
      else ++other;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted, 3) << "exactly the hourly cap is admitted";
  EXPECT_EQ(limited, 5);
  EXPECT_EQ(other, 0);
  auto refused = db->create_submission(n);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, StateError::limited);
  EXPECT_NE(refused.error().message.find("3 submissions per hour"), std::string::npos) << refused.error().message;
  now += 3'600'001;  // an hour later the window has moved on
  EXPECT_TRUE(db->create_submission(n));
  n.admission = Admission{100, 100, 15};
  EXPECT_EQ(db->create_submission(n).error().kind, StateError::limited) << "the day's 40 bytes and these 10 are over 15";
  n.admission = std::nullopt;
  EXPECT_TRUE(db->create_submission(n)) << "a server-made submission is not capped";
}

}  // namespace
}  // namespace kzoo::store
