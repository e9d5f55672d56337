// Route x role x action: every mutating route of the API, asked by every
// kind of caller -- anonymous, member, non-member (outsider), an agent's
// token, a revoked token, an expired token, a maintainer, a runner token --
// on a real server, a real SQLite database and a real git repository. Each
// answer's status is checked, and where it is a refusal, that nothing
// changed: rows, holds, the audit trail, main, refs/jobs/*, uploads.
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "kzoo/access/token.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/jobs/wire.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
using nlohmann::json;
namespace fs = std::filesystem;

enum Who { anonymous, member, outsider, agent, revoked, expired, maintainer, runner, kWho };
const char* const kWhoName[] = {"anonymous", "member", "non-member", "agent token", "revoked token",
                                "expired token", "maintainer", "runner token"};

class AccessMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(std::function<void(ServerConfig&)> tweak) {
    svc_.reset();
    write_catalog(tmp_.path() / "catalog");
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp_ / "data";
    cfg.catalog = tmp_ / "catalog";
    cfg.listen_port = 0;
    cfg.threads = 4;
    if (tweak) tweak(cfg);
    svc_ = std::make_unique<RunningService>(cfg);
    auto db = store::open_state(store::default_state_url(tmp_ / "data"));
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
    if (tokens_[member].empty()) make_people();
  }

  std::string issue(const std::string& user, store::TokenKind kind, const std::string& label,
                    std::optional<store::UnixMs> expires = std::nullopt, store::TokenLimits limits = {}) {
    return server::testing::issue_token(*db_, user, kind, label, expires, limits);
  }

  void make_people() {
    ASSERT_TRUE(db_->add_user("mia", store::Role::maintainer));
    ASSERT_TRUE(db_->add_user("ann", store::Role::member));
    ASSERT_TRUE(db_->add_user("ola", store::Role::outsider));
    tokens_[member] = issue("ann", store::TokenKind::person, "");
    tokens_[outsider] = issue("ola", store::TokenKind::person, "");
    tokens_[agent] = issue("ann", store::TokenKind::agent, "claude");
    tokens_[revoked] = issue("ann", store::TokenKind::person, "");
    ASSERT_TRUE(db_->revoke_token(access::parse_token(tokens_[revoked])->id));
    tokens_[expired] = issue("mia", store::TokenKind::person, "", db_->now() - 1000);
    tokens_[maintainer] = issue("mia", store::TokenKind::person, "");
    tokens_[runner] = issue("mia", store::TokenKind::runner, "gpu-1");
    other_runner_ = issue("mia", store::TokenKind::runner, "gpu-2");
  }

  // One request, its headers folded into the answer's body for the checks.
  Answer send(const std::string& method, const std::string& path, const std::string& token, const json& body = nullptr,
              const std::string& raw_body = "", const std::string& content_type = "application/json") {
    httplib::Client c(svc_->url());
    if (!token.empty()) c.set_bearer_token_auth(token);
    httplib::Result r = method == "GET" ? c.Get(path)
                        : raw_body.empty() ? c.Post(path, body.is_null() ? "{}" : body.dump(), content_type)
                                           : c.Post(path, raw_body, content_type);
    EXPECT_TRUE(r) << method << " " << path;
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.text = r->body;
    a.body = json::parse(r->body, nullptr, false);
    if (!a.body.is_object()) return a;
    if (r->has_header("Retry-After")) a.body["retry_after_header"] = r->get_header_value("Retry-After");
    if (r->has_header("WWW-Authenticate")) a.body["www_authenticate"] = r->get_header_value("WWW-Authenticate");
    return a;
  }

  Answer submit(const std::string& token, std::map<std::string, std::string> extra = {}) {
    auto tgz = package::package_tarball_bytes(tree_of(package_files()), kKernelId);
    EXPECT_TRUE(tgz);
    std::map<std::string, std::string> f = {
        {"kernel_id", kKernelId}, {"package_filename", "softmax.tar.gz"}, {"optimization_summary", "fused"}};
    for (auto& [k, v] : extra) f[k] = v;
    return send("POST", "/api/submissions", token, nullptr, multipart(f, *tgz), "multipart/form-data; boundary=XB");
  }

  // Everything a refused request must leave as it was.
  std::string snapshot() {
    std::string s;
    store::SubmissionFilter f;
    f.limit = 1000;
    auto subs = db_->list_submissions(f);  // kept: a range-for over *temporary would dangle
    for (const auto& x : *subs) {
      s += fmt::format("sub {} {} {} {}\n", x.id, store::to_string(x.state), x.submitter_id, x.accepted_commit);
      auto jobs = db_->jobs_of(x.id);
      for (const auto& j : *jobs)
        s += fmt::format(" job {} {} held={} owner={} lease={} att={}\n", j.id, store::to_string(j.state), j.held,
                         j.lease_owner, j.lease_expires_at.value_or(0), j.attempts);
    }
    s += fmt::format("audit {}\n", db_->audit_log({INT64_MAX, 1000, std::nullopt})->size());
    s += fmt::format("tokens {}\n", db_->list_tokens(std::nullopt)->size());
    auto issues = db_->list_issues({.limit = 1000});
    for (const auto& i : *issues)
      s += fmt::format("issue {} {} {} comments={}\n", i.id, store::to_string(i.state), i.closed_by, i.comments);
    auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
    s += "main " + *repo->head() + "\n";
    for (auto& e : fs::recursive_directory_iterator(tmp_.path() / "data/kernel_data.git/refs")) s += "ref " + e.path().string() + "\n";
    for (auto& e : fs::directory_iterator(tmp_.path() / "data/uploads")) s += "upload " + e.path().filename().string() + "\n";
    return s;
  }

  // Sends the request for each caller in turn: the allowed ones must answer
  // `ok` (one of them); every other must answer its refusal and change nothing.
  void matrix(const std::string& what, const std::map<Who, int>& expect,
              const std::function<Answer(Who, const std::string& token)>& request) {
    for (int w = 0; w < kWho; ++w) {
      auto it = expect.find(static_cast<Who>(w));
      ASSERT_NE(it, expect.end()) << what << ": no expectation for " << kWhoName[w];
      const std::string before = snapshot();
      Answer a = request(static_cast<Who>(w), tokens_[w]);
      EXPECT_EQ(a.status, it->second) << what << " by " << kWhoName[w] << ": " << a.text;
      if (a.status >= 400) {
        EXPECT_EQ(snapshot(), before) << what << " by " << kWhoName[w] << " was refused but changed something";
        EXPECT_TRUE(a.body.is_object() && a.body.contains("error")) << a.text;
        if (a.status == 401) {
          EXPECT_TRUE(a.body.contains("www_authenticate")) << what << " by " << kWhoName[w];
        }
      }
    }
  }

  TempDir tmp_;
  std::unique_ptr<RunningService> svc_;
  std::unique_ptr<store::StateDb> db_;
  std::string tokens_[kWho];
  std::string other_runner_;
};

