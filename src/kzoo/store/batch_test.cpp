// Users' batch jobs (batch.hpp) and migration 9, on SQLite and on
// PostgreSQL: a batch job is a job of the one queue (claimed, leased, held,
// released like a graded one), ends with how its script ended, is cancelled
// queued or running, is judged once, and counts against its token's cap.
#include <gtest/gtest.h>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class BatchTest : public StateTest {
 protected:
  NewBatch batch(const std::string& owner = "ann", bool held = false) {
    NewBatch b;
    b.owner = owner;
    b.token_id = "00000000000000a1";
    b.name = "job.sbatch";
    b.script = "job.sbatch";
    b.script_text = "#!/bin/bash\necho hi\n";
    b.partition = "main";
    b.time_s = 600;
    b.cpus = 4;
    b.memory_mb = 8192;
    b.base_commit = kCommit;
    b.package_path = "/uploads/b.tar.gz";
    b.sha256 = kSha;
    b.package_bytes = 1234;
    b.held = held;
    return b;
  }
  BatchJob make(const NewBatch& b) {
    auto r = db->create_batch(b);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : BatchJob{};
  }
  static BatchEnd ended(std::string state, int code) {
    BatchEnd e;
    e.end_state = std::move(state);
    e.exit_code = code;
    e.elapsed_ms = 1500;
    e.result_commit = std::string(40, 'c');
    return e;
  }
};

KZOO_ON_BOTH_ENGINES(BatchTest);

TEST_P(BatchTest, ABatchJobIsAJobOfTheOneQueueAndItsIdNeverNamesAGradedJob) {
  Job graded = queued();
  BatchJob b = make(batch());
  EXPECT_GT(b.job.id, graded.id);
  EXPECT_EQ(b.job.kind, "batch");
  EXPECT_EQ(b.job.submission_id, 0);
  EXPECT_EQ(b.job.state, State::queued);
  EXPECT_EQ(db->get_job(graded.id)->kind, "grade");
  EXPECT_EQ(b.owner, "ann");
  EXPECT_EQ(b.time_s, 600);
  EXPECT_EQ(b.partition, "main");
  EXPECT_TRUE(b.end_state.empty());
  EXPECT_EQ(db->get_batch(graded.id).error().kind, StateError::not_found);
  // Claimed in line with graded jobs, without a submission to move.
  auto first = db->claim_job("w1", 60);
  ASSERT_TRUE(first && *first);
  EXPECT_EQ((*first)->id, graded.id);
  auto second = db->claim_job("w1", 60);
  ASSERT_TRUE(second && *second) << (second ? "" : second.error().message);
  EXPECT_EQ((*second)->id, b.job.id);
  EXPECT_TRUE((*second)->is_batch());
  EXPECT_TRUE(db->heartbeat(b.job.id, "w1", 60));
  EXPECT_REFUSED(db->complete(b.job.id, "w1", accepted()), invalid);
}

// Its --gres GPUs are what it needs of a runner's node, as a graded job's
// task's are: a node with fewer leaves it and says so; one asking none is any
// runner's.
TEST_P(BatchTest, ABatchJobWaitsForANodeWithTheGpusItAskedFor) {
  NewBatch four = batch();
  four.gpus = 4;
  BatchJob b = make(four);
  EXPECT_EQ(b.job.requires_gpus, 4);
  NewBatch none = batch();
  none.gpus = 0;
  BatchJob cpu_only = make(none);
  EXPECT_EQ(cpu_only.job.requires_gpus, 0);
  auto small = db->claim_job("node-1/gpu0", 60, {.compute_capability = 90, .gpus = 1});
  ASSERT_TRUE(small && *small) << (small ? "nothing claimed" : small.error().message);
  EXPECT_EQ((*small)->id, cpu_only.job.id);
  EXPECT_EQ(db->get_job(b.job.id)->passed_over.rfind("node-1/gpu0 (1 GPU) at ", 0), 0u)
      << db->get_job(b.job.id)->passed_over;
  auto big = db->claim_job("node-4/gpu0", 60, {.compute_capability = 90, .gpus = 4});
  ASSERT_TRUE(big && *big);
  EXPECT_EQ((*big)->id, b.job.id);
}

