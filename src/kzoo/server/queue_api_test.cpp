// The queue, visible: GET /api/submissions and GET /api/jobs on a real server,
// a real SQLite database and a real repository. What waits for a worker shows
// its place in line, what waits for a person says so, what runs names its
// worker and lease; the lists page without gaps; every query the lists do not
// take is a 400 that names the parameter and changes nothing.
#include <gtest/gtest.h>
#include <httplib.h>

#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
using nlohmann::json;

class QueueApiTest : public ::testing::Test {
 protected:
  void SetUp() override { start(false); }

  void start(bool reads_need_token) {
    svc_.reset();
    write_catalog(tmp_.path() / "catalog");
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp_ / "data";
    cfg.catalog = tmp_ / "catalog";
    cfg.listen_port = 0;
    cfg.threads = 4;
    cfg.require_token_for_reads = reads_need_token;
    svc_ = std::make_unique<RunningService>(cfg);
    auto db = store::open_state(store::default_state_url(tmp_ / "data"));
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
    if (!member_.empty()) return;
    ASSERT_TRUE(db_->add_user("mia", store::Role::maintainer));
    ASSERT_TRUE(db_->add_user("ann", store::Role::member));
    ASSERT_TRUE(db_->add_user("ola", store::Role::outsider));
    member_ = issue_token(*db_, "ann", store::TokenKind::person, "");
    outsider_ = issue_token(*db_, "ola", store::TokenKind::person, "");
    runner_ = issue_token(*db_, "mia", store::TokenKind::runner, "gpu-1");
  }

  Answer get(const std::string& path, const std::string& token = "") {
    auto a = http_get(svc_->url(), path, 30, token);
    EXPECT_TRUE(a) << a.error().message;
    return a ? *a : Answer{};
  }

  std::int64_t submit(const std::string& token) {
    auto tgz = package::package_tarball_bytes(tree_of(package_files()), kKernelId);
    EXPECT_TRUE(tgz);
    auto a = upload_submission(
        svc_->url(), {{"kernel_id", kKernelId}, {"package_filename", "softmax.tar.gz"}, {"optimization_summary", "fused"}},
        *tgz, "softmax.tar.gz", {}, 120, token);
    EXPECT_TRUE(a && a->status == 202) << (a ? a->text : a.error().message);
    return a ? a->body.value("id", std::int64_t{0}) : 0;
  }

  // Everything a listing must leave as it was.
  std::string snapshot() {
    std::string s;
    store::SubmissionFilter f;
    f.limit = 1000;
    auto subs = db_->list_submissions(f);
    for (const auto& x : *subs) {
      s += fmt::format("sub {} {}\n", x.id, store::to_string(x.state));
      auto jobs = db_->jobs_of(x.id);
      for (const auto& j : *jobs)
        s += fmt::format(" job {} {} held={} owner={} att={}\n", j.id, store::to_string(j.state), j.held,
                         j.lease_owner, j.attempts);
    }
    s += fmt::format("audit {}\n", db_->audit_log({INT64_MAX, 1000, std::nullopt})->size());
    return s;
  }

  TempDir tmp_;
  std::unique_ptr<RunningService> svc_;
  std::unique_ptr<store::StateDb> db_;
  std::string member_, outsider_, runner_;
};