TEST_F(AccessMatrixTest, EveryMutatingRouteForEveryKindOfCaller) {
  // POST /api/submissions: signed-in people and agents submit; an outsider's job is held.
  std::map<Who, std::int64_t> job_of;
  matrix("POST /api/submissions",
         {{anonymous, 401}, {member, 202}, {outsider, 202}, {agent, 202}, {revoked, 401}, {expired, 401},
          {maintainer, 202}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           auto a = submit(tok);
           if (a.status == 202) {
             job_of[w] = a.body["job_id"];
             EXPECT_EQ(a.body["held"], w == outsider) << kWhoName[w];
             EXPECT_EQ(a.body["submitter_id"], w == outsider ? "ola" : w == maintainer ? "mia" : "ann");
           }
           return a;
         });
  {
    auto held = send("GET", "/api/jobs/held", "");
    ASSERT_EQ(held.status, 200);
    ASSERT_EQ(held.body["held"].size(), 1u);
    EXPECT_EQ(held.body["held"][0]["job_id"], job_of[outsider]);
    EXPECT_EQ(held.body["held"][0]["reason"], "JobHeldAdmin");
  }

  // POST /api/jobs/{id}/release: a maintainer's own token only.
  const std::string release = fmt::format("/api/jobs/{}/release", job_of[outsider]);
  matrix("POST /api/jobs/{id}/release",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 200}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("POST", release, tok); });
  EXPECT_EQ(send("POST", release, tokens_[maintainer]).status, 409);  // released already

  // POST /api/runner/claim: runner tokens only.
  std::int64_t claimed = 0;
  matrix("POST /api/runner/claim",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 403}, {runner, 200}},
         [&](Who, const std::string& tok) {
           auto a = send("POST", "/api/runner/claim", tok, {{"worker", "node-1"}, {"lease_seconds", 60}});
           if (a.status == 200) claimed = a.body["job"]["id"];
           return a;
         });
  ASSERT_EQ(claimed, job_of[member]);  // the oldest job that is not held
  const std::string job = "/api/runner/jobs/" + std::to_string(claimed);

  // The claimed job's routes: only the runner holding its lease. Another
  // runner's token is refused too (409), and changes nothing.
  auto job_route = [&](const std::string& what, const std::string& method, const std::string& path, const json& body) {
    matrix(what,
           {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
            {maintainer, 403}, {runner, 200}},
           [&](Who, const std::string& tok) { return send(method, path, tok, body); });
    const std::string before = snapshot();
    auto other = send(method, path, other_runner_, body);
    EXPECT_EQ(other.status, 409) << what << " by another runner: " << other.text;
    EXPECT_EQ(snapshot(), before) << what << " by another runner changed something";
  };
  job_route("POST heartbeat", "POST", job + "/heartbeat", {{"worker", "node-1"}, {"lease_seconds", 60}});
  job_route("GET package", "GET", job + "/package", nullptr);
  job_route("GET trusted", "GET", job + "/trusted", nullptr);
  {
    // The trusted package arrives whole: every file of the package at HEAD, byte for byte.
    auto t = send("GET", job + "/trusted", tokens_[runner]);
    auto tree = jobs::tree_from_json(t.body["files"]);
    ASSERT_TRUE(tree) << tree.error().message;
    std::map<std::string, std::string> got;
    for (const auto& f : tree->files) got[f.path] = f.content;
    EXPECT_EQ(got, package_files());
    auto pkg = send("GET", job + "/package", tokens_[runner]);
    auto tgz = package::package_tarball_bytes(tree_of(package_files()), kKernelId);
    EXPECT_EQ(pkg.text, *tgz);
  }
  job_route("GET recovery", "GET", job + "/recovery", nullptr);
  job_route("GET board", "GET", job + "/board", nullptr);
  {
    // The board context: the rules kzoo init tagged `checks`, and the branch
    // the server (not the runner) says an accept lands on.
    auto b = send("GET", job + "/board", tokens_[runner]);
    auto ctx = jobs::board_context_from_json(b.body);
    ASSERT_TRUE(ctx) << ctx.error().message << ": " << b.text;
    EXPECT_EQ(ctx->branch, "main");
    ASSERT_TRUE(ctx->rules.has_value());
    EXPECT_EQ(ctx->rules->version, 1);
    EXPECT_TRUE(ctx->baseline_commit.empty());  // a submission, not a baseline
  }
  std::string evidence;
  job_route("POST evidence", "POST", job + "/evidence",
            {{"worker", "node-1"}, {"message", "evidence"}, {"files", {{"stderr.log", jobs::base64_encode("ok\n")}}}});
  {
    auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
    evidence = *repo->head("refs/jobs/" + std::to_string(claimed));
    const std::string base = *repo->head();
    json doc = {{"cases", {{{"test_case_id", "small"}, {"status", "ok"}, {"correct", true}, {"metrics", {{"latency_us", 150.0}}}}}}};
    json accept = {{"worker", "node-1"}, {"message", "softmax: fused\n\nKzoo-Job: " + std::to_string(claimed) + "\n"},
                   {"author", {{"name", "ann"}}}, {"measured_at", base}, {"benchmark_output", doc},
                   {"evidence_commit", evidence}};
    // Nothing but the runner may accept; the first accept by the runner lands.
    job_route("POST accept", "POST", job + "/accept", accept);
  }
  auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
  const std::string accepted = *repo->head();
  EXPECT_EQ(*repo->read_file(kKernelId + "/src/softmax.py"), package_files().at("src/softmax.py"));
  json completion = {{"worker", "node-1"},
                     {"completion", {{"outcome", "accepted"}, {"accepted_commit", accepted}, {"verdict", {{"accept", true}}}}}};
  matrix("POST complete",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 403}, {runner, 200}},
         [&](Who, const std::string& tok) { return send("POST", job + "/complete", tok, completion); });
  EXPECT_EQ(send("POST", job + "/complete", tokens_[runner], completion).status, 409);  // once only
  auto sub = db_->get_submission(db_->get_job(claimed)->submission_id);
  EXPECT_EQ(sub->state, store::State::accepted);

  // POST retry (an infrastructure failure hands the job back), on the next job.
  auto next = send("POST", "/api/runner/claim", tokens_[runner], {{"worker", "node-1"}});
  ASSERT_EQ(next.status, 200) << next.text;
  const std::int64_t second = next.body["job"]["id"];
  json retry = {{"worker", "node-1"}, {"reasons", {"the judge crashed"}}, {"result", {{"attempt", 1}}}};
  job_route("POST retry", "POST", "/api/runner/jobs/" + std::to_string(second) + "/retry", retry);
  EXPECT_EQ(db_->get_job(second)->state, store::State::queued);

  // GET /api/audit: maintainers (and their agents) only.
  matrix("GET /api/audit",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 200}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("GET", "/api/audit?limit=1000", tok); });
  auto log = send("GET", "/api/audit?limit=1000", tokens_[maintainer]);
  std::set<std::string> seen;
  for (const auto& e : log.body["entries"]) seen.insert(e["who"].get<std::string>() + " " + e["action"].get<std::string>());
  for (const char* want : {"ann submission.create", "ola job.hold", "mia job.release", "mia job.claim",
                           "mia repo.evidence", "mia repo.accept", "mia job.complete", "mia job.retry"})
    EXPECT_TRUE(seen.count(want)) << want;

  // POST /api/board/baselines: maintainers (and their agents) queue the
  // measurements the board's speed-ups divide by.
  matrix("POST /api/board/baselines",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 202}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           auto a = send("POST", "/api/board/baselines?kernel=" + kKernelId, tok);
           if (a.status == 202) {
             EXPECT_EQ(a.body["submissions"].size(), 1u) << a.text;
             auto s = db_->get_submission(a.body["submissions"][0]["id"]);
             EXPECT_EQ(s->kind, "baseline");
             EXPECT_EQ(s->submitter_id, "mia") << kWhoName[w];
           }
           return a;
         });
  auto mismatch = send("POST", "/api/board/baselines?submitter=ann", tokens_[maintainer]);
  EXPECT_EQ(mismatch.status, 403) << mismatch.text;
  EXPECT_EQ(mismatch.body["error"]["code"], "submitter_mismatch");
}

