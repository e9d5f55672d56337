#include "kzoo/server/service.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <fstream>
#include <regex>
#include <span>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/server/api.hpp"
#include "kzoo/server/front_door.hpp"
#include "kzoo/server/upload_file.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/util/embedded.hpp"
#include "kzoo/util/iso_time.hpp"

namespace kzoo {
std::span<const EmbeddedFile> embedded_server_files();  // generated (CMakeLists.txt)
}

namespace kzoo::server {
namespace {

namespace fs = std::filesystem;

// Bodies of routes that read none (a release, a merge): anything past this is not ours.
constexpr std::size_t kSmallBodyCap = 1024;
// The JSON bodies people write (pull request comments and close reasons,
// route merges, board decisions): a comment holds up to 10000 bytes of text,
// and a client may send each character as a six-byte \u escape. The
// handlers' own parse cap is the same.
constexpr std::size_t kJsonBodyCap = 64 * 1024;
// What a runner posts: evidence files (base64) and result documents.
constexpr std::size_t kRunnerBodyCap = 32u << 20;
// Multipart framing and the text fields beside the package file.
constexpr std::size_t kMultipartOverhead = 64 * 1024;

struct CompiledRoute {
  const Route* route;
  std::regex re;
};

const std::vector<CompiledRoute>& compiled_routes() {
  static const std::vector<CompiledRoute> c = [] {
    std::vector<CompiledRoute> v;
    for (const auto& r : routes()) v.push_back({&r, std::regex(r.pattern)});
    return v;
  }();
  return c;
}

// The route template a request matches, for metrics labels ("unmatched" keeps
// the label set bounded whatever paths clients invent).
std::string route_label(const std::string& method, const std::string& path) {
  for (const auto& c : compiled_routes())
    if (c.route->method == method && std::regex_match(path, c.re)) return c.route->path;
  return "unmatched";
}

bool is_git(const std::string& path) { return path.starts_with("/git/"); }

std::size_t body_cap(const ServerConfig& cfg, const std::string& method, const std::string& path) {
  if (method == "POST" && is_git(path))
    return path.ends_with("/git-receive-pack") ? git_push_body_cap(cfg) : kGitFetchBodyCap;
  if (method == "POST" && (path == "/api/submissions" || path == "/api/batch"))
    return cfg.max_upload_bytes + kMultipartOverhead;
  // A runner's evidence (benchmark output, stderr log, base64) and results.
  if (method == "POST" && path.starts_with("/api/runner/")) return kRunnerBodyCap;
  if (method == "POST" && (path.starts_with("/api/pulls/") || path.starts_with("/api/issues") || path.starts_with("/api/routes/") ||
                           path.starts_with("/api/board/")))
    return kJsonBodyCap;
  return kSmallBodyCap;
}

// What a refused body may hold instead, where people write it.
std::string cap_hint(const ServerConfig& cfg, const std::string& path) {
  if (path == "/api/submissions")
    return fmt::format(" (package files are capped at {} bytes; keep sources only)", cfg.max_upload_bytes);
  if (path.starts_with("/api/pulls/") && path.ends_with("/comments"))
    return " (a comment's \"body\" is 1-10000 bytes of text: shorten it, or link to a longer text)";
  if (path == "/api/issues") return " (an issue's \"title\" is 1-200 bytes and its \"body\" at most 20000: link to a longer text)";
  if (path.starts_with("/api/issues/") && path.ends_with("/comments"))
    return " (a comment's \"body\" is 1-10000 bytes of text: shorten it, or link to a longer text)";
  if (path.starts_with("/api/pulls/") && path.ends_with("/close"))
    return " (a close reason, \"why\", is at most 1000 bytes)";
  return "";
}

// The checks every request passes before its body is read. Returns 0 when
// the request may go on, else the status it was refused with (res filled).
int refuse_before_body(const ServerConfig& cfg, const httplib::Request& req, httplib::Response& res) {
  // git sends a pack over 1 MiB chunked, and a large fetch negotiation
  // gzipped: its routes take both and count the decoded bytes themselves
  // while streaming (git_api.cpp), which is what the cap is about.
  const bool git = is_git(req.path);
  if (req.has_header("Transfer-Encoding") && !git) {
    send_error(res, 411, "length_required",
               fmt::format("Transfer-Encoding \"{}\" is refused: send the body with a Content-Length header "
                           "(uploads are capped at {} bytes)",
                           req.get_header_value("Transfer-Encoding"), cfg.max_upload_bytes));
    return 411;
  }
  if (req.has_header("Content-Encoding") && !git) {
    send_error(res, 415, "encoding_refused",
               fmt::format("Content-Encoding \"{}\" is refused: send the body unencoded (a .tar.gz package is "
                           "already compressed)",
                           req.get_header_value("Content-Encoding")));
    return 415;
  }
  std::size_t cap = body_cap(cfg, req.method, req.path);
  bool is_upload = req.method == "POST" && (req.path == "/api/submissions" || req.path == "/api/batch");
  if (!req.has_header("Content-Length")) {
    if (is_upload) {
      send_error(res, 411, "length_required", "a Content-Length header is required for uploads");
      return 411;
    }
    return 0;
  }
  const std::string v = req.get_header_value("Content-Length");
  std::uint64_t n = 0;
  bool digits = !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
  if (digits) n = std::stoull(v);
  if (!digits || req.get_header_value_count("Content-Length") != 1) {
    send_error(res, 400, "bad_content_length", fmt::format("Content-Length \"{}\" is not one decimal number", v));
    return 400;
  }
  if (n > cap) {
    send_error(res, 413, "too_large",
               fmt::format("the body of {} bytes is over this route's cap of {} bytes{}", n, cap,
                           cap_hint(cfg, req.path)));
    return 413;
  }
  return 0;
}

}  // namespace

const std::vector<Route>& routes() {
  static const std::vector<Route> r = {
      {"POST", "/api/submissions", "/api/submissions"},
      {"GET", "/api/submissions", "/api/submissions"},
      {"GET", "/api/submissions/{id}", "/api/submissions/([0-9]{1,18})"},
      {"GET", "/api/jobs", "/api/jobs"},
      {"GET", "/api/kernels", "/api/kernels"},
      {"GET", "/api/kernels/{kernel_id}", "/api/kernels/([A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,15})"},
      {"GET", "/api/jobs/{id}/log", "/api/jobs/([0-9]{1,18})/log"},
      {"GET", "/healthz", "/healthz"},
      {"GET", "/metrics", "/metrics"},
      {"GET", "/api/openapi.json", "/api/openapi.json"},
      {"GET", "/api/whoami", "/api/whoami"},
      {"GET", "/api/jobs/held", "/api/jobs/held"},
      {"POST", "/api/jobs/{id}/release", "/api/jobs/([0-9]{1,18})/release"},
      {"GET", "/api/audit", "/api/audit"},
      {"GET", "/api/pulls", "/api/pulls"},
      {"GET", "/api/pulls/{id}", "/api/pulls/([0-9]{1,18})"},
      {"POST", "/api/pulls/{id}/merge", "/api/pulls/([0-9]{1,18})/merge"},
      {"POST", "/api/pulls/{id}/close", "/api/pulls/([0-9]{1,18})/close"},
      {"POST", "/api/pulls/{id}/comments", "/api/pulls/([0-9]{1,18})/comments"},
      {"GET", "/api/issues", "/api/issues"},
      {"POST", "/api/issues", "/api/issues"},
      {"GET", "/api/issues/{id}", "/api/issues/([0-9]{1,18})"},
      {"POST", "/api/issues/{id}/comments", "/api/issues/([0-9]{1,18})/comments"},
      {"POST", "/api/issues/{id}/close", "/api/issues/([0-9]{1,18})/close"},
      {"POST", "/api/routes/{name}/merge", "/api/routes/([a-z0-9][a-z0-9._-]{0,62})/merge"},
      {"POST", "/api/batch", "/api/batch"},
      {"GET", "/api/batch", "/api/batch"},
      {"GET", "/api/batch/{id}", "/api/batch/([0-9]{1,18})"},
      {"POST", "/api/batch/{id}/cancel", "/api/batch/([0-9]{1,18})/cancel"},
      {"GET", "/slurm.sh", "/slurm.sh"},
      {"POST", "/api/runner/claim", "/api/runner/claim"},
      {"GET", "/api/runner/jobs/{id}/batch/package", "/api/runner/jobs/([0-9]{1,18})/batch/package"},
      {"POST", "/api/runner/jobs/{id}/batch/finish", "/api/runner/jobs/([0-9]{1,18})/batch/finish"},
      {"POST", "/api/runner/jobs/{id}/heartbeat", "/api/runner/jobs/([0-9]{1,18})/heartbeat"},
      {"GET", "/api/runner/jobs/{id}/package", "/api/runner/jobs/([0-9]{1,18})/package"},
      {"GET", "/api/runner/jobs/{id}/trusted", "/api/runner/jobs/([0-9]{1,18})/trusted"},
      {"GET", "/api/runner/jobs/{id}/recovery", "/api/runner/jobs/([0-9]{1,18})/recovery"},
      {"GET", "/api/runner/jobs/{id}/board", "/api/runner/jobs/([0-9]{1,18})/board"},
      {"POST", "/api/runner/jobs/{id}/evidence", "/api/runner/jobs/([0-9]{1,18})/evidence"},
      {"POST", "/api/runner/jobs/{id}/accept", "/api/runner/jobs/([0-9]{1,18})/accept"},
      {"POST", "/api/runner/jobs/{id}/complete", "/api/runner/jobs/([0-9]{1,18})/complete"},
      {"POST", "/api/runner/jobs/{id}/retry", "/api/runner/jobs/([0-9]{1,18})/retry"},
      {"GET", "/api/board", "/api/board"},
      {"GET", "/api/boards/{version}", "/api/boards/([0-9]{1,7})"},
      {"GET", "/api/routes", "/api/routes"},
      {"POST", "/api/board/baselines", "/api/board/baselines"},
      {"POST", "/api/board/status", "/api/board/status"},
      {"POST", "/api/board/checks", "/api/board/checks"},
      {"GET", "/", "/"},
      {"GET", "/boards/{version}", "/boards/([0-9]{1,7})"},
      {"GET", "/kernels/{kernel_id}", "/kernels/([A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,15})"},
      {"GET", "/submissions/{id}", "/submissions/([0-9]{1,18})"},
      {"GET", "/issues", "/issues"},
      {"GET", "/issues/{id}", "/issues/([0-9]{1,18})"},
      {"GET", "/git/kernel_data/info/refs", "/git/kernel_data(?:\\.git)?/info/refs"},
      {"POST", "/git/kernel_data/git-upload-pack", "/git/kernel_data(?:\\.git)?/git-upload-pack"},
      {"POST", "/git/kernel_data/git-receive-pack", "/git/kernel_data(?:\\.git)?/git-receive-pack"},
  };
  return r;
}

namespace {
std::string_view embedded_server_file(std::string_view name) {
  for (const auto& f : embedded_server_files())
    if (f.name == name) return f.content;
  return {};
}
}  // namespace

std::string_view openapi_json() { return embedded_server_file("openapi.json"); }
std::string_view slurm_sh() { return embedded_server_file("slurm.sh"); }

void send_json(httplib::Response& res, int status, const nlohmann::json& doc) {
  res.status = status;
  res.set_content(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                const std::string& field, const nlohmann::json& extra) {
  nlohmann::json e = {{"code", code}, {"message", message}, {"field", field.empty() ? nlohmann::json() : nlohmann::json(field)}};
  if (extra.is_object())
    for (auto& [k, v] : extra.items()) e[k] = v;
  send_json(res, status, {{"error", e}});
}

int http_status(const store::StateError& e) {
  switch (e.kind) {
    case store::StateError::not_found: return 404;
    case store::StateError::wrong_state:
    case store::StateError::not_holder: return 409;
    case store::StateError::invalid: return 400;
    case store::StateError::busy: return 503;
    case store::StateError::io: return 500;
    case store::StateError::limited: return 429;
  }
  return 500;
}

void send_state_error(httplib::Response& res, const store::StateError& e, const char* not_found,
                      const char* wrong_state) {
  const char* code = e.kind == store::StateError::not_found     ? not_found
                     : e.kind == store::StateError::wrong_state ? wrong_state
                     : e.kind == store::StateError::invalid     ? "invalid_field"
                                                                : "database";
  send_error(res, http_status(e), code, e.message, e.kind == store::StateError::not_found ? "id" : "");
}

std::int64_t path_id(const httplib::Request& req) {
  try {
    return req.matches.size() > 1 ? std::stoll(req.matches[1]) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string iso8601(store::UnixMs ms) { return iso8601_utc(ms, true); }

store::StateResult<DbPool::Lease> DbPool::get() {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      auto db = std::move(free_.back());
      free_.pop_back();
      return Lease(this, std::move(db));
    }
  }
  auto db = store::open_state(url_);
  if (!db) return tl::unexpected(db.error());
  return Lease(this, std::move(*db));
}

void DbPool::put(std::unique_ptr<store::StateDb> db) {
  db->set_actor({});  // the next request's handler sets its own
  std::lock_guard lock(mu_);
  free_.push_back(std::move(db));
}

// httplib's router, driven one request at a time by the front door
// (front_door.hpp) instead of by httplib's own accept loop and threads.
struct Router : httplib::Server {
  using httplib::Server::process_request;
  // httplib stops writing a streamed response (set_content_provider: git's
  // packs, git_api.cpp) as soon as it believes the server is shutting down,
  // which it reads as svr_sock_ == INVALID_SOCKET. The front door owns the
  // listening socket and this router never listens, so it holds a
  // placeholder descriptor instead; without one every streamed body was
  // cut to nothing after its headers.
  Router() { svr_sock_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC); }
  ~Router() override {
    const int fd = svr_sock_.exchange(INVALID_SOCKET);
    if (fd >= 0) ::close(fd);
  }
};

struct Service::Impl {
  std::unique_ptr<Api> api;
  std::optional<ServeLock> lock;
  Router http;
  std::unique_ptr<FrontDoor> door;
};

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;
const std::string& Service::data_dir() const { return impl_->api->paths.root; }

Result<std::unique_ptr<Service>> Service::open(const ServerConfig& cfg) {
  if (auto r = check_config(cfg); !r) return tl::unexpected(r.error());
  std::error_code ec;
  bool empty = !fs::exists(cfg.data_dir, ec) || (fs::is_directory(cfg.data_dir, ec) && fs::is_empty(cfg.data_dir, ec));
  if (empty) {
    auto p = init_data_dir(cfg.data_dir, cfg.catalog, cfg);
    if (!p) return tl::unexpected(p.error());
  } else if (!is_data_dir(cfg.data_dir)) {
    return fail(fmt::format("{} is neither empty nor a kzoo data directory (no kernel_data.git and state.db): "
                            "give another --data DIR, or create one with `kzoo init DIR`",
                            cfg.data_dir));
  }
  DataPaths paths{fs::absolute(cfg.data_dir).lexically_normal().string()};
  if (paths.root.size() > 1 && paths.root.back() == '/') paths.root.pop_back();
  paths.state = cfg.state;
  auto lock = ServeLock::acquire(paths, cfg.server_id);
  if (!lock) return tl::unexpected(lock.error());
  fs::create_directories(paths.uploads(), ec);
  auto repo = store::open_kernel_repo(paths.repo(), paths.state_url());
  if (!repo) return tl::unexpected(repo.error());
  auto impl = std::make_unique<Impl>();
  impl->lock.emplace(std::move(*lock));
  impl->api.reset(new Api{cfg, paths, std::move(*repo), DbPool(paths.state_url()), {}, {}, {}});
  if (auto r = impl->api->recover(); !r) return tl::unexpected(r.error());
  if (auto r = install_git_hooks(paths.root, cfg.server_id); !r) return tl::unexpected(r.error());

  Api* api = impl->api.get();
  auto& http = impl->http;
  const ServerConfig c = cfg;
  FrontDoorLimits limits;
  limits.threads = c.threads;
  limits.queue_max = c.queue_max;
  limits.header_timeout_s = c.header_timeout_s;
  limits.keep_alive_timeout_s = c.keep_alive_timeout_s;
  limits.read_timeout_s = c.read_timeout_s;
  limits.write_timeout_s = c.write_timeout_s;
  limits.max_connections = c.max_connections;
  limits.max_connections_per_client = c.max_connections_per_client;
  std::vector<Network> proxies;
  for (const auto& p : c.trusted_proxies) proxies.push_back(*parse_network(p));  // check_config parsed them
  limits.proxies = TrustedProxies(std::move(proxies));
  // Refused bodies are read on to the drain limit of the largest cap (body_drain.hpp).
  limits.drain_max_bytes =
      drain_limit(std::max<std::uint64_t>({c.max_upload_bytes + kMultipartOverhead, git_push_body_cap(c), kGitFetchBodyCap}));
  // What the responses' Keep-Alive header advertises; the front door enforces it.
  http.set_keep_alive_timeout(c.keep_alive_timeout_s);
  http.set_keep_alive_max_count(static_cast<std::size_t>(limits.keep_alive_max_requests));
  Router* router = &http;
  impl->door = std::make_unique<FrontDoor>(limits, [router](httplib::Stream& strm, bool last, bool& close) {
    return router->process_request(strm, last, close, nullptr);
  });
  http.set_payload_max_length(std::max<std::uint64_t>({c.max_upload_bytes + kMultipartOverhead, git_push_body_cap(c),
                                                       kGitFetchBodyCap}));
  http.set_pre_routing_handler([c](const httplib::Request& req, httplib::Response& res) {
    if (refuse_before_body(c, req, res) == 0) return httplib::Server::HandlerResponse::Unhandled;
    // The body was not read: the connection cannot carry another request.
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  // curl and others ask before sending a large body: refuse early, unsent.
  http.set_expect_100_continue_handler([c](const httplib::Request& req, httplib::Response& res) {
    int status = refuse_before_body(c, req, res);
    if (status == 0) return 100;
    res.set_header("Connection", "close");
    return status;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404)
      send_error(res, 404, "not_found",
                 fmt::format("no route {} {}: see GET /api/openapi.json for the API", req.method, req.path));
    else if (res.status == 413)
      send_error(res, 413, "too_large", "the request body is over this route's cap");
    else
      send_error(res, res.status, "http_error", fmt::format("the request could not be served (HTTP {})", res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "internal", "internal error: " + what);
  });
  http.set_logger([api](const httplib::Request& req, const httplib::Response& res) {
    api->metrics.count_request(route_label(req.method, req.path), req.method, res.status);
  });

  http.Post("/api/submissions", [api](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) { api->post_submission(req, res, reader); });
  http.Post("/api/batch", [api](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) { api->post_batch(req, res, reader); });
  for (const auto& r : routes()) {
    if (r.path == "/git/kernel_data/info/refs")
      http.Get(r.pattern, [api](const httplib::Request& req, httplib::Response& res) { api->git_info_refs(req, res); });
    else if (r.method == "POST" && r.path.starts_with("/git/"))
      http.Post(r.pattern, [api](const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) { api->git_rpc(req, res, reader); });
  }
  auto get = [&](const std::string& path, void (Api::*fn)(const httplib::Request&, httplib::Response&)) {
    for (const auto& r : routes())
      if (r.method == "GET" && r.path == path)
        http.Get(r.pattern, [api, fn](const httplib::Request& req, httplib::Response& res) { (api->*fn)(req, res); });
  };
  get("/api/submissions", &Api::get_submissions);
  get("/api/submissions/{id}", &Api::get_submission);
  get("/api/jobs", &Api::get_jobs);
  get("/api/kernels", &Api::get_kernels);
  get("/api/kernels/{kernel_id}", &Api::get_kernel);
  get("/api/jobs/{id}/log", &Api::get_job_log);
  FrontDoor* door = impl->door.get();
  http.Get("/metrics", [api, door](const httplib::Request& req, httplib::Response& res) {
    api->get_metrics(req, res);
    res.body += door->render_metrics();  // the listener's own counters
  });
  get("/api/whoami", &Api::get_whoami);
  get("/api/jobs/held", &Api::get_held_jobs);
  get("/api/audit", &Api::get_audit);
  get("/api/pulls", &Api::get_pulls);
  get("/api/pulls/{id}", &Api::get_pull);
  get("/api/issues", &Api::get_issues);
  get("/api/batch", &Api::get_batches);
  get("/api/batch/{id}", &Api::get_batch);
  get("/slurm.sh", &Api::get_slurm_sh);
  get("/api/issues/{id}", &Api::get_issue);
  get("/api/runner/jobs/{id}/package", &Api::runner_package);
  get("/api/runner/jobs/{id}/trusted", &Api::runner_trusted);
  get("/api/runner/jobs/{id}/recovery", &Api::runner_recovery);
  get("/api/runner/jobs/{id}/board", &Api::runner_board);
  get("/api/runner/jobs/{id}/batch/package", &Api::runner_batch_package);
  auto post = [&](const std::string& path, void (Api::*fn)(const httplib::Request&, httplib::Response&)) {
    for (const auto& r : routes())
      if (r.method == "POST" && r.path == path)
        http.Post(r.pattern, [api, fn](const httplib::Request& req, httplib::Response& res) { (api->*fn)(req, res); });
  };
  post("/api/jobs/{id}/release", &Api::post_release);
  post("/api/pulls/{id}/merge", &Api::post_pull_merge);
  post("/api/pulls/{id}/close", &Api::post_pull_close);
  post("/api/pulls/{id}/comments", &Api::post_pull_comment);
  post("/api/issues", &Api::post_issue);
  post("/api/batch/{id}/cancel", &Api::post_batch_cancel);
  post("/api/issues/{id}/comments", &Api::post_issue_comment);
  post("/api/issues/{id}/close", &Api::post_issue_close);
  post("/api/routes/{name}/merge", &Api::post_route_merge);
  post("/api/runner/claim", &Api::runner_claim);
  post("/api/runner/jobs/{id}/heartbeat", &Api::runner_heartbeat);
  post("/api/runner/jobs/{id}/evidence", &Api::runner_evidence);
  post("/api/runner/jobs/{id}/accept", &Api::runner_accept);
  post("/api/runner/jobs/{id}/complete", &Api::runner_complete);
  post("/api/runner/jobs/{id}/retry", &Api::runner_retry);
  post("/api/runner/jobs/{id}/batch/finish", &Api::runner_batch_finish);
  get("/api/board", &Api::get_board);
  get("/api/boards/{version}", &Api::get_board_version);
  get("/api/routes", &Api::get_routes);
  get("/", &Api::page_board);
  get("/boards/{version}", &Api::page_board_version);
  get("/kernels/{kernel_id}", &Api::page_kernel);
  get("/submissions/{id}", &Api::page_submission);
  get("/issues", &Api::page_issues);
  get("/issues/{id}", &Api::page_issue);
  post("/api/board/baselines", &Api::post_baselines);
  post("/api/board/status", &Api::post_board_status);
  post("/api/board/checks", &Api::post_board_checks);
  http.Get("/healthz", [api](const httplib::Request&, httplib::Response& res) {
    auto head = api->repo.head();
    auto db = api->db.get();
    bool ok = head.has_value() && db.has_value();
    send_json(res, ok ? 200 : 503,
              {{"status", ok ? "ok" : "degraded"},
               {"repository", head ? *head : "error: " + head.error().message},
               {"database", db ? "ok" : "error: " + db.error().message}});
  });
  http.Get("/api/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(std::string(openapi_json()), "application/json");
  });
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

Result<int> Service::bind() {
  auto& c = impl_->api->cfg;
  return impl_->door->bind(c.listen_host, c.listen_port);
}

std::string Service::limits_note() const {
  const auto& l = impl_->door->limits();
  return fmt::format("at most {} connections ({} per client address; file-descriptor limit {}), request heads "
                     "within {} s, kept-alive connections idle up to {} s, {} worker threads",
                     l.max_connections, l.max_connections_per_client, impl_->door->fd_limit(), l.header_timeout_s,
                     l.keep_alive_timeout_s, l.threads);
}

bool Service::run() {
  // Batch jobs that ended are judged within seconds even when nobody asks
  // (a direct-mode worker commits their result without the server): every
  // 2 s, until the front door stops.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  Api* api = impl_->api.get();
  std::thread judge([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::seconds(2), [&] { return stopping; })) {
      lock.unlock();
      if (auto db = api->db.get()) api->judge_batches(**db);
      lock.lock();
    }
  });
  const bool ok = impl_->door->run();
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  judge.join();
  return ok;
}
void Service::stop() { impl_->door->stop(); }

}  // namespace kzoo::server
