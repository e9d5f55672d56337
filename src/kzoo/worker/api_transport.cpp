// The worker's api mode: every call is one request to the server's runner
// API with the runner token (docs/SERVER.md "Runner API").
#include <fstream>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <httplib.h>

#include "kzoo/jobs/wire.hpp"
#include "kzoo/worker/api_transport.hpp"

namespace kzoo::worker {
using namespace kzoo::jobs;  // the transport it implements and the wire it speaks
namespace {

using nlohmann::json;

struct Reply {
  int status = 0;
  json body;
  std::string text;
};

std::string error_text(const Reply& r) {
  if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_object())
    return fmt::format("HTTP {} {}: {}", r.status, r.body["error"].value("code", "?"), r.body["error"].value("message", ""));
  return fmt::format("HTTP {}: {}", r.status, r.text.substr(0, 300));
}

store::StateError state_error(const Reply& r) {
  using K = store::StateError;
  K::Kind k = K::io;
  if (r.status == 404) k = K::not_found;
  else if (r.status == 409) k = K::wrong_state;
  else if (r.status == 400) k = K::invalid;
  else if (r.status == 503) k = K::busy;
  return {k, "the server refused: " + error_text(r)};
}

class Api final : public JobTransport {
 public:
  Api(std::string url, std::string token) : url_(std::move(url)), token_(std::move(token)) {}

  std::string describe() const override { return "server " + url_; }

  store::StateResult<std::vector<store::Requeued>> requeue_expired() override {
    return std::vector<store::Requeued>{};  // the server takes leases back when runners claim
  }

  store::StateResult<std::optional<store::Job>> claim(const std::string& worker_id, int lease_seconds,
                                                      const store::RunnerHas& has) override {
    json body = {{"worker", worker_id}, {"lease_seconds", lease_seconds}};
    if (const auto& cc = has.compute_capability) body["compute_capability"] = fmt::format("{}.{}", *cc / 10, *cc % 10);
    if (has.gpus) body["gpus"] = *has.gpus;
    auto r = post("/api/runner/claim", body);
    if (!r) return tl::unexpected(store::StateError{store::StateError::io, r.error().message});
    if (r->status == 204) return std::optional<store::Job>();
    if (r->status != 200 || !r->body.is_object()) return tl::unexpected(state_error(*r));
    store::Job j = job_from_json(r->body.value("job", json()));
    if (r->body.contains("batch")) {
      // A user's batch job: its script and limits come with the claim.
      auto b = batch_from_json(r->body["batch"]);
      if (!b) return tl::unexpected(store::StateError{store::StateError::io, "the server's claim: " + b.error().message});
      b->job = j;
      std::lock_guard g(mu_);
      batches_[j.id] = *b;
      return std::optional<store::Job>(j);
    }
    const json& s = r->body.value("submission", json::object());
    store::Submission sub;
    sub.id = j.submission_id;
    sub.kernel_id = s.value("kernel_id", "");
    sub.submitter_id = s.value("submitter_id", "");
    sub.summary = s.value("optimization_summary", "");
    sub.sha256 = s.value("sha256", "");
    sub.route = s.value("route", "");
    sub.kind = s.value("kind", "submission");
    sub.state = store::State::running;
    std::lock_guard g(mu_);
    subs_[sub.id] = sub;
    return std::optional<store::Job>(j);
  }

  store::StateResult<store::Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease) override {
    auto r = post(fmt::format("/api/runner/jobs/{}/heartbeat", job_id), {{"worker", worker_id}, {"lease_seconds", lease}});
    if (!r) return tl::unexpected(store::StateError{store::StateError::io, r.error().message});
    if (r->status != 200) return tl::unexpected(state_error(*r));
    return job_from_json(r->body.value("job", json()));
  }

