// Internals of the service shared by its translation units: the request
// handlers and what they need (configuration, repository, a pool of state
// database connections, metrics, the kernel list cache). Not a public header.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kzoo/access/policy.hpp"
#include "kzoo/gitserve/proc_receive.hpp"
#include "kzoo/package/package_tree.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/server/metrics.hpp"
#include "kzoo/server/upload_file.hpp"
#include "kzoo/server/upload_form.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"

namespace kzoo::server {

// One StateDb connection per request in flight (a connection is one thread's,
// state_db.hpp); connections are reused, at most one per server thread.
class DbPool {
 public:
  explicit DbPool(std::string state_url) : url_(std::move(state_url)) {}
  class Lease {
   public:
    Lease(DbPool* pool, std::unique_ptr<store::StateDb> db) : pool_(pool), db_(std::move(db)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (db_) pool_->put(std::move(db_));
    }
    store::StateDb* operator->() { return db_.get(); }
    store::StateDb& operator*() { return *db_; }

   private:
    DbPool* pool_;
    std::unique_ptr<store::StateDb> db_;
  };
  store::StateResult<Lease> get();

 private:
  void put(std::unique_ptr<store::StateDb> db);
  std::string url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<store::StateDb>> free_;
};

// The answer of GET /api/kernels for one HEAD, rebuilt when HEAD moves.
struct KernelIndex {
  std::string head;
  std::set<std::string> ids;
  std::map<std::string, std::string> status;  // desc.yaml `status` of each kernel that declares one
  std::string body;  // the JSON response
};

// Who sent a request, once authorize() let it through: nullopt = anonymous.
struct Caller {
  std::optional<access::Principal> who;
  access::Decision decision;
  std::string address;  // the client's (trusted proxies resolved by the front door)
  store::Actor actor() const {
    return who ? store::Actor{who->user, who->token_id, address} : store::Actor{"anonymous", "", address};
  }
};

struct KeptUpload {
  UploadFile file;
  std::string name;    // "<sha256>-<suffix>.tar.gz", under the uploads directory once committed
  std::string path;    // where it will be: uploads/<name>
  std::string sha256;
};

// What made the commit a push judges (Api::judge_ref): the caller's own push,
// or a batch job's script run for them. A batch job's result never changes
// project files, whoever owns it, and `slurm_output` (slurm-<id>.out, which
// Slurm's convention puts at the top) is passed over by the tree rules.
struct PushOrigin {
  bool batch_job = false;
  std::string slurm_output;
};

struct Api {
  ServerConfig cfg;
  DataPaths paths;
  store::KernelRepo repo;
  DbPool db;
  Metrics metrics;

  std::mutex index_mu;
  std::shared_ptr<const KernelIndex> index;
  // The kernel list at the current HEAD (cached per HEAD commit).
  Result<std::shared_ptr<const KernelIndex>> kernels();

