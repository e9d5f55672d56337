// Route merges: POST /api/routes/{name}/merge {"into": "main" | "<route>"}.
// A merge is not a git merge: for every kernel whose source on the route
// differs from the target's, the route's source is submitted to the target,
// and the checks judge it there like any submission (A/B against the
// target's incumbent; it lands only if faster). Into main by a maintainer, or
// into a route the caller may push to: plain submissions. Into main by anyone
// else, or into anyone else's route: pull requests, held for the maintainers
// or the route's owner (store/pulls.hpp).
#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/api.hpp"

namespace kzoo::server {
namespace {

using nlohmann::json;

// The files under src/ (what a route merge compares; directories do not matter).
package::PackageTree src_files_of(const package::PackageTree& t) {
  package::PackageTree out;
  for (const auto& f : t.files)
    if (f.path.rfind("src/", 0) == 0) out.files.push_back(f);
  return out;
}

bool same_files(const package::PackageTree& a, const package::PackageTree& b) {
  if (a.files.size() != b.files.size()) return false;
  for (std::size_t i = 0; i < a.files.size(); ++i)
    if (a.files[i].path != b.files[i].path || a.files[i].content != b.files[i].content ||
        a.files[i].executable != b.files[i].executable)
      return false;
  return true;
}

}  // namespace

Result<KeptUpload> Api::keep_tree(const std::string& kernel_id, const package::PackageTree& tree) {
  auto bytes = package::package_tarball_bytes(tree, kernel_id);
  if (!bytes) return tl::unexpected(bytes.error());
  auto f = UploadFile::create(paths.uploads(), cfg.max_upload_bytes, cfg.server_id);
  if (!f) return tl::unexpected(f.error());
  if (auto w = f->write(*bytes); !w) return tl::unexpected(w.error());
  auto sha = f->finish();
  if (!sha) return tl::unexpected(sha.error());
  std::string name = *sha + "-" + f->temp_path().substr(f->temp_path().size() - 6) + ".tar.gz";
  return KeptUpload{std::move(*f), name, paths.uploads() + "/" + name, *sha};
}

void Api::post_route_merge(const httplib::Request& req, httplib::Response& res) {
  auto caller = require(req, res, access::Action::comment);  // signed in, not a runner
  if (!caller) return;
  const std::string from = req.matches[1];
  auto body = format::parse_json(req.body.empty() ? std::string("{}") : req.body, "request body",
                                 {.max_bytes = 64u << 10, .max_depth = 8});
  if (!body || !body->is_object())
    return send_error(res, 400, "invalid_body", body ? "the body must be a JSON object {\"into\"}" : to_string(body.error()));
  const json& into_j = body->value("into", json("main"));
  if (!into_j.is_string() || (into_j != "main" && !board::valid_route_name(into_j.get<std::string>())))
    return send_error(res, 400, "invalid_field", "into must be main or a route name", "into");
  const std::string into = into_j;
  if (into == from) return send_error(res, 400, "invalid_field", "a route cannot be merged into itself", "into");
  auto from_head = repo.head("refs/heads/routes/" + from);
  if (!from_head)
    return send_error(res, 404, "unknown_route",
                      fmt::format("route {} has no branch yet (nothing accepted on it): nothing to merge", from), "name");

  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  // Who may: into main, a maintainer; into a route, a push if it is theirs
  // (or new: they start it), else a pull request.
  bool pull_request = false;
  bool held = caller->decision.held;
  if (into == "main") {
    // A maintainer's merge is submitted; anyone else's is a pull request to main, which maintainers merge.
    if (!access::authorize(caller->who, access::Action::push_main).allowed()) {
      auto d = access::authorize(caller->who, access::Action::open_pull_request);
      if (!d.allowed()) return send_error(res, d.status, d.code, d.reason, "into");
      pull_request = true;
    }
  } else {
    access::Context ctx;
    if (auto rs = (*lease)->list_routes(); rs)
      for (const auto& r : *rs)
        if (r.name == into) ctx.route_owner = r.owner;
    auto push = access::authorize(caller->who, ctx.route_owner ? access::Action::push_route : access::Action::start_route, ctx);
    if (push.allowed()) {
      held = held || push.held;
    } else {
      auto d = access::authorize(caller->who, access::Action::open_pull_request, ctx);
      if (!d.allowed()) return send_error(res, d.status, d.code, d.reason, "into");
      pull_request = true;
    }
  }
  const std::string target_ref = into == "main" ? "refs/heads/main" : "refs/heads/routes/" + into;
  auto target_head = repo.head(target_ref);
  if (!target_head) target_head = repo.head("refs/heads/main");  // a new route starts at main
  if (!target_head) return send_error(res, 500, "repository", target_head.error().message);

  auto kernels = repo.list_packages(*from_head);
  if (!kernels) return send_error(res, 500, "repository", kernels.error().message);
  // What differs, decided before anything is recorded.
  std::vector<std::pair<std::string, package::PackageTree>> differing;
  for (const auto& k : *kernels) {
    auto theirs = repo.read_package(k, *from_head);
    if (!theirs) return send_error(res, 500, "repository", theirs.error().message);
    auto ours = repo.read_package(k, *target_head);
    if (ours && same_files(src_files_of(*ours), src_files_of(*theirs))) continue;
    if (!ours) continue;  // a kernel the target does not have is not merged by submission: add it with git
    differing.emplace_back(k, std::move(*theirs));
  }
  if (differing.empty())
    return send_error(res, 409, "nothing_to_merge",
                      fmt::format("route {} holds no kernel source that differs from {}'s", from, into), "name");
  if (!within_limits(*caller, 0, res)) return;

  (*lease)->set_actor(caller->actor());
  if (into != "main")
    if (auto r = (*lease)->ensure_route(into, caller->who->user); !r)
      return send_error(res, http_status(r.error()), "database", r.error().message);
  json out = json::array();
  for (auto& [k, tree] : differing) {
    auto kept = keep_tree(k, tree);
    if (!kept) return send_error(res, 500, "storage", kept.error().message);
    store::NewSubmission ns;
    ns.kernel_id = k;
    ns.submitter_id = caller->who->user;
    ns.summary = fmt::format("merge of routes/{} into {}: its source of {} (at {})", from,
                             into == "main" ? std::string("main") : "routes/" + into, k, from_head->substr(0, 12));
    ns.package_path = kept->path;
    ns.sha256 = kept->sha256;
    ns.route = into == "main" ? "" : into;
    ns.received_by = cfg.server_id;
    ns.token_id = caller->who->token_id;
    auto s = (*lease)->create_submission(ns);
    if (!s) return send_error(res, http_status(s.error()), "database", s.error().message);
    if (auto c = kept->file.commit(kept->name); !c) {
      (void)(*lease)->reject(s->id, {"the server could not store the package: " + c.error().message}, nullptr);
      return send_error(res, 500, "storage", c.error().message);
    }
    const store::JobNeeds needs = needs_of(k);
    auto job = pull_request ? (*lease)->open_pull(s->id, cfg.max_attempts, needs)
                            : (*lease)->enqueue(s->id, cfg.max_attempts, held, needs);
    if (!job) return send_error(res, http_status(job.error()), "database", job.error().message);
    json e = {{"id", s->id}, {"kernel_id", k}, {"job_id", job->id}, {"held", job->held},
              {"links", {{"self", fmt::format("/api/submissions/{}", s->id)}}}};
    if (job->held) e["hold_reason"] = job->hold_reason;
    if (pull_request) e["links"]["pull"] = fmt::format("/api/pulls/{}", s->id);
    out.push_back(e);
    metrics.count_submission(job->held ? "held" : "queued");
  }
  send_json(res, 202, {{"from", "routes/" + from},
                       {"into", into == "main" ? std::string("main") : "routes/" + into},
                       {"pull_request", pull_request},
                       {"submissions", out}});
}

}  // namespace kzoo::server