TEST_P(BatchTest, HowTheScriptEndedSetsTheJobsStateAndOnlyTheHolderEndsIt) {
  BatchJob b = make(batch());
  ASSERT_TRUE(db->claim_job("w1", 60));
  EXPECT_REFUSED(db->finish_batch(b.job.id, "w2", ended("COMPLETED", 0)), not_holder);
  EXPECT_REFUSED(db->finish_batch(b.job.id, "w1", ended("COMPLETED", 3)), invalid);  // COMPLETED is exit 0 only
  EXPECT_REFUSED(db->finish_batch(b.job.id, "w1", ended("CANCELLED", 0)), invalid);  // scancel's, not a runner's
  auto f = db->finish_batch(b.job.id, "w1", ended("TIMEOUT", -1));
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->end_state, "TIMEOUT");
  EXPECT_EQ(f->job.state, State::rejected);
  EXPECT_EQ(f->exit_code, -1);
  EXPECT_EQ(f->elapsed_ms, 1500);
  EXPECT_EQ(f->result_commit, std::string(40, 'c'));
  EXPECT_REFUSED(db->finish_batch(b.job.id, "w1", ended("COMPLETED", 0)), wrong_state);

  BatchJob ok = make(batch());
  ASSERT_TRUE(db->claim_job("w1", 60));
  EXPECT_EQ(db->finish_batch(ok.job.id, "w1", ended("COMPLETED", 0))->job.state, State::accepted);
}

TEST_P(BatchTest, AnOutsidersJobIsHeldUntilAMaintainerReleasesIt) {
  BatchJob b = make(batch("olly", true));
  EXPECT_TRUE(b.job.held);
  EXPECT_EQ(b.job.hold_reason, "JobHeldAdmin");
  EXPECT_FALSE(*db->claim_job("w1", 60));
  auto held = db->held_jobs();
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ(held->front().job_id, b.job.id);
  EXPECT_EQ(held->front().kernel_id, "batch:job.sbatch");
  EXPECT_EQ(held->front().submitter_id, "olly");
  db->set_actor({"mia", ""});
  ASSERT_TRUE(db->release_job(b.job.id));
  auto c = db->claim_job("w1", 60);
  ASSERT_TRUE(c && *c);
  EXPECT_EQ((*c)->id, b.job.id);
}

TEST_P(BatchTest, CancelledQueuedOrRunningAndTheHolderLearnsFromItsHeartbeat) {
  BatchJob waiting = make(batch());
  BatchJob running = make(batch());
  ASSERT_TRUE(db->claim_job("w1", 60));  // takes `waiting`
  auto c = db->cancel_batch(running.job.id, "scancel");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->end_state, "CANCELLED");
  EXPECT_EQ(c->job.state, State::cancelled);
  now += 2000;
  auto r = db->cancel_batch(waiting.job.id, "scancel");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->elapsed_ms, 2000);
  EXPECT_REFUSED(db->heartbeat(waiting.job.id, "w1", 60), wrong_state);
  EXPECT_REFUSED(db->finish_batch(waiting.job.id, "w1", ended("COMPLETED", 0)), wrong_state);
  EXPECT_REFUSED(db->cancel_batch(waiting.job.id, "again"), wrong_state);
}

TEST_P(BatchTest, ALostLeaseRequeuesItAndRunningOutOfAttemptsIsANodeFailure) {
  NewBatch nb = batch();
  nb.max_attempts = 1;
  BatchJob b = make(nb);
  ASSERT_TRUE(db->claim_job("w1", 1));
  now += 5000;
  auto q = db->requeue_expired(now);
  ASSERT_TRUE(q) << q.error().message;
  ASSERT_EQ(q->size(), 1u);
  EXPECT_EQ(q->front().now, State::failed);
  auto after = db->get_batch(b.job.id);
  EXPECT_EQ(after->end_state, "NODE_FAIL");
  EXPECT_EQ(after->job.state, State::failed);
}

TEST_P(BatchTest, ListedNewestFirstByOwnerAndJudgedOnce) {
  BatchJob a = make(batch("ann"));
  BatchJob b = make(batch("bob"));
  BatchJob c = make(batch("ann"));
  auto mine = db->list_batch({"ann"});
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ(mine->at(0).job.id, c.job.id);
  EXPECT_EQ(mine->at(1).job.id, a.job.id);
  EXPECT_EQ(db->list_batch({})->size(), 3u);
  EXPECT_REFUSED(db->list_batch({std::nullopt, INT64_MAX, 0}), invalid);

  EXPECT_REFUSED(db->begin_judgement(b.job.id), wrong_state);  // nothing to judge yet
  auto claimed = db->claim_job("w1", 60);
  ASSERT_EQ((*claimed)->id, a.job.id);
  ASSERT_TRUE(db->finish_batch(a.job.id, "w1", ended("COMPLETED", 0)));
  auto unjudged = db->unjudged_batches(10);
  ASSERT_EQ(unjudged->size(), 1u);
  EXPECT_EQ(unjudged->front().job.id, a.job.id);
  EXPECT_REFUSED(db->record_judgement(a.job.id, {{"ok", true}}), wrong_state);  // not taken yet
  ASSERT_TRUE(db->begin_judgement(a.job.id));
  EXPECT_REFUSED(db->begin_judgement(a.job.id), wrong_state);  // another server took it
  EXPECT_TRUE(db->unjudged_batches(10)->empty());
  auto j = db->record_judgement(a.job.id, {{"ok", true}, {"submissions", {7}}});
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->judged);
  EXPECT_EQ(j->review["submissions"][0], 7);
  EXPECT_TRUE(db->unjudged_batches(10)->empty());
  EXPECT_REFUSED(db->record_judgement(a.job.id, {{"ok", false}}), wrong_state);
}

