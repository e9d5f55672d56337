// Evidence retention (evidence_retention.hpp, KernelRepo::expire_job_evidence
// and pack): which jobs -- graded and users' batch jobs -- lose their refs/jobs
// evidence after keep_days, on both engines, and what deleting and packing do
// to a real repository.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "kzoo/store/evidence_retention.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_fixture.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

constexpr UnixMs kDay = 86'400'000;

class EvidenceRetentionTest : public StateTest {
 protected:
  // A job of a `kind` submission, claimed and finished with `outcome`.
  std::int64_t ended(Outcome outcome, const std::string& kind = "submission") {
    NewSubmission n{"cuda/softmax", "alice", "", "/u/x.tar.gz", kSha};
    n.kind = kind;
    auto s = db->create_submission(n);
    EXPECT_TRUE(s) << s.error().message;
    auto j = db->enqueue(s->id, 3);
    EXPECT_TRUE(j) << j.error().message;
    auto c = db->claim_job("w", 60);
    EXPECT_TRUE(c && *c && (*c)->id == j->id);
    Completion done{outcome, {}, {}, {"why"}, outcome == Outcome::accepted ? kCommit : ""};
    EXPECT_TRUE(db->complete(j->id, "w", done));
    return j->id;
  }
  std::int64_t cancelled() {
    Job j = queued();
    EXPECT_TRUE(db->cancel(j.submission_id, "withdrawn"));
    return j.id;
  }
  // {submission, job}: a submission graded to `outcome`.
  std::pair<std::int64_t, std::int64_t> decided(Outcome outcome) {
    const std::int64_t job = ended(outcome);
    return {db->get_job(job)->submission_id, job};
  }
  // An outsider's submission, held for a maintainer: not decided.
  std::int64_t held_submission() {
    auto s = db->create_submission({"cuda/softmax", "olga", "", "/u/x.tar.gz", kSha});
    EXPECT_TRUE(s) << s.error().message;
    EXPECT_TRUE(db->enqueue(s->id, 3, true));
    return s->id;
  }

  // Users' batch jobs (batch.hpp).
  BatchJob batch() {
    NewBatch b;
    b.owner = "ann";
    b.token_id = "00000000000000a1";
    b.name = b.script = "job.sbatch";
    b.script_text = "#!/bin/bash\necho hi\n";
    b.partition = "main";
    b.time_s = 600;
    b.cpus = 1;
    b.memory_mb = 1024;
    b.base_commit = kCommit;
    b.package_path = "/uploads/b.tar.gz";
    b.sha256 = kSha;
    auto r = db->create_batch(b);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : BatchJob{};
  }
  // A batch job run to `end_state`, leaving a result commit on refs/jobs/<id>, not judged yet.
  std::int64_t batch_ended(const std::string& end_state) {
    const std::int64_t id = batch().job.id;
    auto c = db->claim_job("w", 60);
    EXPECT_TRUE(c && *c && (*c)->id == id);
    BatchEnd e;
    e.end_state = end_state;
    e.exit_code = end_state == "COMPLETED" ? 0 : 1;
    e.elapsed_ms = 1000;
    e.result_commit = std::string(40, 'c');
    auto f = db->finish_batch(id, "w", e);
    EXPECT_TRUE(f) << f.error().message;
    return id;
  }
  // The server judged its result as a push, which became `submissions` (none: refused).
  void judged(std::int64_t batch_id, const std::vector<std::int64_t>& submissions) {
    ASSERT_TRUE(db->begin_judgement(batch_id));
    nlohmann::json review = {{"ok", !submissions.empty()}, {"messages", nlohmann::json::array()},
                             {"submissions", nlohmann::json::array()}};
    for (auto id : submissions)
      review["submissions"].push_back({{"id", id}, {"job", 0}, {"kernel", "cuda/softmax"}, {"held", false}});
    ASSERT_TRUE(db->record_judgement(batch_id, review));
  }
  std::int64_t batch_cancelled() {
    const std::int64_t id = batch().job.id;
    EXPECT_TRUE(db->cancel_batch(id, "scancel by ann"));
    return id;
  }
};
KZOO_ON_BOTH_ENGINES(EvidenceRetentionTest);

