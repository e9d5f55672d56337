// git over HTTP (docs/GIT.md): GET /git/kernel_data/info/refs and POST
// /git/kernel_data/git-upload-pack | git-receive-pack, served by Debian's
// git-http-backend (gitserve/backend.hpp), never by a protocol of our own.
//
// Who may: a fetch or clone is a read (access::Action::read, so it follows
// require_token_for_reads); a push needs a signed-in person or agent. The
// token travels as the HTTP Basic password (any user name), so git's
// credential helpers work; a 401 says `WWW-Authenticate: Basic` so git asks.
//
// A push never moves a branch. git-receive-pack hands every ref to the
// proc-receive hook (receive.procReceiveRefs=refs), which asks this thread,
// over the socket run_backend passed down, what to answer; judge_push
// answers it with the same policy function (access::authorize) and the same
// validation (package::inspect_tree) as an upload, and turns each changed
// kernel into a submission and job exactly as POST /api/submissions does.
// The one exception is a maintainer's own push of project files to main
// (scienceslack.json, AGENTS.md, a harness: land_project_files): they are
// the maintainers' to change and no check judges them, so once they pass the
// rules the board applies when it reads them, main moves to one commit with
// the pushed tree. The rules still take effect only at the `checks` tag.
#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/format/utf8.hpp"
#include "kzoo/gitserve/backend.hpp"
#include "kzoo/gitserve/proc_receive.hpp"
#include "kzoo/gitserve/push_review.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/body_drain.hpp"

