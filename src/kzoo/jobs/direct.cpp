#include "kzoo/jobs/direct.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/jobs/bench_result.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::jobs {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class Direct final : public JobTransport {
 public:
  Direct(std::unique_ptr<store::StateDb> owned, store::StateDb* db, store::KernelRepo repo, std::string data_dir,
         std::string state_url)
      : owned_(std::move(owned)),
        db_(db),
        repo_(std::move(repo)),
        data_dir_(std::move(data_dir)),
        state_url_(std::move(state_url)) {}

  std::string describe() const override { return "data directory " + data_dir_; }

  store::StateResult<std::vector<store::Requeued>> requeue_expired() override {
    return db_->requeue_expired(db_->now());
  }
  store::StateResult<std::optional<store::Job>> claim(const std::string& worker_id, int lease_seconds,
                                                      const store::RunnerHas& has) override {
    return db_->claim_job(worker_id, lease_seconds, has);
  }
  store::StateResult<store::Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease) override {
    return db_->heartbeat(job_id, worker_id, lease);
  }
  store::StateResult<store::Job> complete(std::int64_t job_id, const std::string& worker_id,
                                          const store::Completion& c) override {
    return db_->complete(job_id, worker_id, c);
  }
  store::StateResult<store::Job> retry(std::int64_t job_id, const std::string& worker_id,
                                       const std::vector<std::string>& reasons, const json& result) override {
    return db_->retry(job_id, worker_id, reasons, result);
  }
  store::StateResult<store::Submission> submission(std::int64_t id) override { return db_->get_submission(id); }
  Result<std::string> package_file(const store::Job&, const store::Submission& sub, const std::string&) override {
    return sub.package_path;
  }
  Result<TrustedPackage> trusted(const std::string& kernel_id, std::int64_t job_id) override {
    auto branch = branch_of(job_id);
    if (!branch) return tl::unexpected(branch.error());
    auto route_head = repo_.head("refs/heads/" + *branch);
    auto base = route_head ? route_head : repo_.head("refs/heads/main");
    if (!base) return tl::unexpected(base.error());
    auto tree = repo_.read_package(kernel_id, *base);
    if (!tree) return fail("the repository has no package " + kernel_id + ": " + tree.error().message);
    return TrustedPackage{*base, std::move(*tree)};
  }
  Result<Recovery> recover(const std::string& kernel_id, std::int64_t job_id, std::size_t scan) override {
    auto branch = branch_of(job_id);
    if (!branch) return tl::unexpected(branch.error());
    const std::string ref = "refs/heads/" + *branch;
    auto c = repo_.head(ref) ? find_job_commit(repo_, kernel_id, job_id, scan, ref) : Result<std::string>(std::string());
    if (!c) return fail("cannot search the history of " + kernel_id + ": " + c.error().message);
    Recovery r{*c, json::object()};
    if (c->empty()) return r;
    auto ev = repo_.read_job_evidence(std::to_string(job_id));
    if (ev && ev->count("verdict.json"))
      if (auto p = format::parse_json(ev->at("verdict.json"), "verdict.json"); p) r.verdict = *p;
    return r;
  }
  Result<std::string> record_evidence(std::int64_t job_id, const std::string&,
                                      const std::map<std::string, std::string>& files,
                                      const std::string& message) override {
    return repo_.record_job_evidence(std::to_string(job_id), files, message);
  }
  Result<store::AcceptResult> accept(const AcceptRequest& r, const std::string&) override {
    auto branch = branch_of(r.job_id);
    if (!branch) return tl::unexpected(branch.error());
    store::BenchResultUpdate update = [&](const std::string& current) {
      return next_bench_result(current, r.kernel_id, r.benchmark_output, r.directions, r.evidence_commit, r.now_iso);
    };
    if (!r.adopt) return repo_.accept(r.kernel_id, r.src, update, r.message, r.author, r.measured_at,
                                      store::AcceptTarget{*branch, r.measured_at});
    if (*branch == "main") return fail(fmt::format("job {} targets main: there is nothing to adopt", r.job_id));
    auto rules = board::rules_in_force(repo_);
    if (!rules) return fail("the board's rules cannot be read: " + rules.error().message);
    if (*rules && (*rules)->adopt != "auto")
      return fail("the board's rules say adopt: " + (*rules)->adopt + ": a maintainer merges routes into main");
    return repo_.accept(r.kernel_id, r.src, update, r.message, r.author, r.measured_at);
  }
  Result<BoardContext> board(std::int64_t job_id) override {
    auto j = db_->get_job(job_id);
    if (!j) return fail(fmt::format("job {}: {}", job_id, j.error().message));
    auto s = db_->get_submission(j->submission_id);
    if (!s) return fail(fmt::format("submission {}: {}", j->submission_id, s.error().message));
    BoardContext c;
    c.branch = s->route.empty() ? "main" : "routes/" + s->route;
    auto r = board::rules_in_force(repo_);
    if (!r) return fail("the board's rules cannot be read: " + r.error().message);
    if (*r) {
      c.rules = **r;
      (void)board::record_in_force(repo_, *c.rules);  // best effort: the board page records it too
    }
    const bool is_baseline = s->kind == "baseline";
    if (is_baseline) {
      auto bc = board::baseline_commit(repo_, s->kernel_id);
      if (!bc) return tl::unexpected(bc.error());
      auto tree = repo_.read_package(s->kernel_id, *bc);
      if (!tree) return tl::unexpected(tree.error());
      c.baseline_commit = *bc;
      c.baseline_tree = std::move(*tree);
    }
    if (c.rules) {
      // Figures only: a board that cannot be read yet scores nothing, and the check still runs.
      if (auto b = board::baseline_for(repo_, *db_, *c.rules, s->kernel_id); b && !b->is_null())
        c.baseline_measured = (*b)["measured"];
      if (auto sp = board::route_speedups(repo_, *db_, *c.rules, is_baseline ? "refs/heads/main" : "refs/heads/" + c.branch))
        c.standing = *sp;
    }
    return c;
  }
  store::StateResult<store::BatchJob> batch(std::int64_t job_id) override { return db_->get_batch(job_id); }
  Result<std::string> batch_file(const store::BatchJob& b, const std::string&) override { return b.package_path; }
  Result<store::BatchJob> finish_batch(std::int64_t job_id, const std::string& worker_id, const store::BatchEnd& end,
                                       const std::optional<package::PackageTree>& tree) override {
    store::BatchEnd e = end;
    if (tree) {
      auto b = db_->get_batch(job_id);
      if (!b) return fail(b.error().message);
      // The lease first: a job cancelled or taken back meanwhile gets no result ref from this holder.
      if (auto h = db_->heartbeat(job_id, worker_id, 60); !h) return fail(h.error().message);
      auto commit = repo_.record_job_tree(std::to_string(job_id), *tree, b->base_commit,
                                          fmt::format("batch job {} ({}): {} {}, exit code {}:{}\n\nKzoo-Job: {}\n",
                                                      job_id, b->script, b->name, e.end_state, e.exit_code,
                                                      e.exit_signal, job_id));
      if (!commit) return tl::unexpected(commit.error());
      e.result_commit = *commit;
    }
    auto done = db_->finish_batch(job_id, worker_id, e);
    if (!done) return fail(done.error().message);
    return *done;
  }
  Result<std::unique_ptr<JobTransport>> another() override {
    if (data_dir_.empty()) return fail("this transport borrows its database and cannot open another");
    return open_direct(data_dir_, state_url_);
  }

 private:
  // "main", or "routes/<route>" for a job whose submission targets a route.
  Result<std::string> branch_of(std::int64_t job_id) {
    auto j = db_->get_job(job_id);
    if (!j) return fail(fmt::format("job {}: {}", job_id, j.error().message));
    auto s = db_->get_submission(j->submission_id);
    if (!s) return fail(fmt::format("submission {}: {}", j->submission_id, s.error().message));
    return s->route.empty() ? std::string("main") : "routes/" + s->route;
  }

  std::unique_ptr<store::StateDb> owned_;
  store::StateDb* db_;
  store::KernelRepo repo_;
  std::string data_dir_;
  std::string state_url_;
};

}  // namespace

