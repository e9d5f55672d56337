// Jobs, leases and holds (job_queue.hpp), on SQLite and on PostgreSQL: the
// oldest queued job goes first, only the holder of a lease may act on its
// job, an expired lease gives the job back until its attempts run out, and
// connections claiming at once never share a job.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class JobQueueTest : public StateTest {};
KZOO_ON_BOTH_ENGINES(JobQueueTest);

TEST_P(JobQueueTest, ACompletedJobIsNeverCompletedAgainWithAnotherOutcome) {
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

TEST_P(JobQueueTest, ClaimTakesTheOldestQueuedJobFirst) {
  Job a = queued(), b = queued(), c = queued();
  EXPECT_EQ((*db->claim_job("w", 60))->id, a.id);
  EXPECT_EQ((*db->claim_job("w", 60))->id, b.id);
  EXPECT_EQ((*db->claim_job("w", 60))->id, c.id);
  auto none = db->claim_job("w", 60);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST_P(JobQueueTest, HeartbeatExtendsOnlyTheHoldersLease) {
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

TEST_P(JobQueueTest, AnExpiredLeaseReturnsTheJobToTheQueueAndLocksOutTheOldWorker) {
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

TEST_P(JobQueueTest, AHolderPastItsLeaseMayStillCompleteUntilTheJobIsTakenBack) {
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

TEST_P(JobQueueTest, AJobThatKeepsLosingItsLeaseFailsAfterMaxAttempts) {
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

TEST_P(JobQueueTest, AnInfrastructureFailureIsRetriedUntilAttemptsRunOutThenFails) {
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

TEST_P(JobQueueTest, ResultsWithInvalidUtf8AreStoredWithReplacement) {
  Job j = queued();
  ASSERT_TRUE(db->claim_job("w1", 60));
  Completion c{Outcome::failed, {{"stderr", std::string("crash \xff\xfe here")}}, nullptr, {"crashed"}, ""};
  ASSERT_TRUE(db->complete(j.id, "w1", c));
  std::string back = db->get_job(j.id)->result["stderr"];
  EXPECT_EQ(back.rfind("crash ", 0), 0u);
  EXPECT_NE(back.find("here"), std::string::npos);
}

TEST_P(JobQueueTest, AHeldJobIsNeverClaimedUntilReleased) {
  auto held = db->enqueue(submit().id, 3, true)->id;
  auto none = db->claim_job("w1", 60);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_EQ(*db->count_claimable(), 0) << "a held job waits for a maintainer, not a worker";
  auto list = db->held_jobs();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].job_id, held);

  auto free_job = db->enqueue(submit().id, 3, false)->id;
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
  EXPECT_EQ(*db->count_claimable(), 1) << "the released job waits for a worker; the other is running";
  auto c2 = db->claim_job("w2", 60);
  ASSERT_TRUE(c2 && *c2);
  EXPECT_EQ((**c2).id, held);
}

// The queue as people read it: each job with its kernel and submitter, held
// and claimable told apart, a claimable job's place in line equal to the
// order claim_job takes them in, and pages that neither skip nor repeat.
TEST_P(JobQueueTest, TheQueueListsEachJobWithItsPlaceInLineAndWhoHoldsIt) {
  Job a = queued();
  auto held = *db->enqueue(submit("cuda/rmsnorm", "ola").id, 3, true);
  Job b = queued(), c = queued();
  ASSERT_TRUE(db->claim_job("gpu-1", 60));  // takes a
  now = now + 5'000;

  auto all = db->list_jobs({});
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].job.id, c.id) << "newest first by default";
  std::map<std::int64_t, JobListing> by_id;
  for (const auto& l : *all) by_id[l.job.id] = l;
  EXPECT_EQ(by_id[a.id].job.state, State::running);
  EXPECT_EQ(by_id[a.id].job.lease_owner, "gpu-1");
  EXPECT_EQ(by_id[a.id].job.lease_expires_at, now - 5'000 + 60'000);
  EXPECT_FALSE(by_id[a.id].position) << "a running job is not in line";
  EXPECT_TRUE(by_id[held.id].job.held);
  EXPECT_EQ(by_id[held.id].kernel_id, "cuda/rmsnorm");
  EXPECT_EQ(by_id[held.id].submitter_id, "ola");
  EXPECT_FALSE(by_id[held.id].position) << "a held job waits for a person, not for a worker";
  EXPECT_EQ(by_id[b.id].position, 1);
  EXPECT_EQ(by_id[c.id].position, 2);
  EXPECT_EQ(*db->queue_position(c.id), 2);
  EXPECT_EQ(*db->queue_position(a.id), std::nullopt);
  EXPECT_REFUSED(db->queue_position(9999), not_found);

  auto next = db->claim_job("gpu-2", 60);
  ASSERT_TRUE(next && *next);
  EXPECT_EQ((*next)->id, b.id) << "position 1 is what the next claim takes";
  EXPECT_EQ(*db->queue_position(c.id), 1);

  JobFilter waiting;
  waiting.states = {State::queued};
  waiting.held = false;
  auto w = db->list_jobs(waiting);
  ASSERT_EQ(w->size(), 1u);
  EXPECT_EQ((*w)[0].job.id, c.id);
  JobFilter holds;
  holds.held = true;
  auto h = db->list_jobs(holds);
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].job.id, held.id);
  JobFilter by_kernel;
  by_kernel.kernel_id = "cuda/rmsnorm";
  EXPECT_EQ(db->list_jobs(by_kernel)->size(), 1u);
  JobFilter by_submitter;
  by_submitter.submitter_id = "alice";
  EXPECT_EQ(db->list_jobs(by_submitter)->size(), 3u);
  JobFilter running;
  running.states = {State::running};
  EXPECT_EQ(db->list_jobs(running)->size(), 2u);
}

TEST_P(JobQueueTest, TheQueuesPagesNeitherSkipNorRepeatAJobInEitherDirection) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(queued().id);
  for (bool ascending : {false, true}) {
    std::vector<std::int64_t> seen;
    JobFilter f;
    f.limit = 3;
    if (ascending) f.after_id = 0;
    for (int page = 0; page < 5; ++page) {
      auto p = db->list_jobs(f);
      ASSERT_TRUE(p) << p.error().message;
      if (p->empty()) break;
      for (const auto& l : *p) seen.push_back(l.job.id);
      if (ascending) f.after_id = p->back().job.id;
      else f.before_id = p->back().job.id;
    }
    std::vector<std::int64_t> want = ids;
    if (!ascending) std::reverse(want.begin(), want.end());
    EXPECT_EQ(seen, want) << (ascending ? "oldest first" : "newest first");
  }
}