namespace kzoo::server {
namespace {

using nlohmann::json;
const std::string kZeros(40, '0');

bool valid_topic(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

// At most `max` bytes of `s`, never cutting a UTF-8 sequence.
std::string utf8_prefix(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// The pushed commit's message, trailing blank space dropped, at most 4000
// bytes; refused when it is not UTF-8, since it becomes `what`.
Result<std::string> pushed_message(const std::string& repo_dir, const std::string& id, std::string_view what) {
  auto msg = gitserve::commit_message(repo_dir, id);
  if (!msg) return msg;
  if (format::find_invalid_utf8(*msg))
    return fail(fmt::format("the commit message is not UTF-8: it becomes {}; reword it (git commit --amend)", what));
  std::string text = std::move(*msg);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return utf8_prefix(text, 4000);
}

}  // namespace

std::uint64_t git_push_body_cap(const ServerConfig& cfg) { return cfg.max_upload_bytes + (1u << 20); }

std::optional<Caller> Api::git_caller(const httplib::Request& req, httplib::Response& res, bool push) {
  // A push needs someone signed in (a person or an agent; runners only run jobs).
  auto c = require(req, res, push ? access::Action::comment : access::Action::read);
  if (!c && res.status == 401) {
    // git (through curl) answers only a challenge it knows, and asks its
    // credential helpers then: Basic, with the token as the password.
    res.headers.erase("WWW-Authenticate");
    res.set_header("WWW-Authenticate", "Basic realm=\"kzoo\"");
  }
  return c;
}

void Api::git_info_refs(const httplib::Request& req, httplib::Response& res) {
  const std::string service = req.get_param_value("service");
  if (service != "git-upload-pack" && service != "git-receive-pack")
    return send_error(res, 403, "dumb_http",
                      "kzoo serves git's smart HTTP protocol only (GET info/refs?service=git-upload-pack): use git "
                      "1.6.6 or newer");
  auto caller = git_caller(req, res, service == "git-receive-pack");
  if (!caller) return;
  git_run(req, res, *caller, "info/refs", -1, 0);
}

void Api::git_rpc(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  const bool push = req.path.ends_with("/git-receive-pack");
  auto caller = git_caller(req, res, push);
  if (!caller) {
    res.set_header("Connection", "close");
    return;
  }
  if (push && !within_limits(*caller, 0, res)) {
    res.set_header("Connection", "close");
    return;
  }
  const std::string want = push ? "application/x-git-receive-pack-request" : "application/x-git-upload-pack-request";
  if (req.get_header_value("Content-Type") != want) {
    res.set_header("Connection", "close");
    return send_error(res, 415, "not_git", fmt::format("Content-Type must be {}: this is git's endpoint", want));
  }
  // The body, de-chunked and inflated by httplib, spooled to an unlinked
  // file and capped as it arrives: a pack is an upload (max_upload_bytes,
  // upload_deadline_s); a fetch's negotiation is small.
  const std::uint64_t cap = push ? git_push_body_cap(cfg) : kGitFetchBodyCap;
  auto fd = gitserve::spool_file(paths.uploads());
  if (!fd) return send_error(res, 500, "storage", fd.error().message);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{*fd};
  // Past the cap the body is still read to its end (body_drain.hpp), so that
  // git, still sending its pack, reads the 413 instead of a reset.
  BodyBudget budget(cap, std::chrono::steady_clock::now() + std::chrono::seconds(cfg.upload_deadline_s));
  bool io = false;
  bool read_ok = reader([&](const char* data, std::size_t n) {
    switch (budget.take(n)) {
      case BodyBudget::Take::keep:
        if (!gitserve::write_all(*fd, std::string(data, n))) return !(io = true);
        return true;
      case BodyBudget::Take::discard:
        return true;
      case BodyBudget::Take::stop:
        return false;
    }
    return false;
  });
  if (!read_ok || budget.over() || budget.late() || io) {
    res.set_header("Connection", "close");
    if (budget.over()) {
      const std::string fix = push ? "push fewer or smaller files (kernel packages hold sources; the cap is the "
                                     "server's max_upload_bytes plus 1 MiB)"
                                   : "fetch with fewer refs";
      const char* what = push ? "push" : "request";
      // A body read to its end has a size to name; one cut off has a floor.
      return send_error(res, 413, "too_large",
                        budget.cut() || !read_ok
                            ? fmt::format("the {} is over the cap of {} bytes (it sent more than {} bytes; the "
                                          "server stopped reading there): {}",
                                          what, cap, budget.seen(), fix)
                            : fmt::format("the {} of {} bytes is over the cap of {} bytes: {}", what, budget.seen(),
                                          cap, fix));
    }
    if (budget.late())
      return send_error(res, 408, "upload_timeout",
                        fmt::format("the request took longer than {} s: push less at a time", cfg.upload_deadline_s));
    return send_error(res, 400, "bad_body", "the request body could not be read in full");
  }
  const std::uint64_t got = budget.seen();
  git_run(req, res, *caller, push ? "git-receive-pack" : "git-upload-pack", *fd, got);
}

void Api::git_run(const httplib::Request& req, httplib::Response& res, const Caller& caller, const std::string& what,
                  int body_fd, std::uint64_t body_bytes) {
  const bool push = what == "git-receive-pack" || req.get_param_value("service") == "git-receive-pack";
  gitserve::BackendRequest br;
  br.method = req.method;
  br.project_root = paths.root;
  br.path_info = "/kernel_data.git/" + what;
  if (req.has_param("service")) br.query = "service=" + req.get_param_value("service");
  br.content_type = req.get_header_value("Content-Type");
  br.body_fd = body_fd;
  br.body_bytes = body_bytes;
  br.git_protocol = req.get_header_value("Git-Protocol");
  if (br.git_protocol.size() > 256 || br.git_protocol.find_first_of("\r\n") != std::string::npos) br.git_protocol.clear();
  br.remote_user = caller.who ? caller.who->user : "";
  br.remote_addr = caller.address;
  br.scratch_dir = paths.uploads();
  br.deadline_s = cfg.upload_deadline_s;
  br.config = {
      {"http.uploadpack", "true"},
      // Only a signed-in caller gets this far with a push; reads never may push.
      {"http.receivepack", push ? "true" : "false"},
      {"uploadpack.allowFilter", "true"},
      // Every ref goes to the hook: nothing a push names ever moves by itself.
      {"core.hooksPath", git_hooks_dir(paths.root, cfg.server_id)},
      {"receive.procReceiveRefs", "refs"},
      // The pack itself: objects checked (malformed trees, bad modes, .git
      // names), and capped in-band so the pusher sees git's own message.
      {"receive.fsckObjects", "true"},
      {"receive.maxInputSize", std::to_string(cfg.max_upload_bytes)},
      {"receive.autogc", "false"},
      {"receive.advertisePushOptions", "false"},
      {"core.logAllRefUpdates", "false"},
  };
  gitserve::PushCallback on_push = [&](const std::string& question) -> std::string {
    gitserve::PushAnswer a;
    auto doc = format::parse_json(question, "the hook's question", {.max_bytes = gitserve::kMaxCallbackLine, .max_depth = 8});
    if (!doc) {
      a.messages.push_back("kzoo: " + to_string(doc.error()));
    } else if (auto cmds = gitserve::commands_from_json(*doc); !cmds) {
      a.messages.push_back("kzoo: " + cmds.error().message);
    } else {
      a = judge_push(caller, *cmds);
    }
    return gitserve::to_json(a).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto r = gitserve::run_backend(br, push && what == "git-receive-pack" ? &on_push : nullptr);
  if (!r) return send_error(res, 500, "git", r.error().message);
  if (!r->stderr_text.empty())
    fmt::print(stderr, "{}\n",
               json{{"event", "git"}, {"service", what}, {"user", br.remote_user}, {"exit", r->exit_status},
                    {"stderr", r->stderr_text.substr(0, 2000)}}
                   .dump(-1, ' ', false, json::error_handler_t::replace));
  if (r->timed_out) {
    if (r->body_fd >= 0) ::close(r->body_fd);
    return send_error(res, 504, "git_timeout",
                      fmt::format("git took longer than {} s (upload_deadline_s): push or fetch less at a time",
                                  cfg.upload_deadline_s));
  }
  res.status = r->status;
  std::string type = "application/octet-stream";
  for (const auto& [k, v] : r->headers) {
    if (k == "Content-Type") type = v;
    else if (k == "Cache-Control" || k == "Expires" || k == "Pragma") res.set_header(k, v);
  }
  const int out = r->body_fd;
  const std::uint64_t off = r->body_offset;
  if (r->body_size == 0) {
    ::close(out);
    res.set_content("", type);
    return;
  }
  res.set_content_provider(
      r->body_size, type,
      [out, off](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        char buf[65536];
        ssize_t n = ::pread(out, buf, std::min(length, sizeof buf), static_cast<off_t>(off + offset));
        if (n <= 0) return false;
        sink.write(buf, static_cast<std::size_t>(n));
        return true;
      },
      [out](bool) { ::close(out); });
}

gitserve::PushAnswer Api::judge_push(const Caller& caller, const std::vector<gitserve::PushCommand>& cmds) {
  gitserve::PushAnswer a;
  auto lease = db.get();
  if (!lease) {
    for (const auto& c : cmds) a.results.push_back({c.ref, false, "the server's database is unavailable: " + lease.error().message});
    return a;
  }
  auto& dbx = *lease;
  dbx->set_actor(caller.actor());
  for (const auto& c : cmds) a.results.push_back(judge_ref(caller, *dbx, c, a.messages));
  return a;
}

gitserve::RefResult Api::judge_ref(const Caller& caller, store::StateDb& dbx, const gitserve::PushCommand& c,
                                   std::vector<std::string>& messages, const PushOrigin& origin) {
  const std::string& ref = c.ref;
  auto refuse = [&](std::string reason) {
    messages.push_back(fmt::format("kzoo: {}: refused: {}", ref, reason));
    return gitserve::RefResult{ref, false, reason};
  };
  if (c.new_id == kZeros)
    return refuse("a push does not delete: routes and main change only by judged submissions");
  const access::Principal& who = *caller.who;

  // Where the push is aimed, and whether this caller may aim there: the
  // API's own policy (access::authorize), with the way forward on refusal.
  std::string route;          // "" = main
  bool pull_request = false;
  bool held = access::authorize(caller.who, access::Action::submit).held;
  // Project files (outside every kernel's src/) are changed only on main, by
  // a maintainer's own token: everywhere else they stay refused, naming who may.
  auto project_files = gitserve::ProjectFiles::refused;
  if (ref == "refs/heads/main") {
    auto d = access::authorize(caller.who, access::Action::push_main);
    if (!d.allowed())
      return refuse(d.reason + "; open a pull request instead: git push origin HEAD:refs/pulls/main/<topic> (or kzoo "
                               "submit --pull-request)");
    // A batch job's result is what a script made, not the maintainer's own
    // push: it never changes project files.
    if (!origin.batch_job && access::authorize(caller.who, access::Action::change_project_files).allowed())
      project_files = gitserve::ProjectFiles::listed;
  } else if (ref.rfind("refs/heads/routes/", 0) == 0) {
    route = ref.substr(18);
    if (!board::valid_route_name(route))
      return refuse(fmt::format("\"{}\" is not a route name: use 1-63 of a-z 0-9 . _ -, starting with a letter or digit",
                                package::detail::printable(route)));
    access::Context ctx;
    if (auto rs = dbx.list_routes(); rs)
      for (const auto& r : *rs)
        if (r.name == route) ctx.route_owner = r.owner;
    auto d = access::authorize(caller.who, ctx.route_owner ? access::Action::push_route : access::Action::start_route, ctx);
    if (!d.allowed())
      return refuse(fmt::format("{}; open a pull request instead: git push origin HEAD:refs/pulls/{}/<topic> (or kzoo "
                                "submit --route {} --pull-request)",
                                d.reason, route, route));
    held = held || d.held;
  } else if (ref.rfind("refs/pulls/", 0) == 0) {
    const std::string rest = ref.substr(11);
    const auto slash = rest.find('/');
    const std::string into = rest.substr(0, slash), topic = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (!valid_topic(topic))
      return refuse("a pull request is pushed to refs/pulls/<route>/<topic> (or refs/pulls/main/<topic>), the topic "
                    "1-63 of A-Z a-z 0-9 . _ -");
    pull_request = true;
    if (into == "main") {
      if (access::authorize(caller.who, access::Action::push_main).allowed())
        return refuse("you may push to main itself: git push origin HEAD:main");
      auto d = access::authorize(caller.who, access::Action::open_pull_request);
      if (!d.allowed()) return refuse(d.reason);
    } else {
      if (!board::valid_route_name(into))
        return refuse(fmt::format("\"{}\" is not a route name", package::detail::printable(into)));
      access::Context ctx;
      if (auto rs = dbx.list_routes(); rs)
        for (const auto& r : *rs)
          if (r.name == into) ctx.route_owner = r.owner;
      if (!ctx.route_owner)
        return refuse(fmt::format("route {} does not exist yet: push to routes/{} to start it (git push origin "
                                  "HEAD:routes/{})",
                                  into, into, into));
      if (access::authorize(caller.who, access::Action::push_route, ctx).allowed())
        return refuse(fmt::format("route {} is yours to push to: git push origin HEAD:routes/{}", into, into));
      auto d = access::authorize(caller.who, access::Action::open_pull_request, ctx);
      if (!d.allowed()) return refuse(d.reason);
      route = into;
    }
  } else {
    return refuse("kzoo takes pushes to main, routes/<name> and refs/pulls/<route>/<topic> only; tags, refs/jobs and "
                  "every other ref are the server's");
  }
  const std::string target = route.empty() ? "main" : "routes/" + route;

  // What changed, relative to what the pusher built on: the merge base of
  // the pushed commit and the target (main for a route not yet accepted on).
  if (!gitserve::is_commit(repo.dir(), c.new_id)) return refuse("the pushed object is not a commit");
  auto tip = repo.head("refs/heads/" + target);
  if (!tip) tip = repo.head("refs/heads/main");
  if (!tip) return refuse("the repository has no main branch: " + tip.error().message);
  auto base = gitserve::merge_base(repo.dir(), c.new_id, *tip);
  if (!base) return refuse(base.error().message);
  if (!*base)
    return refuse(fmt::format("the pushed commit shares no history with {}: clone the repository and build on it", target));
  if (**base == c.new_id) return refuse(fmt::format("nothing new: the commit is already in {}", target));
  auto packages = repo.list_packages(**base);
  if (!packages) return refuse(packages.error().message);
  std::set<std::string> ignored;  // paths from the repository root the tree rules pass over
  if (origin.batch_job && !origin.slurm_output.empty()) ignored.insert(origin.slurm_output);
  auto review = gitserve::review_push(repo.dir(), **base, c.new_id, *packages, package::repository_limits(),
                                      project_files, ignored);
  if (!review) return refuse(review.error().message);
  Violations vs = review->violations;
  if (vs.empty() && !review->project_files.empty()) {
    vs = gitserve::review_project_change(repo, c.new_id, *review);
    if (vs.empty()) {
      // The pushed tree lands whole, so it must be built on main's head: taken
      // over anything that landed since, it would undo it.
      if (**base != *tip)
        return refuse(fmt::format("main has moved since the commit you built on ({} is main's head now, {} yours): "
                                  "project files land as pushed, so build on main's head: git pull --rebase origin "
                                  "main, then push again",
                                  tip->substr(0, 12), (**base).substr(0, 12)));
      return land_project_files(caller, dbx, c, *tip, review->project_files, messages);
    }
  }
  std::vector<std::pair<std::string, package::PackageTree>> trees;
  if (vs.empty()) {
    if (review->kernels.empty())
      return refuse(fmt::format("nothing to judge: the push changes no kernel's src/ relative to {}", target));
    for (const auto& k : review->kernels) {
      auto tree = repo.read_package(k, c.new_id);
      if (!tree) return refuse(tree.error().message);
      // The upload's own validation: package rules and the evidence policy.
      auto insp = package::inspect_tree(*tree, k, c.new_id.substr(0, 12) + ":" + k);
      for (auto& v : insp.violations) vs.push_back(std::move(v));
      trees.emplace_back(k, std::move(*tree));
    }
  }
  if (!vs.empty()) {
    for (const auto& v : vs) messages.push_back("kzoo:   " + to_string(v));
    return refuse(fmt::format("{} rule{} broken (every one is listed above); first: {}: {}", vs.size(),
                              vs.size() == 1 ? "" : "s", vs.front().path, vs.front().rule));
  }
  auto msg = pushed_message(repo.dir(), c.new_id, "the submission's summary");
  if (!msg) return refuse(msg.error().message);
  std::string summary = *msg;
  if (summary.empty()) summary = fmt::format("git push of {} to {}", c.new_id.substr(0, 12), target);

  // Each changed kernel becomes a submission and job, as an upload does.
  auto token = dbx.get_token(who.token_id);
  if (!token) return refuse(token.error().message);
  if (!route.empty() && !pull_request) {
    // The first to push to a route starts it; another may have started it since the check above.
    auto r = dbx.ensure_route(route, who.user);
    if (!r) return refuse(r.error().message);
    if (r->owner != who.user) {
      access::Context ctx;
      ctx.route_owner = r->owner;
      if (auto d = access::authorize(caller.who, access::Action::push_route, ctx); !d.allowed()) return refuse(d.reason);
    }
  }
  int made = 0;
  for (auto& [k, tree] : trees) {
    auto kept = keep_tree(k, tree);
    if (!kept) return refuse("storage: " + kept.error().message);
    store::NewSubmission ns;
    ns.kernel_id = k;
    ns.submitter_id = who.user;
    ns.summary = summary;
    ns.package_path = kept->path;
    ns.sha256 = kept->sha256;
    ns.token_id = who.token_id;
    ns.package_bytes = static_cast<std::int64_t>(kept->file.size());
    ns.route = route;
    ns.kind = "submission";
    ns.received_by = cfg.server_id;
    ns.admission = admission_of(*token);
    auto s = dbx.create_submission(ns);
    if (!s) {
      if (made == 0) return refuse(s.error().message);
      messages.push_back(fmt::format("kzoo: {}: {} was not submitted: {}", ref, k, s.error().message));
      break;
    }
    if (auto cm = kept->file.commit(kept->name); !cm) {
      (void)dbx.reject(s->id, {"the server could not store the package: " + cm.error().message}, nullptr);
      return refuse("storage: " + cm.error().message);
    }
    // What the kernel's jobs need of a GPU runner, as for an upload (submissions.cpp).
    const store::JobNeeds needs = needs_of(k);
    auto job = pull_request ? dbx.open_pull(s->id, cfg.max_attempts, needs) : dbx.enqueue(s->id, cfg.max_attempts, held, needs);
    if (!job) return refuse(job.error().message);
    ++made;
    metrics.count_submission(job->held ? "held" : "queued");
    std::string state = pull_request ? fmt::format("pull request {} to {}, held until {} merges it", s->id, target,
                                                   route.empty() ? std::string("a maintainer") : "its owner")
                        : job->held ? "held for a maintainer (JobHeldAdmin)"
                                    : "queued";
    messages.push_back(fmt::format("kzoo: submission {} (job {}) {} on {}: {}; kzoo status {} (GET /api/submissions/{})",
                                   s->id, job->id, k, target, state, s->id, s->id));
    // One line per submission an agent can parse without the prose.
    messages.push_back(fmt::format("kzoo-submission: id={} job={} kernel={} into={} held={} pull_request={}", s->id,
                                   job->id, k, target, job->held ? "true" : "false", pull_request ? "true" : "false"));
  }
  messages.push_back(fmt::format("kzoo: {} does not move now: it moves when the checks accept (git fetch origin then)",
                                 target));
  return {ref, true, ""};
}

gitserve::RefResult Api::land_project_files(const Caller& caller, store::StateDb& dbx, const gitserve::PushCommand& c,
                                            const std::string& main_head, const std::vector<std::string>& files,
                                            std::vector<std::string>& messages) {
  auto refuse = [&](std::string reason) {
    messages.push_back(fmt::format("kzoo: {}: refused: {}", c.ref, reason));
    return gitserve::RefResult{c.ref, false, reason};
  };
  auto msg = pushed_message(repo.dir(), c.new_id, "main's commit message");
  if (!msg) return refuse(msg.error().message);
  std::string text = msg->empty() ? std::string("project files") : *msg;
  // The trailers say whose push it was and which commit carried it: the
  // author is the authenticated maintainer, never the name a client wrote.
  const access::Principal& who = *caller.who;
  text += fmt::format("\n\nKzoo-Pushed-Commit: {}\nKzoo-Pushed-By: {}\n", c.new_id, who.user);
  auto landed = repo.commit_tree("main", main_head, c.new_id, text, store::Person{who.user, ""});
  if (!landed) return refuse("the repository could not be written: " + landed.error().message);
  if (landed->moved)
    return refuse(fmt::format("main moved while the push was judged (it is at {} now): git pull --rebase origin main, "
                              "then push again",
                              landed->parent.substr(0, 12)));
  nlohmann::json shown = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size() && i < 100; ++i) shown.push_back(files[i]);
  auto audited = dbx.append_audit("git.project-files", "refs/heads/main",
                                  {{"from", main_head}, {"to", landed->commit}, {"pushed", c.new_id}, {"files", shown},
                                   {"file_count", files.size()}});
  if (!audited) {
    // No change stands unrecorded: main goes back, unless something landed on top meanwhile.
    auto back = repo.move_branch("main", landed->commit, main_head);
    const std::string undo = back && *back ? "main is back at " + main_head.substr(0, 12)
                                           : "main could not be put back (" + landed->commit.substr(0, 12) +
                                                 " stays on it): a maintainer should check the audit trail";
    return refuse(fmt::format("the change could not be written to the audit trail ({}); {}. Push again.",
                              audited.error().message, undo));
  }
  const bool rules = std::find(files.begin(), files.end(), board::kRulesFile) != files.end();
  messages.push_back(fmt::format("kzoo: main moved to {} (your tree, committed by kzoo on {}): {} project file{} "
                                 "changed; git fetch origin, then git reset --keep origin/main (it holds exactly your tree)",
                                 landed->commit.substr(0, 12), main_head.substr(0, 12), files.size(),
                                 files.size() == 1 ? "" : "s"));
  if (rules)
    messages.push_back(fmt::format("kzoo: scienceslack.json changed on main, but the rules in force are still those at "
                                   "the `checks` tag: they take effect when a maintainer moves it (kzoo approve {})",
                                   landed->commit));
  // One line an agent can parse without the prose.
  messages.push_back(fmt::format("kzoo-project: commit={} from={} pushed={} files={} rules_changed={}", landed->commit,
                                 main_head, c.new_id, files.size(), rules ? "true" : "false"));
  return {c.ref, true, ""};
}

}  // namespace kzoo::server

namespace kzoo::server {

std::string git_hooks_dir(const std::string& data_dir, const std::string& server_id) {
  // One directory per server: servers sharing a data directory (PostgreSQL
  // state, docs/SCALE.md) may run binaries installed at different paths.
  return data_dir + "/git-hooks/" + (server_id.empty() ? std::string("default") : server_id);
}

Result<void> install_git_hooks(const std::string& data_dir, const std::string& server_id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return fail(fmt::format("cannot find this program's path (/proc/self/exe): {}", ec.message()));
  if (exe.find_first_of("'\n\r") != std::string::npos)
    return fail(fmt::format("the kzoo binary's path {} holds a quote or a line break: install it elsewhere", exe));
  const std::string dir = git_hooks_dir(data_dir, server_id);
  fs::create_directories(dir, ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", dir, ec.message()));
  // Rewritten at every start, so the hook is always the running binary. The
  // directory is the server's: pushers never write hooks (core.hooksPath).
  const std::string text = "#!/bin/sh\n# Written by kzoo serve at start (docs/GIT.md): every push over HTTP is judged.\nexec '" +
                           exe + "' git-proc-receive\n";
  const std::string tmp = dir + "/.proc-receive.tmp", final_path = dir + "/proc-receive";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0) return fail(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  auto w = gitserve::write_all(fd, text);
  ::fchmod(fd, 0755);
  ::close(fd);
  if (!w) return fail(fmt::format("cannot write {}: {}", tmp, w.error().message));
  if (::rename(tmp.c_str(), final_path.c_str()) != 0)
    return fail(fmt::format("cannot install {}: {}", final_path, std::strerror(errno)));
  return {};
}

}  // namespace kzoo::server
