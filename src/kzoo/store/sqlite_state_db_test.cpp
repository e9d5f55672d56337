// The state machine of submissions and jobs on a real SQLite file: every
// transition, every refused transition, leases, migrations, and concurrent
// claimers on separate connections.
#include "kzoo/store/sqlite_state_db.hpp"

#include <atomic>
#include <set>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include "kzoo/store/sqlite_migrations.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::store {
namespace {

using testing::TempDir;

const std::string kSha(64, 'a');
const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

class StateDbTest : public ::testing::Test {
 protected:
  void SetUp() override { db = open(); }
  std::unique_ptr<StateDb> open() {
    SqliteOptions o;
    o.synchronous_full = false;
    o.clock = [this] { return now.load(); };
    auto r = open_sqlite_state_db(path, o);
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? std::move(*r) : nullptr;
  }
  Submission submit(std::string kernel = "cuda/softmax", std::string who = "alice") {
    auto s = db->create_submission({kernel, who, "faster", "/uploads/x.tar.gz", kSha});
    EXPECT_TRUE(s) << s.error().message;
    return *s;
  }
  // A submission with its job, queued.
  Job queued(int max_attempts = 3) {
    auto j = db->enqueue(submit().id, max_attempts);
    EXPECT_TRUE(j) << j.error().message;
    return *j;
  }
  State submission_state(std::int64_t id) { return db->get_submission(id)->state; }
  State job_state(std::int64_t id) { return db->get_job(id)->state; }
  static Completion accepted() { return {Outcome::accepted, {{"speedup", 1.5}}, {{"accept", true}}, {}, kCommit}; }

  TempDir tmp;
  std::string path = tmp / "state.db";
  std::atomic<UnixMs> now{1'700'000'000'000};
  std::unique_ptr<StateDb> db;
};

#define EXPECT_REFUSED(expr, kind_)                                                    \
  do {                                                                                 \
    auto r_ = (expr);                                                                  \
    ASSERT_FALSE(r_) << #expr " should have been refused";                             \
    EXPECT_EQ(to_string(r_.error().kind), to_string(StateError::kind_)) << r_.error().message; \
  } while (0)

TEST_F(StateDbTest, OpensInWalModeAtTheNewestSchemaVersion) {
  ASSERT_TRUE(db);
  EXPECT_EQ(db->schema_version(), sqlite_migrations().back().version);
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM schema_version").getInt(),
            static_cast<int>(sqlite_migrations().size()));
}

TEST_F(StateDbTest, ReopeningAppliesNoMigrationTwiceAndKeepsData) {
  auto s = submit();
  db.reset();
  for (int i = 0; i < 3; ++i) {
    auto again = open();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->get_submission(s.id)->kernel_id, "cuda/softmax");
  }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM schema_version").getInt(),
            static_cast<int>(sqlite_migrations().size()));
}

TEST_F(StateDbTest, RefusesADatabaseWrittenByANewerKzoo) {
  db.reset();
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("INSERT INTO schema_version VALUES (999, 'from the future', 0)");
  }
  auto r = open_sqlite_state_db(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, StateError::io);
  EXPECT_NE(r.error().message.find("999"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("newer"), std::string::npos) << r.error().message;
}