TEST_F(AccessMatrixTest, ARouteIsItsStartersToSubmitToWithTheirAgentsAndTheMaintainers) {
  auto started = submit(tokens_[member], {{"route", "ann-fast"}});
  ASSERT_EQ(started.status, 202) << started.text;
  auto routes = db_->list_routes();
  ASSERT_EQ(routes->size(), 1u);
  EXPECT_EQ((*routes)[0].owner, "ann");
  EXPECT_EQ(submit(tokens_[agent], {{"route", "ann-fast"}}).status, 202);       // her agent
  EXPECT_EQ(submit(tokens_[maintainer], {{"route", "ann-fast"}}).status, 202);  // a maintainer
  const std::string before = snapshot();
  auto other = submit(tokens_[outsider], {{"route", "ann-fast"}});
  EXPECT_EQ(other.status, 403) << other.text;
  EXPECT_NE(other.body["error"]["message"].get<std::string>().find("belongs to ann"), std::string::npos) << other.text;
  EXPECT_EQ(other.body["error"]["field"], "route");
  EXPECT_EQ(snapshot(), before);
  // An outsider's own route is theirs, and their job on it waits held.
  auto own = submit(tokens_[outsider], {{"route", "ola-try"}});
  ASSERT_EQ(own.status, 202) << own.text;
  EXPECT_EQ(own.body["held"], true);
}