TEST_F(QueueApiTest, TheQueueShowsWhatWaitsForAWorkerWhatWaitsForAPersonAndWhatRunsWhere) {
  const auto first = submit(member_);
  const auto held = submit(outsider_);
  const auto second = submit(member_);
  const auto third = submit(member_);
  // A runner claims the oldest claimable job (the first one's).
  httplib::Client c(svc_->url());
  c.set_bearer_token_auth(runner_);
  auto claim = c.Post("/api/runner/claim", json{{"worker", "w1"}, {"lease_seconds", 600}}.dump(), "application/json");
  ASSERT_TRUE(claim && claim->status == 200) << (claim ? claim->body : "no answer");

  auto q = get("/api/jobs?state=active&after=0");
  ASSERT_EQ(q.status, 200) << q.text;
  ASSERT_EQ(q.body["jobs"].size(), 4u) << q.text;
  std::map<std::int64_t, json> by_sub;
  for (const auto& j : q.body["jobs"]) by_sub[j["submission_id"].get<std::int64_t>()] = j;
  EXPECT_EQ(q.body["jobs"][0]["submission_id"], first) << "after=0 lists in the order workers claim";

  const json& running = by_sub[first];
  EXPECT_EQ(running["state"], "running");
  EXPECT_TRUE(running["worker"].is_string() && running["worker"].get<std::string>().ends_with("/w1")) << running;
  EXPECT_TRUE(running["started_at"].is_string());
  EXPECT_TRUE(running["lease_expires_at"].is_string());
  EXPECT_TRUE(running["position"].is_null());

  const json& waiting = by_sub[held];
  EXPECT_EQ(waiting["state"], "queued");
  EXPECT_EQ(waiting["held"], true);
  EXPECT_EQ(waiting["hold_reason"], "JobHeldAdmin");
  EXPECT_EQ(waiting["submitter_id"], "ola");
  EXPECT_TRUE(waiting["position"].is_null()) << "a held job waits for a maintainer, not in the workers' line";

  EXPECT_EQ(by_sub[second]["position"], 1);
  EXPECT_EQ(by_sub[third]["position"], 2);
  EXPECT_EQ(by_sub[third]["kernel_id"], kKernelId);
  EXPECT_EQ(q.body["counts"], (json{{"queued", 2}, {"held", 1}, {"running", 1}}));

  // The same place in line on the submission's own document (kzoo submit --wait prints it).
  auto s = get(fmt::format("/api/submissions/{}", third));
  EXPECT_EQ(s.body["queue_position"], 2) << s.text;
  EXPECT_TRUE(get(fmt::format("/api/submissions/{}", held)).body["queue_position"].is_null());

  auto only_held = get("/api/jobs?state=held");
  ASSERT_EQ(only_held.body["jobs"].size(), 1u) << only_held.text;
  EXPECT_EQ(only_held.body["jobs"][0]["submission_id"], held);
  EXPECT_EQ(get("/api/jobs?state=running").body["jobs"].size(), 1u);
  EXPECT_EQ(get("/api/jobs?state=queued").body["jobs"].size(), 2u);
  EXPECT_EQ(get("/api/jobs?submitter=ola").body["jobs"].size(), 1u);
  EXPECT_EQ(get("/api/jobs?kernel=nobody/else").body["jobs"].size(), 0u);

  auto subs = get("/api/submissions?submitter=ann&state=queued");
  ASSERT_EQ(subs.status, 200) << subs.text;
  ASSERT_EQ(subs.body["submissions"].size(), 2u);
  EXPECT_EQ(subs.body["submissions"][0]["id"], third) << "newest first";
  EXPECT_EQ(get("/api/submissions?state=running").body["submissions"][0]["id"], first);
  for (const auto& x : get("/api/submissions").body["submissions"]) {
    EXPECT_FALSE(x.contains("package_path")) << "where the server keeps uploads is its own business";
    EXPECT_FALSE(x.contains("token_id"));
  }
}

TEST_F(QueueApiTest, PagesFollowTheirNextLinkToTheEndWithoutGapsOrRepeats) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(submit(member_));
  std::vector<std::int64_t> seen;
  std::string path = "/api/submissions?kernel=" + query_escape(kKernelId) + "&limit=2";
  for (int page = 0; page < 10 && !path.empty(); ++page) {
    auto a = get(path);
    ASSERT_EQ(a.status, 200) << path << ": " << a.text;
    for (const auto& s : a.body["submissions"]) seen.push_back(s["id"]);
    path = a.body["next"].is_string() ? a.body["next"].get<std::string>() : "";
  }
  EXPECT_EQ(seen, std::vector<std::int64_t>(ids.rbegin(), ids.rend()));

  std::vector<std::int64_t> jobs_seen;
  path = "/api/jobs?after=0&limit=2&state=queued";
  for (int page = 0; page < 10 && !path.empty(); ++page) {
    auto a = get(path);
    ASSERT_EQ(a.status, 200) << path << ": " << a.text;
    for (const auto& j : a.body["jobs"]) {
      jobs_seen.push_back(j["submission_id"]);
      EXPECT_EQ(j["position"], static_cast<std::int64_t>(jobs_seen.size())) << "claim order, position by position";
    }
    path = a.body["next"].is_string() ? a.body["next"].get<std::string>() : "";
  }
  EXPECT_EQ(jobs_seen, ids);
}