TEST_P(BatchTest, BadValuesAreRefusedAndNothingIsStored) {
  NewBatch nb = batch();
  nb.time_s = 0;
  EXPECT_REFUSED(db->create_batch(nb), invalid);
  nb = batch();
  nb.base_commit = "main";
  auto r = db->create_batch(nb);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("base_commit"), std::string::npos) << r.error().message;
  nb = batch();
  nb.script = "";
  EXPECT_REFUSED(db->create_batch(nb), invalid);
  EXPECT_TRUE(db->list_batch({})->empty());
}

TEST_P(BatchTest, ATokensBatchJobsCountAgainstItsConcurrentJobCap) {
  ASSERT_TRUE(db->add_user("ann", Role::member));
  ASSERT_TRUE(db->add_token(token("00000000000000a1", "ann")));
  NewBatch nb = batch();
  nb.max_concurrent = 2;
  make(nb);
  submit_with("00000000000000a1", 10);  // a graded job of the same token
  EXPECT_REFUSED(db->create_batch(nb), limited);
  EXPECT_EQ(db->token_usage("00000000000000a1", 0)->active_jobs, 2);
}

TEST_P(BatchTest, EveryStepIsAudited) {
  db->set_actor({"ann", ""});
  BatchJob b = make(batch());
  ASSERT_TRUE(db->cancel_batch(b.job.id, "scancel"));
  auto acts = actions();
  EXPECT_EQ(acts, (std::vector<std::string>{"ann batch.submit", "ann batch.cancel"}));
}

// Migration 9 rebuilds SQLite's jobs table: the jobs a database already
// holds keep their ids and states, become `grade` jobs, and the next job,
// a batch one included, takes a fresh id above every earlier one.
TEST_P(BatchTest, Migration9KeepsEveryJobAndItsIdsAndNeverReusesOne) {
  const std::string at = fresh_database();
  auto conn = raw_at(at);
  ASSERT_TRUE(conn);
  auto old = sql::migrate(*conn, migrations().first(8));
  ASSERT_TRUE(old) << old.error().message;
  ASSERT_EQ(*old, 8);
  conn->exec("INSERT INTO submissions(kernel_id, submitter_id, package_path, sha256, created_at, updated_at, state) "
             "VALUES ('cuda/softmax', 'ann', '/u/x', $1, 1, 1, 'queued')",
             {kSha});
  for (int i = 0; i < 3; ++i)
    conn->exec("INSERT INTO jobs(submission_id, state, max_attempts, created_at) VALUES (1, $1, 3, 1)",
               {std::string(i < 2 ? "failed" : "queued")});
  conn.reset();
  auto opened = try_open(at);
  ASSERT_TRUE(opened) << opened.error().message;
  auto& d = **opened;
  EXPECT_EQ(d.schema_version(), migrations().back().version);
  for (int id = 1; id <= 3; ++id) {
    auto j = d.get_job(id);
    ASSERT_TRUE(j) << j.error().message;
    EXPECT_EQ(j->kind, "grade");
    EXPECT_EQ(j->submission_id, 1);
  }
  EXPECT_EQ(d.get_job(3)->state, State::queued);
  auto b = d.create_batch(batch());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->job.id, 4);
  // The schema holds the kinds apart: a graded job needs a submission, a batch job has none.
  auto c = raw_at(at);
  EXPECT_ANY_THROW(c->exec("INSERT INTO jobs(submission_id, state, max_attempts, created_at, kind) "
                           "VALUES (NULL, 'queued', 3, 1, 'grade')"));
  EXPECT_ANY_THROW(c->exec("INSERT INTO jobs(submission_id, state, max_attempts, created_at, kind) "
                           "VALUES (1, 'failed', 3, 1, 'batch')"));
}

}  // namespace
}  // namespace kzoo::store