TEST_F(AccessMatrixTest, APullRequestIsMergedByItsRoutesOwnerTheirAgentOrAMaintainer) {
  ASSERT_EQ(submit(tokens_[member], {{"route", "ann-fast"}}).status, 202);  // ann starts her route
  auto refused = submit(tokens_[outsider], {{"route", "ann-fast"}});
  EXPECT_EQ(refused.status, 403) << refused.text;
  EXPECT_NE(refused.text.find("--pull-request"), std::string::npos) << "the refusal names the way in: " << refused.text;
  EXPECT_EQ(submit(tokens_[outsider], {{"route", "nobody-yet"}, {"pull_request", "true"}}).status, 422);
  EXPECT_EQ(submit(tokens_[member], {{"route", "ann-fast"}, {"pull_request", "true"}}).status, 400);  // hers: push

  auto opened = submit(tokens_[outsider], {{"route", "ann-fast"}, {"pull_request", "true"}});
  ASSERT_EQ(opened.status, 202) << opened.text;
  EXPECT_EQ(opened.body["held"], true);
  EXPECT_EQ(opened.body["hold_reason"], "PullRequest");
  EXPECT_EQ(opened.body["pull_request"], true);
  const std::int64_t pr = opened.body["id"];
  const std::string base = "/api/pulls/" + std::to_string(pr);
  auto listed = send("GET", "/api/pulls?route=ann-fast", "");
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.body["pulls"].size(), 1u);
  EXPECT_EQ(listed.body["pulls"][0]["route_owner"], "ann");
  auto routes = send("GET", "/api/routes", "");
  ASSERT_EQ(routes.status, 200) << routes.text;
  for (const auto& r : routes.body["routes"])
    EXPECT_EQ(r["open_pulls"], r["name"] == "routes/ann-fast" ? 1 : 0) << r.dump();

  // Comments and reviews: anyone signed in, runners excepted.
  matrix("POST /api/pulls/{id}/comments",
         {{anonymous, 401}, {member, 201}, {outsider, 201}, {agent, 201}, {revoked, 401}, {expired, 401},
          {maintainer, 201}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           return send("POST", base + "/comments", tok,
                       {{"body", std::string("from ") + kWhoName[w]}, {"kind", w == member ? "approve" : "comment"}});
         });
  EXPECT_EQ(send("POST", base + "/comments", tokens_[member], {{"body", ""}}).status, 400);
  EXPECT_EQ(send("POST", base + "/comments", tokens_[member], {{"body", "x"}, {"kind", "veto"}}).status, 400);

  // Merge: the route's owner first (200); after that it is decided (409) for the others allowed.
  matrix("POST /api/pulls/{id}/merge",
         {{anonymous, 401}, {member, 200}, {outsider, 403}, {agent, 409}, {revoked, 401}, {expired, 401},
          {maintainer, 409}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("POST", base + "/merge", tok); });
  // ann merged an outsider's pull request: onto her route, but it runs only once a maintainer releases it.
  auto job = db_->jobs_of(pr);
  ASSERT_EQ(job->size(), 1u);
  EXPECT_TRUE((*job)[0].held);
  EXPECT_EQ((*job)[0].hold_reason, "JobHeldAdmin");
  EXPECT_EQ(send("POST", fmt::format("/api/jobs/{}/release", (*job)[0].id), tokens_[maintainer]).status, 200);
  auto shown = send("GET", base, "");
  ASSERT_EQ(shown.status, 200);
  EXPECT_EQ(shown.body["state"], "merged");
  EXPECT_EQ(shown.body["decided_by"], "ann");
  ASSERT_EQ(shown.body["comments"].size(), 4u);  // member, outsider, agent, maintainer
  EXPECT_EQ(shown.body["comments"][0]["kind"], "approve");

  // A maintainer's agent merges an outsider's pull request onto the route, but
  // cannot release it to run: agents never release held jobs.
  const std::string mia_agent = issue("mia", store::TokenKind::agent, "helper");
  auto third = submit(tokens_[outsider], {{"route", "ann-fast"}, {"pull_request", "true"}});
  ASSERT_EQ(third.status, 202);
  auto by_agent = send("POST", fmt::format("/api/pulls/{}/merge", third.body["id"].get<std::int64_t>()), mia_agent);
  ASSERT_EQ(by_agent.status, 200) << by_agent.text;
  EXPECT_EQ(by_agent.body["job"]["held"], true);
  EXPECT_EQ(by_agent.body["job"]["hold_reason"], "JobHeldAdmin");
  auto by_mia = submit(tokens_[outsider], {{"route", "ann-fast"}, {"pull_request", "true"}});
  auto merged_by_mia = send("POST", fmt::format("/api/pulls/{}/merge", by_mia.body["id"].get<std::int64_t>()),
                            tokens_[maintainer]);
  EXPECT_EQ(merged_by_mia.body["job"]["held"], false) << "a maintainer's own merge lets it run: " << merged_by_mia.text;

  // Close: the route's owner, a maintainer, or the pull request's author (withdrawing it).
  auto second = submit(tokens_[outsider], {{"route", "ann-fast"}, {"pull_request", "true"}});
  ASSERT_EQ(second.status, 202);
  const std::string second_base = fmt::format("/api/pulls/{}", second.body["id"].get<std::int64_t>());
  EXPECT_EQ(send("POST", second_base + "/close", tokens_[runner]).status, 403);
  EXPECT_EQ(send("POST", second_base + "/close", "").status, 401);
  auto withdrawn = send("POST", second_base + "/close", tokens_[outsider], {{"why", "wrong kernel"}});
  EXPECT_EQ(withdrawn.status, 200) << withdrawn.text;
  EXPECT_EQ(withdrawn.body["state"], "closed");
  EXPECT_EQ(db_->get_submission(second.body["id"])->state, store::State::cancelled);
  EXPECT_EQ(db_->get_submission(second.body["id"])->reasons, std::vector<std::string>{"wrong kernel"});
  EXPECT_EQ(send("GET", "/api/pulls/999999", "").status, 404);
}