TEST_F(QueueApiTest, EveryQueryTheListsDoNotTakeIsA400NamingTheParameterAndChangesNothing) {
  submit(member_);
  submit(outsider_);
  const std::string before = snapshot();
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"/api/jobs?limit=0", "limit"},
      {"/api/jobs?limit=-1", "limit"},
      {"/api/jobs?limit=1001", "limit"},
      {"/api/jobs?limit=99999999999999999999999", "limit"},
      {"/api/jobs?limit=ten", "limit"},
      {"/api/jobs?limit=", "limit"},
      {"/api/jobs?limit=5&limit=6", "limit"},
      {"/api/jobs?before=0", "before"},
      {"/api/jobs?before=-3", "before"},
      {"/api/jobs?after=-1", "after"},
      {"/api/jobs?after=1&before=9", "after"},
      {"/api/jobs?state=sleeping", "state"},
      {"/api/jobs?state=queued%27%20OR%201=1--", "state"},
      {"/api/jobs?page=-1", "page"},
      {"/api/jobs?sate=queued", "sate"},
      {"/api/submissions?state=held", "state"},
      {"/api/submissions?kind=evil", "kind"},
      {"/api/submissions?after=0", "after"},
      {"/api/submissions?limit=1000000", "limit"},
      {"/api/submissions?kernel=" + std::string(300, 'k'), "kernel"},
  };
  for (const auto& [path, field] : hostile) {
    auto a = get(path);
    EXPECT_EQ(a.status, 400) << path << ": " << a.text;
    EXPECT_EQ(a.body["error"]["code"], "invalid_query") << path;
    EXPECT_EQ(a.body["error"]["field"], field) << path << ": " << a.text;
    EXPECT_NE(a.body["error"]["message"].get<std::string>().find(field), std::string::npos) << a.text;
  }
  // A kernel or submitter name that is nobody's is no error: it lists nothing.
  auto none = get("/api/submissions?submitter=%27%3B%20DROP%20TABLE%20jobs%3B--");
  EXPECT_EQ(none.status, 200) << none.text;
  EXPECT_TRUE(none.body["submissions"].empty());
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(get("/api/jobs").body["jobs"].size(), 2u) << "the tables are all still there";
}

TEST_F(QueueApiTest, AJobNoRunnerThatTriedCouldTakeSaysWhyItWaits) {
  // The kernel's task asks for compute capability 9.0 (the catalog's tasks/ beside its kernel_data).
  write_file(tmp_.path() / "tasks/softmax/task.json", R"({"name": "softmax", "environment": {"min_compute_capability": "9.0"}})");
  const auto id = submit(member_);
  httplib::Client c(svc_->url());
  c.set_bearer_token_auth(runner_);
  auto older = c.Post("/api/runner/claim", json{{"worker", "a100"}, {"compute_capability", "8.0"}}.dump(), "application/json");
  ASSERT_TRUE(older);
  EXPECT_EQ(older->status, 204) << "an 8.0 device takes nothing that needs 9.0: " << older->body;
  auto q = get("/api/jobs?state=queued");
  ASSERT_EQ(q.body["jobs"].size(), 1u) << q.text;
  const json& j = q.body["jobs"][0];
  EXPECT_EQ(j["requires_compute_capability"], "9.0");
  const std::string why = j["passed_over"].is_string() ? j["passed_over"].get<std::string>() : "";
  EXPECT_NE(why.find("/a100 (compute capability 8.0)"), std::string::npos) << j;
  EXPECT_NE(why.find("lacks compute capability 9.0"), std::string::npos) << j;
  auto bad = c.Post("/api/runner/claim", json{{"worker", "x"}, {"compute_capability", "nine"}}.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["field"], "compute_capability");
  auto fits = c.Post("/api/runner/claim", json{{"worker", "h200"}, {"compute_capability", "9.0"}}.dump(), "application/json");
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->status, 200) << fits->body;
  EXPECT_EQ(json::parse(fits->body)["submission"]["id"], id);
}

