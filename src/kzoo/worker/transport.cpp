// The direct transport (data directory) and the JSON forms of the runner API.
#include "kzoo/worker/transport.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <sodium.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/store/sqlite_state_db.hpp"

namespace kzoo::worker {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<store::UnixMs> opt_ms(const json& j, const char* k) {
  if (!j.contains(k) || !j[k].is_number_integer()) return std::nullopt;
  return j[k].get<store::UnixMs>();
}

class Direct final : public JobTransport {
 public:
  Direct(std::unique_ptr<store::StateDb> owned, store::StateDb* db, store::KernelRepo repo, std::string data_dir)
      : owned_(std::move(owned)), db_(db), repo_(std::move(repo)), data_dir_(std::move(data_dir)) {}

  std::string describe() const override { return "data directory " + data_dir_; }

  store::StateResult<std::vector<store::Requeued>> requeue_expired() override {
    return db_->requeue_expired(db_->now());
  }
  store::StateResult<std::optional<store::Job>> claim(const std::string& worker_id, int lease_seconds) override {
    return db_->claim_job(worker_id, lease_seconds);
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
  Result<std::unique_ptr<JobTransport>> another() override {
    if (data_dir_.empty()) return fail("this transport borrows its database and cannot open another");
    return open_direct(data_dir_);
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
};

}  // namespace

Result<std::unique_ptr<JobTransport>> open_direct(const std::string& data_dir) {
  const std::string db_path = data_dir + "/state.db", repo_dir = data_dir + "/kernel_data.git";
  if (!fs::is_directory(repo_dir) || !fs::is_regular_file(db_path))
    return fail(data_dir + " is not a kzoo data directory (no kernel_data.git and state.db): run `kzoo init`, pass "
                           "--data, or work through the server with --server URL and a runner token");
  auto db = store::open_sqlite_state_db(db_path);
  if (!db) return fail("cannot open " + db_path + ": " + db.error().message);
  auto repo = store::KernelRepo::open(repo_dir);
  if (!repo) return fail("cannot open " + repo_dir + ": " + repo.error().message);
  store::StateDb* raw = db->get();
  return std::unique_ptr<JobTransport>(new Direct(std::move(*db), raw, std::move(*repo), data_dir));
}

std::unique_ptr<JobTransport> direct_over(store::StateDb& db, store::KernelRepo repo) {
  return std::unique_ptr<JobTransport>(new Direct(nullptr, &db, std::move(repo), ""));
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

json job_to_json(const store::Job& j) {
  auto ms = [](const std::optional<store::UnixMs>& t) { return t ? json(*t) : json(); };
  return {{"id", j.id},
          {"submission_id", j.submission_id},
          {"state", store::to_string(j.state)},
          {"attempts", j.attempts},
          {"max_attempts", j.max_attempts},
          {"lease_owner", j.lease_owner},
          {"lease_expires_at", ms(j.lease_expires_at)},
          {"heartbeat_at", ms(j.heartbeat_at)},
          {"created_at", j.created_at},
          {"started_at", ms(j.started_at)},
          {"finished_at", ms(j.finished_at)},
          {"held", j.held}};
}

store::Job job_from_json(const json& j) {
  store::Job out;
  if (!j.is_object()) return out;
  out.id = j.value("id", std::int64_t{0});
  out.submission_id = j.value("submission_id", std::int64_t{0});
  out.state = store::parse_state(j.value("state", "failed")).value_or(store::State::failed);
  out.attempts = j.value("attempts", 0);
  out.max_attempts = j.value("max_attempts", 0);
  out.lease_owner = j.value("lease_owner", "");
  out.lease_expires_at = opt_ms(j, "lease_expires_at");
  out.heartbeat_at = opt_ms(j, "heartbeat_at");
  out.created_at = j.value("created_at", store::UnixMs{0});
  out.started_at = opt_ms(j, "started_at");
  out.finished_at = opt_ms(j, "finished_at");
  out.held = j.value("held", false);
  return out;
}

json completion_to_json(const store::Completion& c) {
  return {{"outcome", store::to_string(store::to_state(c.outcome))},
          {"result", c.result},
          {"verdict", c.verdict},
          {"reasons", c.reasons},
          {"accepted_commit", c.accepted_commit}};
}

Result<store::Completion> completion_from_json(const json& j) {
  if (!j.is_object()) return fail("a completion is a JSON object");
  store::Completion c;
  const json& oj = j.value("outcome", json(""));
  if (!oj.is_string()) return fail(fmt::format("outcome is {}, not accepted, rejected or failed", oj.type_name()));
  const std::string o = oj.get<std::string>();
  if (o == "accepted") c.outcome = store::Outcome::accepted;
  else if (o == "rejected") c.outcome = store::Outcome::rejected;
  else if (o == "failed") c.outcome = store::Outcome::failed;
  else return fail(fmt::format("outcome \"{}\" is not accepted, rejected or failed", o));
  c.result = j.value("result", json());
  c.verdict = j.value("verdict", json());
  if (j.contains("reasons")) {
    if (!j["reasons"].is_array()) return fail("reasons must be an array of strings");
    for (const auto& r : j["reasons"]) {
      if (!r.is_string()) return fail("reasons must be an array of strings");
      c.reasons.push_back(r.get<std::string>());
    }
  }
  const auto& ac = j.value("accepted_commit", json(""));
  if (!ac.is_string()) return fail("accepted_commit must be a string");
  c.accepted_commit = ac.get<std::string>();
  return c;
}

json board_context_to_json(const BoardContext& c) {
  json rules;
  if (c.rules) rules = {{"doc", c.rules->doc}, {"commit", c.rules->commit}, {"commit_time", c.rules->commit_time}};
  json standing = json::object();
  for (const auto& [k, v] : c.standing) standing[k] = v;
  return {{"branch", c.branch},
          {"rules", rules},
          {"baseline_commit", c.baseline_commit},
          {"baseline_files", tree_to_json(c.baseline_tree)},
          {"baseline_measured", c.baseline_measured},
          {"standing", standing}};
}

Result<BoardContext> board_context_from_json(const json& j) {
  if (!j.is_object()) return fail("a board context is a JSON object");
  BoardContext c;
  const json& branch = j.value("branch", json());
  if (!branch.is_string() || (branch != "main" && !branch.get<std::string>().starts_with("routes/")))
    return fail("the board context's branch must be main or routes/<name>");
  c.branch = branch;
  if (const json& r = j.value("rules", json()); !r.is_null()) {
    if (!r.is_object() || !r.contains("doc") || !r.value("commit", json()).is_string())
      return fail("the board context's rules need their document and commit");
    auto parsed = board::parse_rules(r["doc"].dump(), "the server's scienceslack.json");
    if (!parsed) return tl::unexpected(parsed.error());
    parsed->commit = r["commit"];
    parsed->commit_time = r.value("commit_time", std::int64_t{0});
    c.rules = std::move(*parsed);
  }
  const json& bc = j.value("baseline_commit", json(""));
  if (!bc.is_string()) return fail("the board context's baseline_commit must be a string");
  c.baseline_commit = bc;
  auto tree = tree_from_json(j.value("baseline_files", json::array()));
  if (!tree) return fail("the board context's baseline source: " + tree.error().message);
  c.baseline_tree = std::move(*tree);
  c.baseline_measured = j.value("baseline_measured", json());
  const json& st = j.value("standing", json::object());
  if (!st.is_object()) return fail("the board context's standing maps kernel ids to speed-ups");
  for (const auto& [k, v] : st.items()) {
    if (!v.is_number()) return fail("the board context's standing of " + k + " is not a number");
    c.standing[k] = v.get<double>();
  }
  return c;
}

std::string base64_encode(const std::string& bytes) {
  if (sodium_init() < 0) return {};  // libsodium unusable on this system: nothing can be encoded
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  if (sodium_init() < 0) return {};  // libsodium unusable on this system: nothing can be encoded
  std::string out(text.size() / 4 * 3 + 3, '\0');
  std::size_t n = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(), nullptr,
                        &n, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
    return std::nullopt;
  out.resize(n);
  return out;
}

json tree_to_json(const package::PackageTree& t) {
  json files = json::array();
  for (const auto& f : t.files) files.push_back({{"path", f.path}, {"executable", f.executable}, {"base64", base64_encode(f.content)}});
  return files;
}

Result<package::PackageTree> tree_from_json(const json& j) {
  if (!j.is_array()) return fail("a package tree is an array of {path, executable, base64}");
  package::PackageTree t;
  std::set<std::string> dirs;
  for (const auto& f : j) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("base64") ||
        !f["base64"].is_string())
      return fail("a package tree entry needs a path and base64 content");
    auto bytes = base64_decode(f["base64"].get<std::string>());
    if (!bytes) return fail("the content of " + f["path"].get<std::string>() + " is not base64");
    std::string path = f["path"];
    if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos)
      return fail("package tree path \"" + path + "\" is not relative");
    t.files.push_back({path, std::move(*bytes), f.value("executable", false)});
    for (auto p = path.find('/'); p != std::string::npos; p = path.find('/', p + 1)) dirs.insert(path.substr(0, p));
  }
  std::sort(t.files.begin(), t.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  t.dirs.assign(dirs.begin(), dirs.end());
  return t;
}

}  // namespace kzoo::worker