TEST_P(EvidenceRetentionTest, OnlyRejectedFailedAndCancelledJobsOlderThanKeepDaysExpire) {
  const UnixMs t0 = now;
  const std::int64_t accepted_old = ended(Outcome::accepted);
  const std::int64_t rejected_old = ended(Outcome::rejected);
  const std::int64_t failed_old = ended(Outcome::failed);
  const std::int64_t cancelled_old = cancelled();
  const std::int64_t baseline_old = ended(Outcome::rejected, "baseline");
  now = t0 + 20 * kDay;
  const std::int64_t rejected_recent = ended(Outcome::rejected);
  Job waiting = queued();
  (void)waiting;

  auto sel = select_expired_evidence(*db, t0 + 31 * kDay, 30);
  ASSERT_TRUE(sel) << sel.error().message;
  EXPECT_EQ(sel->expired, (std::vector<std::int64_t>{rejected_old, failed_old, cancelled_old}));
  EXPECT_EQ(sel->kept_recent, 1) << "job " << rejected_recent << " ended 11 days before";
  EXPECT_EQ(sel->kept_baselines, 1) << "the board reads baseline " << baseline_old;
  EXPECT_EQ(sel->cutoff, t0 + 1 * kDay);
  EXPECT_EQ(std::count(sel->expired.begin(), sel->expired.end(), accepted_old), 0) << "accepted evidence stays forever";

  auto later = select_expired_evidence(*db, t0 + 51 * kDay, 30);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->expired.size(), 4u) << "the recent rejection ages out too";
  EXPECT_EQ(later->kept_recent, 0);
}

TEST_P(EvidenceRetentionTest, AJobEndedExactlyAtTheCutoffIsKept) {
  const UnixMs t0 = now;
  ended(Outcome::rejected);
  auto sel = select_expired_evidence(*db, t0 + 30 * kDay, 30);
  ASSERT_TRUE(sel);
  EXPECT_TRUE(sel->expired.empty());
  EXPECT_EQ(sel->kept_recent, 1);
}

TEST_P(EvidenceRetentionTest, KeepDaysOutOfRangeIsRefusedWithTheRange) {
  for (int days : {0, -1, 36'501}) {
    auto sel = select_expired_evidence(*db, now, days);
    ASSERT_FALSE(sel) << days;
    EXPECT_EQ(sel.error().kind, StateError::invalid);
    EXPECT_NE(sel.error().message.find("1 to 36500"), std::string::npos) << sel.error().message;
  }
}

TEST_P(EvidenceRetentionTest, ThousandsOfJobsArePagedThrough) {
  const UnixMs t0 = now;
  // More than one page of 1000: the scan must not stop at the first.
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 1'005; ++i) ids.push_back(cancelled());
  auto sel = select_expired_evidence(*db, t0 + 40 * kDay, 30);
  ASSERT_TRUE(sel) << sel.error().message;
  EXPECT_EQ(sel->expired, ids);
}

TEST_P(EvidenceRetentionTest, BatchJobsLoseTheirResultKeepDaysAfterTheyEndUnlessItBecameAnAcceptedSubmission) {
  const UnixMs t0 = now;
  const std::int64_t refused = batch_ended("COMPLETED");  // exit 0, but its change was refused
  judged(refused, {});
  const std::int64_t failed = batch_ended("FAILED");
  judged(failed, {});
  const std::int64_t cancelled = batch_cancelled();
  const std::int64_t rejected = batch_ended("COMPLETED");
  const auto rejected_sub = decided(Outcome::rejected);
  judged(rejected, {rejected_sub.first});
  const std::int64_t accepted = batch_ended("COMPLETED");
  const auto other_sub = decided(Outcome::rejected);
  const auto accepted_sub = decided(Outcome::accepted);
  judged(accepted, {other_sub.first, accepted_sub.first});
  const std::int64_t held = batch_ended("COMPLETED");
  const std::int64_t held_sub = held_submission();
  judged(held, {held_sub});
  const std::int64_t unjudged = batch_ended("COMPLETED");
  now = t0 + 20 * kDay;
  const std::int64_t recent = batch_ended("FAILED");
  judged(recent, {});
  const std::int64_t running = batch().job.id;
  ASSERT_TRUE(db->claim_job("w", 60));
  const std::int64_t waiting = batch().job.id;

  auto sel = select_expired_evidence(*db, t0 + 31 * kDay, 30);
  ASSERT_TRUE(sel) << sel.error().message;
  // The graded jobs of the rejected submissions age out as graded jobs do.
  EXPECT_EQ(sel->expired, (std::vector<std::int64_t>{refused, failed, cancelled, rejected, rejected_sub.second,
                                                     other_sub.second}));
  EXPECT_EQ(sel->expired_batch, 4);
  EXPECT_EQ(sel->kept_batch_accepted, 1) << "job " << accepted << ": submission " << accepted_sub.first
                                         << " on the board came from its result";
  EXPECT_EQ(sel->kept_batch_pending, 2) << "job " << held << "'s submission is held, job " << unjudged
                                        << " is not judged yet";
  EXPECT_EQ(sel->kept_recent, 1) << "job " << recent << " ended 11 days before";
  for (auto id : {running, waiting}) EXPECT_EQ(std::count(sel->expired.begin(), sel->expired.end(), id), 0) << id;

  // Once the held submission is decided (withdrawn here) and the last result
  // judged, nothing keeps them: their jobs ended 31 days ago.
  ASSERT_TRUE(db->cancel(held_sub, "withdrawn"));
  judged(unjudged, {});
  auto later = select_expired_evidence(*db, t0 + 31 * kDay, 30);
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_EQ(later->expired_batch, 6);
  EXPECT_EQ(later->kept_batch_pending, 0);
  EXPECT_EQ(later->kept_batch_accepted, 1) << "kept forever";
  for (auto id : {held, unjudged}) EXPECT_EQ(std::count(later->expired.begin(), later->expired.end(), id), 1) << id;
  EXPECT_EQ(std::count(later->expired.begin(), later->expired.end(), accepted), 0);
}

TEST_P(EvidenceRetentionTest, ThousandsOfBatchJobsArePagedThrough) {
  const UnixMs t0 = now;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 1'005; ++i) ids.push_back(batch_cancelled());
  auto sel = select_expired_evidence(*db, t0 + 40 * kDay, 30);
  ASSERT_TRUE(sel) << sel.error().message;
  EXPECT_EQ(sel->expired, ids);
  EXPECT_EQ(sel->expired_batch, 1'005);
}

class EvidenceExpiryRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(tmp.path() / "catalog/k/src");
    std::ofstream(tmp.path() / "catalog/.kernel_data") << "";
    std::ofstream(tmp.path() / "catalog/k/src/kernel.py") << "x = 1\n";
    auto r = KernelRepo::init_from_catalog(tmp / "catalog", tmp / "repo");
    ASSERT_TRUE(r) << r.error().message;
    repo.emplace(std::move(*r));
    for (const char* id : {"1", "2", "3"})
      ASSERT_TRUE(repo->record_job_evidence(id, {{"stderr.log", std::string("job ") + id + "\n"}}));
  }
  std::string refs() { return testing::git(tmp / "repo", "for-each-ref --format='%(refname)' refs/jobs").out; }

  testing::TempDir tmp;
  std::optional<KernelRepo> repo;
};