Result<std::unique_ptr<JobTransport>> open_direct(const std::string& data_dir, const std::string& state_url) {
  const std::string url = state_url.empty() ? store::default_state_url(data_dir) : state_url;
  const std::string repo_dir = data_dir + "/kernel_data.git";
  std::string sqlite_file;
  if (!fs::is_directory(repo_dir) || (store::is_sqlite_url(url, &sqlite_file) && !fs::is_regular_file(sqlite_file)))
    return fail(data_dir + " is not a kzoo data directory (no kernel_data.git, or no state.db and no --state URL): run "
                           "`kzoo init`, pass --data, or work through the server with --server URL and a runner token");
  auto db = store::open_state(url);
  if (!db) return fail("cannot open the state " + store::redact_state_url(url) + ": " + db.error().message);
  auto repo = store::open_kernel_repo(repo_dir, url);
  if (!repo) return fail("cannot open " + repo_dir + ": " + repo.error().message);
  store::StateDb* raw = db->get();
  return std::unique_ptr<JobTransport>(new Direct(std::move(*db), raw, std::move(*repo), data_dir, url));
}

std::unique_ptr<JobTransport> direct_over(store::StateDb& db, store::KernelRepo repo) {
  return std::unique_ptr<JobTransport>(new Direct(nullptr, &db, std::move(repo), "", ""));
}

Result<std::string> find_job_commit(const store::KernelRepo& repo, const std::string& kernel_id, std::int64_t job_id,
                                    std::size_t scan, const std::string& rev) {
  auto h = repo.history(kernel_id, scan, rev);
  if (!h) return tl::unexpected(h.error());
  const std::string trailer = "\nKzoo-Job: " + std::to_string(job_id) + "\n";
  for (const auto& c : *h) {
    std::string msg = c.message;
    if (msg.empty() || msg.back() != '\n') msg += '\n';
    if (msg.find(trailer) != std::string::npos) return c.id;
  }
  return std::string();
}

}  // namespace kzoo::jobs