TEST_F(AccessMatrixTest, IssuesAreOpenedByAnyoneSignedInAndClosedByTheirAuthorOrAMaintainer) {
  // Open: people and agents, outsiders included; never a runner token.
  std::map<Who, std::int64_t> opened;
  matrix("POST /api/issues",
         {{anonymous, 401}, {member, 201}, {outsider, 201}, {agent, 201}, {revoked, 401}, {expired, 401},
          {maintainer, 201}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           auto a = send("POST", "/api/issues", tok,
                         {{"title", std::string("seen by ") + kWhoName[w]}, {"body", "steps\n1. run it"}});
           if (a.status == 201) {
             opened[w] = a.body["id"];
             EXPECT_EQ(a.body["state"], "open");
             EXPECT_EQ(a.body["author"], w == outsider ? "ola" : w == maintainer ? "mia" : "ann");
           }
           return a;
         });
  auto listed = send("GET", "/api/issues", "");
  ASSERT_EQ(listed.status, 200) << listed.text;
  ASSERT_EQ(listed.body["issues"].size(), 4u);
  EXPECT_EQ(listed.body["issues"][0]["id"], opened[maintainer]);  // newest first

  // Comment: anyone signed in, runners excepted.
  const std::string olas = "/api/issues/" + std::to_string(opened[outsider]);
  matrix("POST /api/issues/{id}/comments",
         {{anonymous, 401}, {member, 201}, {outsider, 201}, {agent, 201}, {revoked, 401}, {expired, 401},
          {maintainer, 201}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           return send("POST", olas + "/comments", tok, {{"body", std::string("from ") + kWhoName[w]}});
         });
  auto shown = send("GET", olas, "");
  ASSERT_EQ(shown.status, 200) << shown.text;
  ASSERT_EQ(shown.body["thread"].size(), 4u);
  EXPECT_EQ(shown.body["comments"], 4);

  // Close someone else's issue: its author (her agent too) or a maintainer. ann's issue: ann first.
  const std::string anns = "/api/issues/" + std::to_string(opened[member]);
  matrix("POST /api/issues/{id}/close (ann's)",
         {{anonymous, 401}, {member, 200}, {outsider, 403}, {agent, 409}, {revoked, 401}, {expired, 401},
          {maintainer, 409}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("POST", anns + "/close", tok, {{"why", "fixed"}}); });
  auto refused = send("POST", olas + "/close", tokens_[member]);
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.text.find("opened by ola"), std::string::npos) << refused.text;
  EXPECT_EQ(send("POST", olas + "/close", tokens_[outsider], {{"why", "my mistake"}}).status, 200);
  auto by_agent = send("POST", "/api/issues/" + std::to_string(opened[agent]) + "/close", tokens_[agent]);
  EXPECT_EQ(by_agent.status, 200) << by_agent.text;
  auto closed = send("GET", "/api/issues?state=closed", "");
  ASSERT_EQ(closed.status, 200);
  EXPECT_EQ(closed.body["issues"].size(), 3u);
  EXPECT_EQ(send("GET", "/api/issues/999999", "").status, 404);
  EXPECT_EQ(send("POST", "/api/issues/999999/comments", tokens_[member], {{"body", "x"}}).status, 404);

  // The pages: the list and one issue, readable without JavaScript.
  httplib::Client c(svc_->url());
  auto page = c.Get("/issues?state=all");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("seen by non-member"), std::string::npos);
  auto one = c.Get("/issues/" + std::to_string(opened[outsider]));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  EXPECT_NE(one->body.find("my mistake"), std::string::npos);
  EXPECT_EQ(c.Get("/issues/999999")->status, 404);
}