TEST_P(JobQueueTest, AQueueListingOutOfRangeIsRefusedAndNamesTheRange) {
  JobFilter f;
  for (int bad : {0, -1, 1001, INT32_MAX}) {
    f.limit = bad;
    auto r = db->list_jobs(f);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, StateError::invalid);
    EXPECT_NE(r.error().message.find("1 to 1000"), std::string::npos) << r.error().message;
  }
  f.limit = 10;
  f.after_id = -5;
  EXPECT_REFUSED(db->list_jobs(f), invalid);
  f.after_id.reset();
  f.before_id = 0;
  EXPECT_REFUSED(db->list_jobs(f), invalid);
}

TEST_P(JobQueueTest, AGpuRunnerTakesOnlyJobsItsDeviceCanRunAndTheJobsItLeavesSaySo) {
  auto hopper = *db->enqueue(submit().id, 3, false, {.compute_capability = 90});
  auto ampere = *db->enqueue(submit().id, 3, false, {.compute_capability = 80});
  EXPECT_EQ(hopper.requires_cc, 90);
  auto old = db->claim_job("a100-1", 60, {.compute_capability = 80});
  ASSERT_TRUE(old && *old) << (old ? "nothing claimed" : old.error().message);
  EXPECT_EQ((*old)->id, ampere.id) << "the older job needs 9.0: an 8.0 device leaves it";
  auto left = db->get_job(hopper.id);
  EXPECT_EQ(left->state, State::queued);
  EXPECT_EQ(left->passed_over.rfind("a100-1 (compute capability 8.0) at ", 0), 0u) << left->passed_over;
  auto none = db->claim_job("a100-1", 60, {.compute_capability = 80});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "nothing else it can run";
  auto h = db->claim_job("h200-1", 60, {.compute_capability = 90});
  ASSERT_TRUE(h && *h);
  EXPECT_EQ((*h)->id, hopper.id);
  auto cpu_job = *db->enqueue(submit().id, 3, false, {.compute_capability = 90});
  auto cpu = db->claim_job("cpu-1", 60);
  ASSERT_TRUE(cpu && *cpu);
  EXPECT_EQ((*cpu)->id, cpu_job.id) << "a CPU runner (no capability given) checks any task on the CPU";
  EXPECT_REFUSED(db->claim_job("x", 60, {.compute_capability = 0}), invalid);
  EXPECT_REFUSED(db->enqueue(submit().id, 3, false, {.compute_capability = -1}), invalid);
}

