// Users' batch jobs over HTTP (batch_api.cpp), against a real `kzoo serve`:
// sbatch's answers as Slurm prints them, and every hostile or mistaken
// request refused with a message naming the field, the rule and the fix,
// changing nothing: a submit directory that is no tarball, a script outside
// it, a time over the partition's limit, a commit the server has not got;
// an outsider's job held until a maintainer releases it; a stranger's
// scancel; /slurm.sh only to a signed-in caller, never cached.
#include <gtest/gtest.h>

#include <fstream>

#include "kzoo/server/hostile_fixture.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::server::testing {
namespace {

using nlohmann::json;

class HostileBatchTest : public HostileFixture {
 protected:
  void SetUp() override {
    HostileFixture::SetUp();
    repo_dir_ = tmp_ / "data/kernel_data.git";
    head_ = store::testing::git(repo_dir_, "rev-parse HEAD").out.substr(0, 40);
    auto a = store::testing::sh("git -C " + store::testing::quote(repo_dir_) + " archive --format=tar.gz HEAD > " +
                                store::testing::quote(tmp_ / "submit.tar.gz"));
    ASSERT_EQ(a.rc, 0) << a.out;
    std::ifstream in(tmp_ / "submit.tar.gz", std::ios::binary);
    submit_dir_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // sbatch as the /slurm.sh wrapper sends it; `fields` override the defaults.
  Answer sbatch(const std::string& token, const std::map<std::string, std::string>& fields = {},
                const std::optional<std::string>& file = std::nullopt, const std::string& query = "") {
    std::map<std::string, std::string> f = {{"script", "job.sbatch"},
                                            {"script_text", "#!/bin/bash\n#SBATCH --time=00:20:00\necho hi\n"},
                                            {"base_commit", head_}};
    for (const auto& [k, v] : fields) {
      if (v == "<absent>") f.erase(k);
      else f[k] = v;
    }
    httplib::Client c(svc_->url());
    c.set_read_timeout(30, 0);
    c.set_bearer_token_auth(token);
    auto r = c.Post("/api/batch" + query, multipart(f, file.value_or(submit_dir_), "submit.tar.gz"),
                    "multipart/form-data; boundary=XB");
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.text = r->body;
    a.body = json::parse(r->body, nullptr, false);
    return a;
  }

  std::size_t batch_count() { return db_->list_batch({std::nullopt})->size(); }

  // Refused with `status`, naming `field`, the message holding `words`, and nothing stored.
  void expect_refused(const Answer& a, int status, const std::string& field, const std::string& words,
                      const std::string& before) {
    EXPECT_EQ(a.status, status) << a.text;
    auto e = error_of(a);
    EXPECT_EQ(e.value("field", ""), field) << a.text;
    EXPECT_NE(e.value("message", "").find(words), std::string::npos) << a.text;
    EXPECT_EQ(snapshot(), before);
    EXPECT_EQ(batch_count(), 0u);
  }

  std::string repo_dir_, head_, submit_dir_;
};

TEST_F(HostileBatchTest, SbatchAnswersAsSlurmDoesAndTheJobWaitsInLine) {
  auto a = sbatch(member_, {}, std::nullopt, "?format=text");
  ASSERT_EQ(a.status, 201) << a.text;
  ASSERT_EQ(batch_count(), 1u);
  const auto id = db_->list_batch({std::nullopt})->front().job.id;
  EXPECT_EQ(a.text, fmt::format("Submitted batch job {}\n", id));
  auto one = send("GET", fmt::format("/api/batch/{}", id), member_);
  ASSERT_EQ(one.status, 200) << one.text;
  EXPECT_EQ(one.body["state"], "PENDING");
  EXPECT_EQ(one.body["reason"], "Priority");
  // #SBATCH lines are the wrapper's to read (it sends --time as a field): none was sent, so the default.
  EXPECT_EQ(one.body["time_limit"], "00:10:00");
  EXPECT_EQ(one.body["user"], "ann");
  EXPECT_EQ(one.body["result_ref"], fmt::format("refs/jobs/{}", id));
  auto q = send("GET", "/api/batch?format=squeue", member_);
  EXPECT_NE(q.text.find("NODELIST(REASON)"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("ann PD"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("(Priority)"), std::string::npos) << q.text;
  auto s = send("GET", fmt::format("/api/batch/{}?format=sacct", id), member_);
  EXPECT_NE(s.text.find("JobID           JobName  Partition      State ExitCode    Elapsed"), std::string::npos)
      << s.text;
  EXPECT_NE(s.text.find("PENDING"), std::string::npos) << s.text;
  // Another member's squeue does not list ann's job.
  auto none = send("GET", "/api/batch", outsider_);
  EXPECT_TRUE(none.body["jobs"].empty()) << none.text;
}

TEST_F(HostileBatchTest, NoTimeIsThePartitionsDefaultAndATimeOverItsLimitIsRefusedNamingTheFix) {
  ASSERT_EQ(sbatch(member_).status, 201);  // --time empty: the default
  auto b = db_->list_batch({std::nullopt})->front();
  EXPECT_EQ(b.time_s, 600);
  EXPECT_EQ(b.partition, "main");
  EXPECT_EQ(b.cpus, 1);
  EXPECT_EQ(b.memory_mb, 8192);
  ASSERT_TRUE(db_->cancel_batch(b.job.id, "test"));
  const std::size_t had = batch_count();
  const std::string before = snapshot();
  auto a = sbatch(member_, {{"time", "02:00:00"}});
  EXPECT_EQ(a.status, 400) << a.text;
  auto e = error_of(a);
  EXPECT_EQ(e.value("field", ""), "time");
  EXPECT_EQ(e.value("option", ""), "--time");
  EXPECT_NE(e.value("message", "").find("time limit of 01:00:00"), std::string::npos) << a.text;
  EXPECT_NE(e.value("message", "").find("#SBATCH --time=01:00:00"), std::string::npos) << a.text;
  auto t = sbatch(member_, {{"time", "02:00:00"}}, std::nullopt, "?format=text");
  EXPECT_EQ(t.text.rfind("sbatch: error: Batch job submission failed: --time=02:00:00", 0), 0u) << t.text;
  EXPECT_EQ(sbatch(member_, {{"cpus_per_task", "64"}}).status, 400);
  EXPECT_EQ(sbatch(member_, {{"mem", "1T"}}).status, 400);
  EXPECT_EQ(sbatch(member_, {{"gpus", "1"}}).status, 400);
  EXPECT_EQ(sbatch(member_, {{"partition", "gpu"}}).status, 400);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(batch_count(), had);
}

TEST_F(HostileBatchTest, ASubmitDirectoryThatIsNoCleanTarballIsRefusedAndNothingStored) {
  const std::string before = snapshot();
  expect_refused(sbatch(member_, {}, std::string("not a tarball at all")), 422, "submit", "tar.not-gzip", before);
  // A gzip that is no tar, and a tar holding a symlink.
  const std::string d = tmp_ / "evil";
  ASSERT_EQ(store::testing::sh("mkdir -p " + d + " && ln -s /etc/passwd " + d + "/link && tar -czf " + d +
                               ".tar.gz -C " + d + " .").rc, 0);
  std::ifstream in(d + ".tar.gz", std::ios::binary);
  std::string evil((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_refused(sbatch(member_, {}, evil), 422, "submit", "tar.symlink", before);
}

TEST_F(HostileBatchTest, AScriptOutsideTheSubmitDirectoryOrMissingIsRefused) {
  const std::string before = snapshot();
  expect_refused(sbatch(member_, {{"script", "../../etc/job.sbatch"}}), 400, "script", "plain name", before);
  expect_refused(sbatch(member_, {{"script", "/abs/job.sbatch"}}), 400, "script", "absolute", before);
  expect_refused(sbatch(member_, {{"script_text", "<absent>"}}), 400, "script_text", "batch script", before);
  expect_refused(sbatch(member_, {{"base_commit", std::string(40, 'f')}}), 422, "base_commit", "push it first", before);
  expect_refused(sbatch(member_, {{"base_commit", "HEAD"}}), 400, "base_commit", "40 lowercase hex", before);
  expect_refused(sbatch(member_, {{"evil", "x"}}), 400, "evil", "unknown form field", before);
  expect_refused(sbatch(member_, {{"route", "Bad Route"}}), 400, "route", "route name", before);
  expect_refused(sbatch(member_, {{"job_name", "two\nlines"}}), 400, "job_name", "one line", before);
  EXPECT_EQ(sbatch("").status, 401);
  EXPECT_EQ(sbatch(runner_).status, 403);
}

TEST_F(HostileBatchTest, AnOutsidersJobIsHeldUntilAMaintainerReleasesIt) {
  ASSERT_EQ(sbatch(outsider_).status, 201);
  const auto id = db_->list_batch({std::nullopt})->front().job.id;
  auto one = send("GET", fmt::format("/api/batch/{}", id), outsider_);
  EXPECT_EQ(one.body["reason"], "JobHeldAdmin") << one.text;
  EXPECT_NE(send("GET", "/api/batch?format=squeue", outsider_).text.find("(JobHeldAdmin)"), std::string::npos);
  auto held = send("GET", "/api/jobs/held", maintainer_);
  EXPECT_NE(held.text.find("batch:job.sbatch"), std::string::npos) << held.text;
  EXPECT_EQ(send("POST", fmt::format("/api/jobs/{}/release", id), member_).status, 403);
  ASSERT_EQ(send("POST", fmt::format("/api/jobs/{}/release", id), maintainer_).status, 200);
  auto after = send("GET", fmt::format("/api/batch/{}", id), outsider_);
  EXPECT_EQ(after.body["reason"], "Priority") << after.text;
  // A runner now claims it, with its script and limits instead of a submission.
  auto claim = send("POST", "/api/runner/claim", runner_, {{"worker", "w1"}});
  ASSERT_EQ(claim.status, 200) << claim.text;
  EXPECT_EQ(claim.body["job"]["kind"], "batch");
  EXPECT_EQ(claim.body["batch"]["script_text"], "#!/bin/bash\n#SBATCH --time=00:20:00\necho hi\n");
}

TEST_F(HostileBatchTest, OnlyItsOwnerOrAMaintainerCancelsAJob) {
  ASSERT_EQ(sbatch(member_).status, 201);
  const auto id = db_->list_batch({std::nullopt})->front().job.id;
  const std::string before = snapshot();
  auto stranger = send("POST", fmt::format("/api/batch/{}/cancel", id), outsider_);
  EXPECT_EQ(stranger.status, 403) << stranger.text;
  EXPECT_NE(error_of(stranger).value("message", "").find("belongs to ann"), std::string::npos) << stranger.text;
  auto text = send("POST", fmt::format("/api/batch/{}/cancel?format=text", id), outsider_);
  EXPECT_EQ(text.text.rfind(fmt::format("scancel: error: Kill job error on job id {}", id), 0), 0u) << text.text;
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(db_->get_batch(id)->job.state, store::State::queued);
  auto mine = send("POST", fmt::format("/api/batch/{}/cancel?format=text", id), member_);
  EXPECT_EQ(mine.status, 200) << mine.text;
  EXPECT_EQ(mine.text, "");
  EXPECT_EQ(db_->get_batch(id)->end_state, "CANCELLED");
  EXPECT_EQ(send("POST", fmt::format("/api/batch/{}/cancel", id), member_).status, 409);
  EXPECT_EQ(send("POST", "/api/batch/999999/cancel", member_).status, 404);
  auto s = send("GET", fmt::format("/api/batch/{}?format=sacct", id), member_);
  EXPECT_NE(s.text.find("CANCELLED"), std::string::npos) << s.text;
}

TEST_F(HostileBatchTest, SlurmShIsServedOnlyToASignedInCallerWithItsTokenAndNeverCached) {
  httplib::Client c(svc_->url());
  auto anon = c.Get("/slurm.sh");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->status, 401);
  c.set_bearer_token_auth(member_);
  auto r = c.Get("/slurm.sh");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");
  EXPECT_NE(r->body.find("KZOO_SLURM_TOKEN='" + member_ + "'"), std::string::npos);
  EXPECT_NE(r->body.find(svc_->url()), std::string::npos);
  for (const char* f : {"sbatch() {", "squeue() {", "sacct() {", "scancel() {"})
    EXPECT_NE(r->body.find(f), std::string::npos) << f;
  EXPECT_EQ(store::testing::sh("printf '%s' " + store::testing::quote(r->body) + " | bash -n").rc, 0);
  // A Host header that would land in the script as shell is refused.
  auto evil = c.Get("/slurm.sh", {{"Host", "x$(touch /tmp/pwned)"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 400);
}

}  // namespace
}  // namespace kzoo::server::testing