TEST_F(AccessMatrixTest, HostileIssueTextsAreRefusedWithTheFieldAndTheRuleAndChangeNothing) {
  const std::string before = snapshot();
  const std::string tok = tokens_[member];
  struct Case {
    json body;
    const char* field;
    const char* says;
  } cases[] = {
      {json::object(), "title", "is missing"},
      {{{"title", ""}}, "title", "1-200 bytes"},
      {{{"title", std::string(201, 't')}}, "title", "201 bytes"},
      {{{"title", "two\nlines"}}, "title", "one line"},
      {{{"title", "esc \x1b[2J"}}, "title", "U+001B"},
      {{{"title", 42}}, "title", "not a string"},
      {{{"title", "ok"}, {"body", "cr\roverwrites"}}, "body", "U+000D"},
      {{{"title", "ok"}, {"body", std::string(20001, 'b')}}, "body", "20001 bytes"},
      {{{"title", "ok"}, {"body", "c1 \xc2\x9b"}}, "body", "U+009B"},
  };
  for (const auto& c : cases) {
    auto a = send("POST", "/api/issues", tok, c.body);
    EXPECT_EQ(a.status, 400) << c.body.dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_EQ(a.body["error"]["field"], c.field) << a.text;
    EXPECT_NE(a.text.find(c.says), std::string::npos) << c.says << " not in " << a.text;
  }
  // Not UTF-8, not JSON, not an object.
  EXPECT_EQ(send("POST", "/api/issues", tok, nullptr, "{\"title\": \"\xff\"}").status, 400);
  EXPECT_EQ(send("POST", "/api/issues", tok, nullptr, "not json").status, 400);
  EXPECT_EQ(send("POST", "/api/issues", tok, nullptr, "[1]").status, 400);
  // Over the body cap: 413 before the body is read, naming the bounds.
  auto huge = send("POST", "/api/issues", tok, nullptr, std::string(70000, ' '));
  EXPECT_EQ(huge.status, 413) << huge.text;
  EXPECT_NE(huge.text.find("at most 20000"), std::string::npos) << huge.text;
  // Lists: bad states, limits and pages.
  for (const char* q : {"state=bogus", "limit=0", "limit=1001", "limit=ten", "before=-1", "before=1x", "author="})
    EXPECT_EQ(send("GET", std::string("/api/issues?") + q, "").status, 400) << q;
  EXPECT_EQ(snapshot(), before);
}

TEST_F(AccessMatrixTest, IssuesArePagedNewestFirst) {
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(send("POST", "/api/issues", tokens_[maintainer], {{"title", fmt::format("issue {}", i)}}).status, 201);
  auto p1 = send("GET", "/api/issues?limit=2", "");
  ASSERT_EQ(p1.status, 200);
  ASSERT_EQ(p1.body["issues"].size(), 2u);
  EXPECT_EQ(p1.body["issues"][0]["title"], "issue 4");
  ASSERT_TRUE(p1.body.contains("next")) << p1.text;
  auto p2 = send("GET", p1.body["next"].get<std::string>(), "");
  ASSERT_EQ(p2.body["issues"].size(), 2u);
  EXPECT_EQ(p2.body["issues"][0]["title"], "issue 2");
  auto p3 = send("GET", p2.body["next"].get<std::string>(), "");
  ASSERT_EQ(p3.body["issues"].size(), 1u);
  EXPECT_FALSE(p3.body.contains("next"));
}

TEST_F(AccessMatrixTest, OnlyAMaintainersOwnTokenApprovesRulesOrSetsABoardsStatus) {
  auto board = send("GET", "/api/board", "");
  ASSERT_EQ(board.status, 200) << board.text;
  const std::string rules = board.body["rules_commit"];
  matrix("POST /api/board/status",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 200}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("POST", "/api/board/status", tok, {{"status", "saturated"}}); });
  board = send("GET", "/api/board", "");
  EXPECT_EQ(board.body["status"], "saturated");
  EXPECT_EQ(board.body["status_by"]["who"], "mia");
  matrix("POST /api/board/checks",
         {{anonymous, 401}, {member, 403}, {outsider, 403}, {agent, 403}, {revoked, 401}, {expired, 401},
          {maintainer, 200}, {runner, 403}},
         [&](Who, const std::string& tok) { return send("POST", "/api/board/checks", tok, {{"commit", rules}}); });
  // Agents never approve rules, a maintainer's included.
  const std::string mia_agent = issue("mia", store::TokenKind::agent, "helper");
  const std::string before = snapshot();
  EXPECT_EQ(send("POST", "/api/board/checks", mia_agent, {{"commit", rules}}).status, 403);
  EXPECT_EQ(send("POST", "/api/board/status", mia_agent, {{"status", "flawed"}}).status, 403);
  EXPECT_EQ(snapshot(), before);
  // What is approved must be rules: a commit without a valid scienceslack.json is refused, the tag unmoved.
  auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
  auto bad = repo->commit_files("main", {{"scienceslack.json", "{\"schema_version\": \"1\"}"}}, "rules: broken",
                                {"m", "m@x"});
  ASSERT_TRUE(bad) << bad.error().message;
  auto refused = send("POST", "/api/board/checks", tokens_[maintainer], {{"commit", *bad}});
  EXPECT_EQ(refused.status, 422) << refused.text;
  EXPECT_NE(refused.text.find("required"), std::string::npos) << refused.text;
  EXPECT_EQ(*repo->head("refs/tags/checks"), rules);
  EXPECT_EQ(send("POST", "/api/board/status", tokens_[maintainer], {{"status", "quiet"}}).status, 400);
  EXPECT_EQ(send("POST", "/api/board/status", tokens_[maintainer], {{"status", "active"}, {"version", 7}}).status, 404);
  auto log = send("GET", "/api/audit?limit=1000", tokens_[maintainer]);
  std::set<std::string> seen;
  for (const auto& e : log.body["entries"]) seen.insert(e["who"].get<std::string>() + " " + e["action"].get<std::string>());
  EXPECT_TRUE(seen.count("mia board.status"));
  EXPECT_TRUE(seen.count("mia board.checks"));
}

