// A running service with a maintainer (mia), a member (ann), an outsider
// (ola) and their tokens, for the hostile-input tests: requests a
// well-behaved client would never send, and a snapshot of everything a
// refused request must leave as it was (rows, texts, the audit trail, refs,
// uploads), so each test can say "refused, and nothing changed".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "kzoo/access/token.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server::testing {

class HostileFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    write_catalog(tmp_.path() / "catalog");
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp_ / "data";
    cfg.catalog = tmp_ / "catalog";
    cfg.listen_port = 0;
    cfg.threads = 4;
    svc_ = std::make_unique<RunningService>(cfg);
    auto db = store::open_state(store::default_state_url(tmp_ / "data"));
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
    ASSERT_TRUE(db_->add_user("mia", store::Role::maintainer));
    ASSERT_TRUE(db_->add_user("ann", store::Role::member));
    ASSERT_TRUE(db_->add_user("ola", store::Role::outsider));
    const store::TokenLimits roomy{1'000'000, 1'000'000, 1ll << 50};
    maintainer_ = issue_token(*db_, "mia", store::TokenKind::person, "", std::nullopt, roomy);
    member_ = issue_token(*db_, "ann", store::TokenKind::person, "", std::nullopt, roomy);
    outsider_ = issue_token(*db_, "ola", store::TokenKind::person, "", std::nullopt, roomy);
    runner_ = issue_token(*db_, "mia", store::TokenKind::runner, "gpu-1", std::nullopt, roomy);
  }

  // One request with a JSON body (or `raw` bytes as they are).
  Answer send(const std::string& method, const std::string& path, const std::string& token,
              const nlohmann::json& body = nullptr, const std::optional<std::string>& raw = std::nullopt) {
    httplib::Client c(svc_->url());
    c.set_read_timeout(30, 0);
    if (!token.empty()) c.set_bearer_token_auth(token);
    const std::string text = raw ? *raw : body.is_null() ? std::string("{}") : body.dump();
    httplib::Result r = method == "GET" ? c.Get(path) : c.Post(path, text, "application/json");
    EXPECT_TRUE(r) << method << " " << path << ": " << (r ? "" : httplib::to_string(r.error()));
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.text = r->body;
    a.body = nlohmann::json::parse(r->body, nullptr, false);
    return a;
  }

  Answer submit(const std::string& token, const std::map<std::string, std::string>& extra = {}) {
    auto tgz = package::package_tarball_bytes(tree_of(package_files()), kKernelId);
    EXPECT_TRUE(tgz);
    std::map<std::string, std::string> f = {
        {"kernel_id", kKernelId}, {"package_filename", "softmax.tar.gz"}, {"optimization_summary", "fused"}};
    for (const auto& [k, v] : extra) f[k] = v;
    httplib::Client c(svc_->url());
    c.set_bearer_token_auth(token);
    auto r = c.Post("/api/submissions", multipart(f, *tgz), "multipart/form-data; boundary=XB");
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.text = r->body;
    a.body = nlohmann::json::parse(r->body, nullptr, false);
    return a;
  }

  // ann starts her route; ola (an outsider) opens a pull request to it.
  std::int64_t open_pull() {
    auto started = submit(member_, {{"route", "ann-fast"}});
    EXPECT_EQ(started.status, 202) << started.text;
    auto opened = submit(outsider_, {{"route", "ann-fast"}, {"pull_request", "true"}});
    EXPECT_EQ(opened.status, 202) << opened.text;
    return opened.body.value("id", std::int64_t{0});
  }

  // The error object of a refusal, checked to be one: {"error": {"code", "message", "field"}}.
  static nlohmann::json error_of(const Answer& a) {
    EXPECT_TRUE(a.body.is_object() && a.body.contains("error") && a.body["error"].is_object())
        << "not a JSON error: " << a.text;
    return a.body.is_object() && a.body.contains("error") ? a.body["error"] : nlohmann::json::object();
  }

  // Everything a refused request must leave as it was.
  std::string snapshot() {
    std::string s;
    store::SubmissionFilter f;
    f.limit = 1000;
    auto subs = db_->list_submissions(f);
    for (const auto& x : *subs) {
      s += fmt::format("sub {} {} {} {} {}\n", x.id, store::to_string(x.state), x.submitter_id, x.route,
                       nlohmann::json(x.reasons).dump());
      auto jobs = db_->jobs_of(x.id);
      for (const auto& j : *jobs)
        s += fmt::format(" job {} {} held={} reason={} owner={} lease={} att={}\n", j.id, store::to_string(j.state),
                         j.held, j.hold_reason, j.lease_owner, j.lease_expires_at.value_or(0), j.attempts);
    }
    auto pulls = db_->list_pulls(std::nullopt, std::nullopt, 1000);
    for (const auto& p : *pulls) {
      s += fmt::format("pull {} {} {}\n", p.submission_id, store::to_string(p.state), p.decided_by);
      auto cs = db_->comments(p.submission_id);
      for (const auto& c : *cs) s += fmt::format(" comment {} {} {}\n", c.id, c.who, nlohmann::json(c.body).dump());
    }
    auto routes = db_->list_routes();
    for (const auto& r : *routes) s += fmt::format("route {} {}\n", r.name, r.owner);
    for (int v = 1; v <= 3; ++v)
      if (auto b = db_->board_status(v); b && *b) s += fmt::format("board {} {}\n", v, (*b)->status);
    s += fmt::format("audit {}\n", db_->audit_log({INT64_MAX, 1000, std::nullopt})->size());
    s += fmt::format("tokens {}\n", db_->list_tokens(std::nullopt)->size());
    auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
    s += "main " + *repo->head() + "\n";
    for (const char* ref : {"refs/tags/checks"})
      if (auto h = repo->head(ref)) s += fmt::format("{} {}\n", ref, *h);
    for (auto& e : std::filesystem::recursive_directory_iterator(tmp_.path() / "data/kernel_data.git/refs"))
      s += "ref " + e.path().string() + "\n";
    for (auto& e : std::filesystem::directory_iterator(tmp_.path() / "data/uploads"))
      s += "upload " + e.path().filename().string() + "\n";
    return s;
  }

  TempDir tmp_;
  std::unique_ptr<RunningService> svc_;
  std::unique_ptr<store::StateDb> db_;
  std::string maintainer_, member_, outsider_, runner_;
};

}  // namespace kzoo::server::testing