TEST_P(JobQueueTest, TheClaimableJobsAreCountedByTheGpusEachNeeds) {
  EXPECT_TRUE(db->claimable_by_gpus()->empty()) << "nothing queued";
  ASSERT_TRUE(db->enqueue(submit().id, 3, false, {.compute_capability = 90, .gpus = 4}));
  ASSERT_TRUE(db->enqueue(submit().id, 3, false, {.compute_capability = 90}));
  ASSERT_TRUE(db->enqueue(submit().id, 3, false, {}));
  ASSERT_TRUE(db->enqueue(submit().id, 3, true, {.gpus = 4}));  // held: waits for a maintainer, not a runner
  auto by = db->claimable_by_gpus();
  ASSERT_TRUE(by) << by.error().message;
  EXPECT_EQ(*by, (std::map<int, std::int64_t>{{1, 2}, {4, 1}}));
  auto taken = db->claim_job("node-8/gpu0", 60, {.compute_capability = 90, .gpus = 8});
  ASSERT_TRUE(taken && *taken);
  EXPECT_EQ(*db->claimable_by_gpus(), (std::map<int, std::int64_t>{{1, 2}})) << "the oldest, of 4, is running";
  EXPECT_EQ(*db->count_claimable(), 2);
}

TEST_P(JobQueueTest, ARunnerTakesOnlyJobsItsNodeHasTheGpusForAndTheJobsItLeavesSaySo) {
  auto four = *db->enqueue(submit().id, 3, false, {.compute_capability = 90, .gpus = 4});
  auto one = *db->enqueue(submit().id, 3, false, {.compute_capability = 90});
  EXPECT_EQ(four.requires_gpus, 4);
  EXPECT_EQ(one.requires_gpus, 1) << "a task that names no GPUs takes one, the judge's";
  auto small = db->claim_job("node-2/gpu0", 60, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(small && *small) << (small ? "nothing claimed" : small.error().message);
  EXPECT_EQ((*small)->id, one.id) << "the older job needs 4 GPUs of one node: a node of 2 leaves it";
  auto left = db->get_job(four.id);
  EXPECT_EQ(left->state, State::queued);
  EXPECT_EQ(left->passed_over.rfind("node-2/gpu0 (2 GPUs) at ", 0), 0u)
      << "it names the runner and only what it lacked: " << left->passed_over;
  auto none = db->claim_job("node-2/gpu1", 60, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "nothing else a node of 2 can run";
  auto big = db->claim_job("node-8/gpu0", 60, {.compute_capability = 90, .gpus = 8});
  ASSERT_TRUE(big && *big);
  EXPECT_EQ((*big)->id, four.id) << "a node of 8 has the 4 it needs";
  auto cpu_job = *db->enqueue(submit().id, 3, false, {.compute_capability = 90, .gpus = 4});
  auto cpu = db->claim_job("cpu-1", 60);
  ASSERT_TRUE(cpu && *cpu);
  EXPECT_EQ((*cpu)->id, cpu_job.id) << "a CPU runner (no GPUs given) checks any task on the CPU";
}

TEST_P(JobQueueTest, AJobPassedOverRecordsOnlyWhatTheLastRunnerThatLeftItLacked) {
  auto job = *db->enqueue(submit().id, 3, false, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(db->claim_job("a100-1", 60, {.compute_capability = 80, .gpus = 1}));
  EXPECT_EQ(db->get_job(job.id)->passed_over.rfind("a100-1 (compute capability 8.0, 1 GPU) at ", 0), 0u)
      << db->get_job(job.id)->passed_over;
  ASSERT_TRUE(db->claim_job("h200-1", 60, {.compute_capability = 90, .gpus = 1}));
  EXPECT_EQ(db->get_job(job.id)->passed_over.rfind("h200-1 (1 GPU) at ", 0), 0u)
      << "its capability was enough: " << db->get_job(job.id)->passed_over;
  ASSERT_TRUE(db->claim_job("a100-8", 60, {.compute_capability = 80, .gpus = 8}));
  EXPECT_EQ(db->get_job(job.id)->passed_over.rfind("a100-8 (compute capability 8.0) at ", 0), 0u)
      << "its GPUs were enough: " << db->get_job(job.id)->passed_over;
  auto fits = db->claim_job("h200-2", 60, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(fits && *fits);
  EXPECT_EQ((*fits)->id, job.id);
}

TEST_P(JobQueueTest, GpuCountsOutOfRangeAreRefusedAndNameTheRange) {
  for (int bad : {0, -1, kMaxNodeGpus + 1}) {
    auto c = db->claim_job("x", 60, {.gpus = bad});
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().kind, StateError::invalid);
    EXPECT_NE(c.error().message.find("1 to 1024"), std::string::npos) << c.error().message;
    auto e = db->enqueue(submit().id, 3, false, {.gpus = bad});
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().kind, StateError::invalid);
    EXPECT_NE(e.error().message.find("environment.gpus"), std::string::npos) << e.error().message;
  }
}

TEST_P(JobQueueTest, TwoConnectionsClaimingAThousandJobsNeverShareOne) {
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