  void post_submission(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void get_submission(const httplib::Request& req, httplib::Response& res);
  void get_kernels(const httplib::Request& req, httplib::Response& res);
  void get_kernel(const httplib::Request& req, httplib::Response& res);
  void get_job_log(const httplib::Request& req, httplib::Response& res);
  void get_metrics(const httplib::Request& req, httplib::Response& res);
  void get_held_jobs(const httplib::Request& req, httplib::Response& res);
  // The queue (queue_api.cpp): paged lists of submissions and of jobs.
  void get_submissions(const httplib::Request& req, httplib::Response& res);
  void get_jobs(const httplib::Request& req, httplib::Response& res);
  void post_release(const httplib::Request& req, httplib::Response& res);
  void get_audit(const httplib::Request& req, httplib::Response& res);
  void get_whoami(const httplib::Request& req, httplib::Response& res);

  // The runner API (runner_api.cpp): a worker with a runner token claims,
  // heartbeats, reads its job's inputs, records evidence, accepts, completes.
  void runner_claim(const httplib::Request& req, httplib::Response& res);
  void runner_heartbeat(const httplib::Request& req, httplib::Response& res);
  void runner_package(const httplib::Request& req, httplib::Response& res);
  void runner_trusted(const httplib::Request& req, httplib::Response& res);
  void runner_recovery(const httplib::Request& req, httplib::Response& res);
  void runner_board(const httplib::Request& req, httplib::Response& res);
  void runner_evidence(const httplib::Request& req, httplib::Response& res);
  void runner_accept(const httplib::Request& req, httplib::Response& res);
  void runner_complete(const httplib::Request& req, httplib::Response& res);
  void runner_retry(const httplib::Request& req, httplib::Response& res);
  void runner_batch_package(const httplib::Request& req, httplib::Response& res);
  void runner_batch_finish(const httplib::Request& req, httplib::Response& res);

  // The request's token (Authorization: Bearer), checked against the store,
  // then access::authorize for `action`. nullopt when refused: 401 (a token
  // that is malformed, unknown, revoked or expired, or none where one is
  // needed) or 403, with `res` filled and WWW-Authenticate set on 401.
  std::optional<Caller> require(const httplib::Request& req, httplib::Response& res, access::Action action,
                                const access::Context& ctx = {});
  // Per-token limits for a submission of `incoming_bytes`; false when over
  // one (429 with Retry-After, `res` filled).
  bool within_limits(const Caller& c, std::uint64_t incoming_bytes, httplib::Response& res);
  // A token's caps: its own limits, else the server's defaults.
  store::Admission admission_of(const store::Token& t) const;
  // The board (board_api.cpp): JSON and pages.
  void get_board(const httplib::Request& req, httplib::Response& res);
  void get_board_version(const httplib::Request& req, httplib::Response& res);
  void get_routes(const httplib::Request& req, httplib::Response& res);
  void post_baselines(const httplib::Request& req, httplib::Response& res);
  void post_board_status(const httplib::Request& req, httplib::Response& res);
  void post_board_checks(const httplib::Request& req, httplib::Response& res);
  void page_board(const httplib::Request& req, httplib::Response& res);
  void page_board_version(const httplib::Request& req, httplib::Response& res);
  void page_kernel(const httplib::Request& req, httplib::Response& res);
  void page_submission(const httplib::Request& req, httplib::Response& res);
  // Pull requests (pulls_api.cpp).
  void get_pulls(const httplib::Request& req, httplib::Response& res);
  void get_pull(const httplib::Request& req, httplib::Response& res);
  void post_pull_merge(const httplib::Request& req, httplib::Response& res);
  void post_pull_close(const httplib::Request& req, httplib::Response& res);
  void post_pull_decision(const httplib::Request& req, httplib::Response& res, bool merge);
  void post_pull_comment(const httplib::Request& req, httplib::Response& res);
  // Issues (issues_api.cpp).
  void get_issues(const httplib::Request& req, httplib::Response& res);
  void get_issue(const httplib::Request& req, httplib::Response& res);
  void post_issue(const httplib::Request& req, httplib::Response& res);
  void post_issue_comment(const httplib::Request& req, httplib::Response& res);
  void post_issue_close(const httplib::Request& req, httplib::Response& res);
  void page_issues(const httplib::Request& req, httplib::Response& res);
  void page_issue(const httplib::Request& req, httplib::Response& res);
  // The token's hourly limit on texts it writes for others (comments, reviews,
  // issues: limit_comments_per_hour) before one more; false when over it (429
  // with Retry-After, `res` filled).
  bool within_writing_limit(const Caller& c, httplib::Response& res);
  // Users' batch jobs (batch_api.cpp): sbatch, squeue, sacct, scancel and /slurm.sh.
  void post_batch(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void get_batches(const httplib::Request& req, httplib::Response& res);
  void get_batch(const httplib::Request& req, httplib::Response& res);
  void post_batch_cancel(const httplib::Request& req, httplib::Response& res);
  void get_slurm_sh(const httplib::Request& req, httplib::Response& res);
  // Judges ended batch jobs' result commits as pushes by their owners (each once, whichever server takes it).
  void judge_batches(store::StateDb& db);
  // Route merges (route_merge_api.cpp).
  void post_route_merge(const httplib::Request& req, httplib::Response& res);
  // A package from the repository kept as an upload, so that its submission
  // reads as every other one (baselines, route merges): the file is finished,
  // and commit(name) moves it into place once the submission is recorded.
  Result<KeptUpload> keep_tree(const std::string& kernel_id, const package::PackageTree& tree);
  // The token check of a page (require, Action::read), its refusal as a page.
  bool page_readable(const httplib::Request& req, httplib::Response& res);

  // git over HTTP (git_api.cpp, docs/GIT.md): git-http-backend as CGI; a
  // push's refs judged by judge_push, the proc-receive hook's question.
  void git_info_refs(const httplib::Request& req, httplib::Response& res);
  void git_rpc(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void git_run(const httplib::Request& req, httplib::Response& res, const Caller& caller, const std::string& what,
               int body_fd, std::uint64_t body_bytes);
  // The token (Basic password or Bearer), then authorize: read, or for a
  // push someone signed in; a 401 challenges with Basic, which git answers.
  std::optional<Caller> git_caller(const httplib::Request& req, httplib::Response& res, bool push);
  gitserve::PushAnswer judge_push(const Caller& caller, const std::vector<gitserve::PushCommand>& cmds);
  // `origin`: the caller's own push (default) or a batch job's result.
  gitserve::RefResult judge_ref(const Caller& caller, store::StateDb& db, const gitserve::PushCommand& c,
                                std::vector<std::string>& messages, const PushOrigin& origin = {});
  // A maintainer's push of project files to main that passed every rule:
  // main moves to one commit holding the pushed tree, audited; the rules in
  // it take effect only when the `checks` tag is moved (docs/GIT.md).
  gitserve::RefResult land_project_files(const Caller& caller, store::StateDb& db, const gitserve::PushCommand& c,
                                         const std::string& main_head, const std::vector<std::string>& files,
                                         std::vector<std::string>& messages);
  // What `kernel_id`'s jobs need of a GPU runner, its compute capability and
  // the GPUs of its node (submissions.cpp): desc.yaml on main and the
  // catalog's task.
  store::JobNeeds needs_of(const std::string& kernel_id);

  // How an upload's body streams (upload_form.hpp): into the uploads
  // directory, under max_upload_bytes and upload_deadline_s, counted in the
  // metrics; the caller names its fields.
  FormSpec upload_form_spec();

  // Rejects submissions left `received` by a killed server; deletes stray uploads.
  Result<int> recover();
};

// A fetch's request body (git's negotiation; git-http-backend's own default
// buffer is 10 MB) and a push's (a pack: max_upload_bytes, plus room for the
// ref commands so that git's own in-band "pack exceeds maximum allowed size"
// answers a pack just over the cap).
constexpr std::uint64_t kGitFetchBodyCap = 10u << 20;
std::uint64_t git_push_body_cap(const ServerConfig& cfg);
// DATA/git-hooks/<server id>: the hooks git runs for this server's pushes.
std::string git_hooks_dir(const std::string& data_dir, const std::string& server_id);
// Writes git_hooks_dir()/proc-receive, the hook that runs this binary.
Result<void> install_git_hooks(const std::string& data_dir, const std::string& server_id);

// {"error": {"code", "message", "field"}} (+ extra keys inside "error").
void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                const std::string& field = "", const nlohmann::json& extra = nullptr);
void send_json(httplib::Response& res, int status, const nlohmann::json& doc);
// A page, with the pages' Content-Security-Policy (nothing but inline styles and data: images).
void send_html(httplib::Response& res, int status, const std::string& html);
// The route's numeric id (its first capture); 0 when it is none (the route's
// pattern allows only 1-18 digits, so that is never a real id).
std::int64_t path_id(const httplib::Request& req);
// A state refusal as an answer: `not_found` and `wrong_state` name the codes
// of this resource's (e.g. "unknown_issue", "closed"); invalid is
// "invalid_field", anything else "database".
void send_state_error(httplib::Response& res, const store::StateError& e, const char* not_found,
                      const char* wrong_state);
// StateError kind -> HTTP status (not_found 404, wrong_state/not_holder 409,
// invalid 400, busy 503, io 500).
int http_status(const store::StateError& e);
std::string iso8601(store::UnixMs ms);
// A job as GET /api/jobs and GET /api/submissions/{id} show it (queue_api.cpp);
// `position` is its place in line while a worker may claim it.
nlohmann::json job_json(const store::Job& j, std::optional<std::int64_t> position);

}  // namespace kzoo::server