// Route merges: each kernel whose source differs is submitted to the target
// and judged there; into main a maintainer's, into someone else's route a
// pull request, into one's own a plain submission.
TEST_F(AccessMatrixTest, ARouteIsMergedBySubmittingItsSourcesToTheTarget) {
  ASSERT_TRUE(db_->ensure_route("ann-fast", "ann"));
  ASSERT_TRUE(db_->ensure_route("cy-alt", "mia"));
  auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
  ASSERT_TRUE(repo->set_ref("refs/heads/routes/ann-fast", *repo->head("refs/heads/main")));
  const std::string faster = "import torch\ndef softmax(x):\n    return torch.softmax(x, dim=-1)  # ann's\n";
  ASSERT_TRUE(repo->commit_files("routes/ann-fast", {{kKernelId + "/src/softmax.py", faster}}, "ann's softmax",
                                 {"ann", "ann@x"}));
  const std::string merge = "/api/routes/ann-fast/merge";

  // Into main: a maintainer's merge is submitted; anyone else's is a pull request
  // to main, which maintainers merge.
  std::map<Who, json> merged;
  matrix("POST /api/routes/{name}/merge into main",
         {{anonymous, 401}, {member, 202}, {outsider, 202}, {agent, 202}, {revoked, 401}, {expired, 401},
          {maintainer, 202}, {runner, 403}},
         [&](Who w, const std::string& tok) {
           auto a = send("POST", merge, tok, {{"into", "main"}});
           if (a.status == 202) merged[w] = a.body;
           return a;
         });
  EXPECT_EQ(merged[maintainer]["pull_request"], false);
  EXPECT_EQ(merged[maintainer]["submissions"][0]["held"], false);
  for (Who w : {member, outsider, agent}) {
    EXPECT_EQ(merged[w]["pull_request"], true) << kWhoName[w];
    EXPECT_EQ(merged[w]["submissions"][0]["hold_reason"], "PullRequest") << kWhoName[w];
  }
  auto mine = db_->get_submission(merged[maintainer]["submissions"][0]["id"]);
  EXPECT_EQ(mine->route, "");
  EXPECT_EQ(mine->submitter_id, "mia");
  EXPECT_NE(mine->summary.find("merge of routes/ann-fast into main"), std::string::npos);
  auto tar = package::read_package_tarball(mine->package_path, kKernelId);
  ASSERT_TRUE(tar);
  EXPECT_EQ(tar->tree.find("src/softmax.py")->content, faster) << "the route's source, not main's";
  // A pull request to main: only a maintainer merges it.
  const std::string to_main = fmt::format("/api/pulls/{}", merged[member]["submissions"][0]["id"].get<std::int64_t>());
  EXPECT_EQ(send("GET", to_main, "").body["into"], "main");
  EXPECT_EQ(send("POST", to_main + "/merge", tokens_[member]).status, 403);
  auto by_mia = send("POST", to_main + "/merge", tokens_[maintainer]);
  EXPECT_EQ(by_mia.status, 200) << by_mia.text;
  EXPECT_EQ(by_mia.body["job"]["held"], false);

  // Into mia's route by ann: a pull request for mia.
  auto pr = send("POST", merge, tokens_[member], {{"into", "cy-alt"}});
  ASSERT_EQ(pr.status, 202) << pr.text;
  EXPECT_EQ(pr.body["pull_request"], true);
  EXPECT_EQ(pr.body["submissions"][0]["hold_reason"], "PullRequest");
  // Into a route of her own (started by the merge): a plain submission, queued.
  auto own = send("POST", merge, tokens_[member], {{"into", "ann-next"}});
  ASSERT_EQ(own.status, 202) << own.text;
  EXPECT_EQ(own.body["submissions"][0]["held"], false);
  EXPECT_EQ(db_->get_submission(own.body["submissions"][0]["id"])->route, "ann-next");

  // Nothing differs, nothing to merge; no branch, no merge; bad targets refused.
  ASSERT_TRUE(repo->set_ref("refs/heads/routes/same", *repo->head("refs/heads/main")));
  const std::string before = snapshot();
  EXPECT_EQ(send("POST", "/api/routes/same/merge", tokens_[maintainer], {{"into", "main"}}).status, 409);
  EXPECT_EQ(send("POST", "/api/routes/nobody/merge", tokens_[maintainer], {{"into", "main"}}).status, 404);
  EXPECT_EQ(send("POST", merge, tokens_[maintainer], {{"into", "Bad Name"}}).status, 400);
  EXPECT_EQ(send("POST", merge, tokens_[maintainer], {{"into", "ann-fast"}}).status, 400);
  EXPECT_EQ(snapshot(), before);
}

TEST_F(AccessMatrixTest, CommentsPerHourOverTheLimitAre429WithRetryAfter) {
  start([](ServerConfig& c) { c.limit_comments_per_hour = 2; });
  ASSERT_EQ(submit(tokens_[member], {{"route", "ann-fast"}}).status, 202);
  auto pr = submit(tokens_[outsider], {{"route", "ann-fast"}, {"pull_request", "true"}});
  ASSERT_EQ(pr.status, 202) << pr.text;
  const std::string comments = fmt::format("/api/pulls/{}/comments", pr.body["id"].get<std::int64_t>());
  EXPECT_EQ(send("POST", comments, tokens_[outsider], {{"body", "one"}}).status, 201);
  EXPECT_EQ(send("POST", comments, tokens_[outsider], {{"body", "two"}}).status, 201);
  const std::string before = snapshot();
  auto third = send("POST", comments, tokens_[outsider], {{"body", "three"}});
  EXPECT_EQ(third.status, 429) << third.text;
  EXPECT_TRUE(third.body.contains("retry_after_header")) << third.text;
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(send("POST", comments, tokens_[member], {{"body", "another token, its own count"}}).status, 201);
  // Issues and their comments count against the same limit: the outsider is over it there too.
  EXPECT_EQ(send("POST", "/api/issues", tokens_[outsider], {{"title", "a flood"}}).status, 429);
  auto issue = send("POST", "/api/issues", tokens_[member], {{"title", "the member's second text this hour"}});
  ASSERT_EQ(issue.status, 201) << issue.text;
  auto over = send("POST", fmt::format("/api/issues/{}/comments", issue.body["id"].get<std::int64_t>()),
                   tokens_[member], {{"body", "third"}});
  EXPECT_EQ(over.status, 429) << over.text;
  EXPECT_NE(over.text.find("texts per hour"), std::string::npos) << over.text;
}