  store::StateResult<store::Job> complete(std::int64_t job_id, const std::string& worker_id,
                                          const store::Completion& c) override {
    auto r = post(fmt::format("/api/runner/jobs/{}/complete", job_id),
                  {{"worker", worker_id}, {"completion", completion_to_json(c)}});
    if (!r) return tl::unexpected(store::StateError{store::StateError::io, r.error().message});
    if (r->status != 200) return tl::unexpected(state_error(*r));
    return job_from_json(r->body.value("job", json()));
  }

  store::StateResult<store::Job> retry(std::int64_t job_id, const std::string& worker_id,
                                       const std::vector<std::string>& reasons, const json& result) override {
    auto r = post(fmt::format("/api/runner/jobs/{}/retry", job_id),
                  {{"worker", worker_id}, {"reasons", reasons}, {"result", result}});
    if (!r) return tl::unexpected(store::StateError{store::StateError::io, r.error().message});
    if (r->status != 200) return tl::unexpected(state_error(*r));
    return job_from_json(r->body.value("job", json()));
  }

  store::StateResult<store::Submission> submission(std::int64_t id) override {
    std::lock_guard g(mu_);
    auto it = subs_.find(id);
    if (it == subs_.end())
      return tl::unexpected(store::StateError{store::StateError::not_found,
                                              fmt::format("submission {} was not handed to this runner", id)});
    return it->second;
  }

  Result<std::string> package_file(const store::Job& job, const store::Submission&, const std::string& scratch) override {
    return download(fmt::format("/api/runner/jobs/{}/package", job.id), scratch + "/package.tar.gz",
                    "the package of job " + std::to_string(job.id));
  }

  Result<TrustedPackage> trusted(const std::string& kernel_id, std::int64_t job_id) override {
    auto r = get(fmt::format("/api/runner/jobs/{}/trusted", job_id));
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail("cannot read the trusted package of " + kernel_id + ": " + error_text(*r));
    auto tree = tree_from_json(r->body.value("files", json()));
    if (!tree) return fail("the server's trusted package of " + kernel_id + " is malformed: " + tree.error().message);
    return TrustedPackage{r->body.value("base", ""), std::move(*tree)};
  }

  Result<BoardContext> board(std::int64_t job_id) override {
    auto r = get(fmt::format("/api/runner/jobs/{}/board", job_id));
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail("cannot read the board's rules for job " + std::to_string(job_id) + ": " + error_text(*r));
    auto c = board_context_from_json(r->body);
    if (!c) return fail("the server's board context is malformed: " + c.error().message);
    return c;
  }

  Result<Recovery> recover(const std::string& kernel_id, std::int64_t job_id, std::size_t scan) override {
    auto r = get(fmt::format("/api/runner/jobs/{}/recovery?scan={}", job_id, scan));
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail("cannot search the history of " + kernel_id + ": " + error_text(*r));
    return Recovery{r->body.value("commit", ""), r->body.value("verdict", json::object())};
  }

  Result<std::string> record_evidence(std::int64_t job_id, const std::string& worker_id,
                                      const std::map<std::string, std::string>& files,
                                      const std::string& message) override {
    json f = json::object();
    for (const auto& [k, v] : files) f[k] = base64_encode(v);
    auto r = post(fmt::format("/api/runner/jobs/{}/evidence", job_id),
                  {{"worker", worker_id}, {"message", message}, {"files", f}});
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail(error_text(*r));
    return r->body.value("commit", "");
  }

  Result<store::AcceptResult> accept(const AcceptRequest& a, const std::string& worker_id) override {
    auto r = post(fmt::format("/api/runner/jobs/{}/accept", a.job_id),
                  {{"worker", worker_id},
                   {"message", a.message},
                   {"author", {{"name", a.author.name}, {"email", a.author.email}}},
                   {"measured_at", a.measured_at},
                   {"benchmark_output", a.benchmark_output},
                   {"evidence_commit", a.evidence_commit},
                   {"now", a.now_iso},
                   {"adopt", a.adopt}});
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail(error_text(*r));
    store::AcceptResult out;
    out.commit = r->body.value("commit", "");
    out.parent = r->body.value("parent", "");
    out.attempts = r->body.value("attempts", 1);
    out.incumbent_moved = r->body.value("incumbent_moved", false);
    return out;
  }

