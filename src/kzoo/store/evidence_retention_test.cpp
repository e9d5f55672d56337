// Evidence retention (evidence_retention.hpp, KernelRepo::expire_job_evidence
// and pack): which jobs lose their refs/jobs evidence after keep_days, on both
// engines, and what deleting and packing do to a real repository.
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