TEST(StateDbMigrations, AFailingMigrationRollsBackEntirely) {
  TempDir t;
  SQLite::Database raw(t / "m.db", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration list[] = {{1, "one", "CREATE TABLE a(x);"},
                            {2, "two", "CREATE TABLE b(x); INSERT INTO nowhere VALUES (1);"}};
  auto r = migrate(raw, list, 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("migration 2 (two)"), std::string::npos) << r.error().message;
  EXPECT_EQ(raw.execAndGet("SELECT max(version) FROM schema_version").getInt(), 1);
  EXPECT_FALSE(raw.tableExists("b")) << "the half-applied migration left nothing behind";
  const Migration fixed[] = {{1, "one", "CREATE TABLE a(x);"}, {2, "two", "CREATE TABLE b(x);"}};
  EXPECT_EQ(*migrate(raw, fixed, 0), 2);
}

TEST(StateDbMigrations, ConcurrentFirstOpensApplyEachMigrationOnce) {
  TempDir t;
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      auto r = open_sqlite_state_db(t / "s.db");
      if (r && (*r)->schema_version() == sqlite_migrations().back().version) ++opened;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(opened, 4);
  SQLite::Database raw(t / "s.db", SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM schema_version").getInt(),
            static_cast<int>(sqlite_migrations().size()));
}

TEST_F(StateDbTest, CreateSubmissionValidatesItsFields) {
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

TEST_F(StateDbTest, TheHappyPathMovesSubmissionAndJobTogether) {
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

TEST_F(StateDbTest, RejectAndFailOutcomesReachTheSubmission) {
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

TEST_F(StateDbTest, TransitionsFromTheWrongStateAreRefusedAndChangeNothing) {
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

TEST_F(StateDbTest, ACompletedJobIsNeverCompletedAgainWithAnotherOutcome) {
  Job j = queued();
  ASSERT_TRUE(db->claim_job("w1", 60));
  ASSERT_TRUE(db->complete(j.id, "w1", accepted()));
  Completion second{Outcome::rejected, {}, {}, {"changed my mind"}, ""};
  auto r = db->complete(j.id, "w1", second);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, StateError::wrong_state);
  EXPECT_NE(r.error().message.find("accepted"), std::string::npos) << r.error().message;
  EXPECT_EQ(job_state(j.id), State::accepted);
  EXPECT_EQ(submission_state(j.submission_id), State::accepted);
  EXPECT_EQ(db->get_submission(j.submission_id)->accepted_commit, kCommit);
}

TEST_F(StateDbTest, RejectIsForSubmissionsThatNeverQueued) {
  auto s = submit();
  EXPECT_REFUSED(db->reject(s.id, {}, nullptr), invalid);
  auto r = db->reject(s.id, {"tarball holds a symlink: src/x"}, {{"violations", 1}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->state, State::rejected);
  EXPECT_EQ(r->reasons.at(0), "tarball holds a symlink: src/x");
  EXPECT_TRUE(db->jobs_of(s.id)->empty());
  EXPECT_REFUSED(db->enqueue(s.id), wrong_state);
}

TEST_F(StateDbTest, CancelStopsAQueuedOrRunningJob) {
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

TEST_F(StateDbTest, ClaimTakesTheOldestQueuedJobFirst) {
  Job a = queued(), b = queued(), c = queued();
  EXPECT_EQ((*db->claim_job("w", 60))->id, a.id);
  EXPECT_EQ((*db->claim_job("w", 60))->id, b.id);
  EXPECT_EQ((*db->claim_job("w", 60))->id, c.id);
  auto none = db->claim_job("w", 60);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST_F(StateDbTest, HeartbeatExtendsOnlyTheHoldersLease) {
  Job j = queued();
  UnixMs t0 = now;
  ASSERT_TRUE(db->claim_job("w1", 30));
  now = t0 + 20'000;
  auto hb = db->heartbeat(j.id, "w1", 30);
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->lease_expires_at, t0 + 50'000);
  EXPECT_EQ(hb->heartbeat_at, t0 + 20'000);
  EXPECT_TRUE(db->requeue_expired(t0 + 49'999)->empty()) << "the heartbeat kept the lease alive";
  EXPECT_REFUSED(db->heartbeat(j.id, "w2", 30), not_holder);
  EXPECT_EQ(db->get_job(j.id)->lease_expires_at, t0 + 50'000) << "the refused heartbeat changed nothing";
}

TEST_F(StateDbTest, AnExpiredLeaseReturnsTheJobToTheQueueAndLocksOutTheOldWorker) {
  Job j = queued();
  UnixMs t0 = now;
  ASSERT_TRUE(db->claim_job("w1", 30));
  EXPECT_TRUE(db->requeue_expired(t0 + 29'999)->empty());
  auto back = db->requeue_expired(t0 + 30'000);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].job_id, j.id);
  EXPECT_EQ((*back)[0].lost_owner, "w1");
  EXPECT_EQ((*back)[0].now, State::queued);
  EXPECT_EQ(job_state(j.id), State::queued);
  EXPECT_EQ(submission_state(j.submission_id), State::queued);

  EXPECT_REFUSED(db->complete(j.id, "w1", accepted()), wrong_state);  // w1 vanished and came back
  now = t0 + 31'000;
  auto again = db->claim_job("w2", 30);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->id, j.id);
  EXPECT_EQ((*again)->attempts, 2);
  EXPECT_REFUSED(db->complete(j.id, "w1", accepted()), not_holder);
  EXPECT_REFUSED(db->heartbeat(j.id, "w1", 30), not_holder);
  ASSERT_TRUE(db->complete(j.id, "w2", accepted()));
  EXPECT_EQ(submission_state(j.submission_id), State::accepted);
}

TEST_F(StateDbTest, AHolderPastItsLeaseMayStillCompleteUntilTheJobIsTakenBack) {
  // The work is done and nobody else has the job yet: keep the result rather
  // than run the job again. Once requeue_expired ran, the same call is refused.
  Job j = queued();
  ASSERT_TRUE(db->claim_job("w1", 10));
  now += 60'000;
  auto late = db->complete(j.id, "w1", accepted());
  ASSERT_TRUE(late) << late.error().message;
  EXPECT_TRUE(db->requeue_expired(now)->empty()) << "a completed job is not requeued";
  EXPECT_EQ(submission_state(j.submission_id), State::accepted);
}

TEST_F(StateDbTest, AJobThatKeepsLosingItsLeaseFailsAfterMaxAttempts) {
  Job j = queued(2);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto c = db->claim_job("w" + std::to_string(attempt), 10);
    ASSERT_TRUE(c && *c);
    now += 10'000;
    auto r = db->requeue_expired(now);
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].now, attempt < 2 ? State::queued : State::failed);
  }
  Job failed = *db->get_job(j.id);
  EXPECT_EQ(failed.state, State::failed);
  EXPECT_EQ(failed.attempts, 2);
  EXPECT_TRUE(failed.finished_at);
  auto s = db->get_submission(j.submission_id);
  EXPECT_EQ(s->state, State::failed);
  ASSERT_EQ(s->reasons.size(), 1u);
  EXPECT_NE(s->reasons[0].find("lost its lease 2 times"), std::string::npos) << s->reasons[0];
  EXPECT_FALSE(*db->claim_job("w3", 10));
}

TEST_F(StateDbTest, AnInfrastructureFailureIsRetriedUntilAttemptsRunOutThenFails) {
  Job j = queued(2);
  ASSERT_TRUE(db->claim_job("w1", 30));
  EXPECT_REFUSED(db->retry(j.id, "w2", {"judge crashed"}, nullptr), not_holder);
  auto back = db->retry(j.id, "w1", {"judge crashed"}, {{"attempt", 1}});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->state, State::queued);
  EXPECT_EQ(back->lease_owner, "");
  EXPECT_EQ(back->result["attempt"], 1);
  EXPECT_EQ(submission_state(j.submission_id), State::queued);
  EXPECT_REFUSED(db->complete(j.id, "w1", accepted()), wrong_state);  // handed back: no longer w1's

  auto again = db->claim_job("w2", 30);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->attempts, 2);
  auto last = db->retry(j.id, "w2", {"judge crashed again"}, nullptr);
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_EQ(last->state, State::failed);
  EXPECT_TRUE(last->finished_at);
  auto sub = db->get_submission(j.submission_id);
  EXPECT_EQ(sub->state, State::failed);
  ASSERT_EQ(sub->reasons.size(), 2u);
  EXPECT_EQ(sub->reasons[0], "judge crashed again");
  EXPECT_EQ(sub->reasons[1], "gave up after 2 attempts (max_attempts=2)");
  EXPECT_REFUSED(db->retry(j.id, "w2", {"x"}, nullptr), wrong_state);
}

TEST_F(StateDbTest, ResultsWithInvalidUtf8AreStoredWithReplacement) {
  Job j = queued();
  ASSERT_TRUE(db->claim_job("w1", 60));
  Completion c{Outcome::failed, {{"stderr", std::string("crash \xff\xfe here")}}, nullptr, {"crashed"}, ""};
  ASSERT_TRUE(db->complete(j.id, "w1", c));
  std::string back = db->get_job(j.id)->result["stderr"];
  EXPECT_EQ(back.rfind("crash ", 0), 0u);
  EXPECT_NE(back.find("here"), std::string::npos);
}

TEST_F(StateDbTest, ListsSubmissionsByFilterNewestFirstWithPaging) {
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

TEST_F(StateDbTest, TwoConnectionsClaimingAThousandJobsNeverShareOne) {
  constexpr int kJobs = 1000;
  for (int i = 0; i < kJobs; ++i) queued();
  std::vector<std::int64_t> got[2];
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      auto mine = open();  // one connection per thread
      if (!mine) return;
      std::string worker = "w" + std::to_string(t);
      while (true) {
        auto c = mine->claim_job(worker, 60);
        if (!c) {
          ++errors;
          continue;  // busy: try again
        }
        if (!*c) break;
        got[t].push_back((*c)->id);
      }
    });
  for (auto& th : threads) th.join();
  std::set<std::int64_t> all(got[0].begin(), got[0].end());
  for (auto id : got[1]) EXPECT_TRUE(all.insert(id).second) << "job " << id << " claimed twice";
  EXPECT_EQ(all.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(*db->count_jobs(State::running), kJobs);
  EXPECT_EQ(errors, 0) << "the busy timeout should make claimers wait, not fail";
  RecordProperty("claims_by_thread_0", static_cast<int>(got[0].size()));
}

}  // namespace
}  // namespace kzoo::store