  store::StateResult<store::BatchJob> batch(std::int64_t job_id) override {
    // Only what the claim handed over: in api mode a runner learns of scancel
    // from its heartbeat (the server answers 409 once the job is cancelled).
    std::lock_guard g(mu_);
    auto it = batches_.find(job_id);
    if (it == batches_.end())
      return tl::unexpected(store::StateError{store::StateError::not_found,
                                              fmt::format("batch job {} was not handed to this runner", job_id)});
    return it->second;
  }

  Result<std::string> batch_file(const store::BatchJob& b, const std::string& scratch) override {
    return download(fmt::format("/api/runner/jobs/{}/batch/package", b.job.id), scratch + "/submit.tar.gz",
                    "the submit directory of job " + std::to_string(b.job.id));
  }

  Result<store::BatchJob> finish_batch(std::int64_t job_id, const std::string& worker_id, const store::BatchEnd& end,
                                       const std::optional<package::PackageTree>& tree) override {
    auto r = post(fmt::format("/api/runner/jobs/{}/batch/finish", job_id),
                  {{"worker", worker_id}, {"end", batch_end_to_json(end)}, {"files", tree ? tree_to_json(*tree) : json()}});
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail(error_text(*r));
    auto b = batch_from_json(r->body.value("batch", json()));
    if (!b) return tl::unexpected(b.error());
    b->result_commit = r->body.value("result_commit", "");
    return *b;
  }

  Result<std::unique_ptr<JobTransport>> another() override {
    return std::unique_ptr<JobTransport>(new Api(url_, token_));
  }

 private:
  // GET `path` into the file `to`; `what` names it in errors.
  Result<std::string> download(const std::string& path, const std::string& to, const std::string& what) const {
    auto r = get(path);
    if (!r) return tl::unexpected(r.error());
    if (r->status != 200) return fail("cannot download " + what + ": " + error_text(*r));
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    out << r->text;
    out.close();
    if (!out) return fail("cannot write " + to);
    return to;
  }
  void setup(httplib::Client& c) const {
    c.set_connection_timeout(10, 0);
    c.set_read_timeout(120, 0);
    c.set_write_timeout(120, 0);
    c.set_bearer_token_auth(token_);
  }
  Result<Reply> answer(const httplib::Result& r, const std::string& path) const {
    if (!r) return fail(fmt::format("cannot reach {} for {}: {}", url_, path, httplib::to_string(r.error())));
    Reply out{r->status, json::parse(r->body, nullptr, false), r->body};
    if (out.body.is_discarded()) out.body = nullptr;
    return out;
  }
  Result<Reply> post(const std::string& path, const json& body) const {
    httplib::Client c(url_);
    setup(c);
    return answer(c.Post(path, body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json"), path);
  }
  Result<Reply> get(const std::string& path) const {
    httplib::Client c(url_);
    setup(c);
    return answer(c.Get(path), path);
  }

  std::string url_, token_;
  std::mutex mu_;
  std::unordered_map<std::int64_t, store::Submission> subs_;
  std::unordered_map<std::int64_t, store::BatchJob> batches_;
};

}  // namespace

Result<std::unique_ptr<JobTransport>> open_api(const std::string& server_url, const std::string& token) {
  if (server_url.rfind("http://", 0) != 0 && server_url.rfind("https://", 0) != 0)
    return fail(fmt::format("--server \"{}\" is not an http:// or https:// URL", server_url));
  if (token.empty())
    return fail("api mode needs a runner token: pass --token-file FILE or set KZOO_TOKEN (a maintainer makes one with "
                "`kzoo token new MAINTAINER --runner NAME`)");
  return std::unique_ptr<JobTransport>(new Api(server_url, token));
}

}  // namespace kzoo::worker