TEST_F(EvidenceExpiryRepoTest, ExpiringDeletesOnlyTheNamedRefsAndSkipsMissingOnes) {
  auto n = repo->expire_job_evidence({"1", "3", "404"});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 2u) << "404 never had evidence";
  EXPECT_EQ(refs(), "refs/jobs/2\n");
  EXPECT_EQ(*repo->read_job_evidence("2"), (std::map<std::string, std::string>{{"stderr.log", "job 2\n"}}));
  EXPECT_FALSE(repo->read_job_evidence("1"));
  auto again = repo->expire_job_evidence({"1", "3"});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0u) << "a second pass finds nothing left to delete";
}

TEST_F(EvidenceExpiryRepoTest, ABadJobIdDeletesNothing) {
  auto n = repo->expire_job_evidence({"1", "../heads/main"});
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("^[A-Za-z0-9_-]{1,128}$"), std::string::npos) << n.error().message;
  EXPECT_EQ(refs(), "refs/jobs/1\nrefs/jobs/2\nrefs/jobs/3\n");
}

TEST_F(EvidenceExpiryRepoTest, PackingKeepsEveryRefAndLeavesARepositoryFsckAccepts) {
  const std::string main_before = *repo->head();
  auto loose = [&] { return testing::git(tmp / "repo", "count-objects -v").out; };
  auto p = repo->pack();
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*repo->head(), main_before);
  EXPECT_EQ(refs(), "refs/jobs/1\nrefs/jobs/2\nrefs/jobs/3\n");
  EXPECT_EQ(loose().find("count: 0\n"), 0u) << "every object is in a pack: " << loose();
  EXPECT_EQ(testing::git(tmp / "repo", "config gc.auto").out, "0\n") << "no gc of git's own choosing";
  EXPECT_EQ(testing::git(tmp / "repo", "config receive.autogc").out, "false\n");
  auto fsck = testing::git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;

  // Refs in packed-refs are deleted as well as loose ones.
  auto n = repo->expire_job_evidence({"2"});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(refs(), "refs/jobs/1\nrefs/jobs/3\n");
  EXPECT_EQ(*repo->read_job_evidence("3"), (std::map<std::string, std::string>{{"stderr.log", "job 3\n"}}));
  ASSERT_TRUE(repo->pack());
  // Job 2's commit, tree and blob are unreachable now: gc leaves them loose for
  // the two weeks' grace (gc.pruneExpire) instead of deleting them at once.
  EXPECT_EQ(loose().find("count: 3\n"), 0u) << loose();
  fsck = testing::git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
}

}  // namespace
}  // namespace kzoo::store