TEST_F(QueueApiTest, AJobNeedingMoreGpusThanTheRunnersThatTriedHadSaysWhatWouldTakeIt) {
  // The kernel's task asks for two GPUs of one node.
  write_file(tmp_.path() / "tasks/softmax/task.json",
             R"({"name": "softmax", "environment": {"min_compute_capability": "9.0", "gpus": 2}})");
  const auto id = submit(member_);
  httplib::Client c(svc_->url());
  c.set_bearer_token_auth(runner_);
  auto one = c.Post("/api/runner/claim", json{{"worker", "node-1"}, {"compute_capability", "9.0"}, {"gpus", 1}}.dump(),
                    "application/json");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 204) << "a node of one GPU takes nothing that needs two: " << one->body;
  auto q = get("/api/jobs?state=queued");
  ASSERT_EQ(q.body["jobs"].size(), 1u) << q.text;
  const json& j = q.body["jobs"][0];
  EXPECT_EQ(j["requires_gpus"], 2);
  EXPECT_EQ(j["requires_compute_capability"], "9.0");
  const std::string why = j["passed_over"].is_string() ? j["passed_over"].get<std::string>() : "";
  EXPECT_NE(why.find(fmt::format("job {}", j["id"].get<std::int64_t>())), std::string::npos) << j;
  EXPECT_NE(why.find("/node-1 (1 GPU)"), std::string::npos) << "the runner and what it had: " << j;
  EXPECT_NE(why.find("lacks 2 GPUs of one node"), std::string::npos) << j;
  EXPECT_EQ(why.find("compute capability"), std::string::npos) << "its capability was enough: " << j;
  EXPECT_NE(why.find("--gpus"), std::string::npos) << "the fix: " << j;
  auto shown = get(fmt::format("/api/submissions/{}", id));
  ASSERT_EQ(shown.status, 200) << shown.text;
  EXPECT_EQ(shown.body["jobs"][0]["passed_over"], j["passed_over"]) << "the submission's page says it too";
  for (const json& bad : {json(0), json(-2), json(1025), json(1.5), json("2")}) {
    auto refused = c.Post("/api/runner/claim", json{{"worker", "x"}, {"gpus", bad}}.dump(), "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << bad;
    EXPECT_EQ(json::parse(refused->body)["error"]["field"], "gpus") << bad;
  }
  EXPECT_EQ(get("/api/jobs?state=queued").body["jobs"].size(), 1u) << "a refused claim takes nothing";
  auto two = c.Post("/api/runner/claim", json{{"worker", "node-2"}, {"compute_capability", "9.0"}, {"gpus", 2}}.dump(),
                    "application/json");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 200) << two->body;
  EXPECT_EQ(json::parse(two->body)["submission"]["id"], id);
}

TEST_F(QueueApiTest, TheListsArePublicReadsUnlessTheServerRequiresATokenForReads) {
  submit(member_);
  for (const char* path : {"/api/submissions", "/api/jobs"}) EXPECT_EQ(get(path).status, 200) << path;
  start(true);
  for (const char* path : {"/api/submissions", "/api/jobs"}) {
    auto anon = get(path);
    EXPECT_EQ(anon.status, 401) << path;
    EXPECT_EQ(get(path, outsider_).status, 200) << path;
  }
}

}  // namespace
}  // namespace kzoo::server