TEST_F(AccessMatrixTest, TheEnvelopesSubmitterMustBeTheTokensOwner) {
  const std::string before = snapshot();
  auto a = submit(tokens_[member], {{"submitter_id", "mia"}});
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_EQ(a.body["error"]["code"], "submitter_mismatch");
  EXPECT_EQ(snapshot(), before);
  auto b = submit(tokens_[agent], {{"submitter_id", "ann"}});  // an agent submits as its person
  EXPECT_EQ(b.status, 202) << b.text;
}

TEST_F(AccessMatrixTest, AMalformedOrForgedTokenIs401AndChangesNothing) {
  const std::string before = snapshot();
  std::string forged = tokens_[maintainer];
  forged[40] = forged[40] == 'A' ? 'B' : 'A';
  for (const std::string& tok : {std::string("nonsense"), forged, std::string("kzoo_") + std::string(60, 'a')}) {
    auto a = submit(tok);
    EXPECT_EQ(a.status, 401) << tok << ": " << a.text;
    EXPECT_EQ(send("POST", "/api/runner/claim", tok, {{"worker", "w"}}).status, 401);
    EXPECT_EQ(send("GET", "/api/kernels", tok).status, 401);  // a bad token is refused even where none is needed
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_F(AccessMatrixTest, ReadsArePublicUnlessTheServerRequiresATokenForThem) {
  for (const char* path : {"/api/kernels", "/api/jobs/held", "/metrics", "/api/submissions", "/api/jobs"})
    EXPECT_EQ(send("GET", path, "").status, 200) << path;
  start([](ServerConfig& c) { c.require_token_for_reads = true; });
  for (const char* path : {"/api/kernels", "/api/jobs/held", "/metrics", "/api/whoami", "/api/submissions", "/api/jobs"}) {
    EXPECT_EQ(send("GET", path, "").status, 401) << path;
    EXPECT_EQ(send("GET", path, tokens_[outsider]).status, 200) << path;
    EXPECT_EQ(send("GET", path, tokens_[revoked]).status, 401) << path;
  }
  EXPECT_EQ(send("GET", "/healthz", "").status, 200);
  EXPECT_EQ(send("GET", "/api/openapi.json", "").status, 200);
  auto me = send("GET", "/api/whoami", tokens_[agent]);
  EXPECT_EQ(me.body["user"], "ann");
  EXPECT_EQ(me.body["token"]["kind"], "agent");
  EXPECT_EQ(me.body["token"]["name"], "claude");
}

TEST_F(AccessMatrixTest, SubmissionsPerHourOverTheLimitAre429WithRetryAfter) {
  store::TokenLimits lim;
  lim.submissions_per_hour = 2;
  auto tok = issue("ann", store::TokenKind::agent, "busy", std::nullopt, lim);
  EXPECT_EQ(submit(tok).status, 202);
  EXPECT_EQ(submit(tok).status, 202);
  const std::string before = snapshot();
  auto a = submit(tok);
  EXPECT_EQ(a.status, 429) << a.text;
  EXPECT_EQ(a.body["error"]["limit"], " per hour");
  int retry = std::stoi(a.body["retry_after_header"].get<std::string>());
  EXPECT_GT(retry, 3500);
  EXPECT_LE(retry, 3600);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(submit(tokens_[member]).status, 202);  // the limit is the token's, not its person's
}

TEST_F(AccessMatrixTest, ConcurrentJobsAndUploadBytesPerDayAreLimitedPerToken) {
  store::TokenLimits jobs;
  jobs.concurrent_jobs = 1;
  auto one = issue("ann", store::TokenKind::agent, "one-at-a-time", std::nullopt, jobs);
  EXPECT_EQ(submit(one).status, 202);
  auto a = submit(one);
  EXPECT_EQ(a.status, 429) << a.text;
  EXPECT_TRUE(a.body.contains("retry_after_header"));

  store::TokenLimits bytes;
  bytes.upload_bytes_per_day = 100;  // below one package
  auto small = issue("ann", store::TokenKind::agent, "small", std::nullopt, bytes);
  const std::string before = snapshot();
  auto b = submit(small);
  EXPECT_EQ(b.status, 429) << b.text;
  EXPECT_EQ(b.body["error"]["limit"], " per day");
  EXPECT_EQ(snapshot(), before);
}

TEST_F(AccessMatrixTest, ServerWideLimitsComeFromTheConfiguration) {
  start([](ServerConfig& c) { c.limit_submissions_per_hour = 0; });
  auto a = submit(tokens_[maintainer]);
  EXPECT_EQ(a.status, 429) << a.text;
}

}  // namespace
}  // namespace kzoo::server
