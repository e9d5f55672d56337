// POST /api/submissions and start-up recovery (service.hpp describes the rules).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/utf8.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/local/task_env.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/upload_file.hpp"
#include "kzoo/server/upload_form.hpp"

namespace kzoo::server {
namespace {

namespace fs = std::filesystem;


// The text fields of the envelope (schemas/submission_envelope.schema.json);
// each is capped well above its schema maxLength, in bytes, while streaming.
constexpr std::size_t kFieldCap = 16 * 1024;
const char* const kFields[] = {"kernel_id",  "submitter_id", "package_filename", "optimization_summary",
                               "route",      "pull_request"};

using Refusal = FormRefusal;

nlohmann::json links_for(std::int64_t id, std::optional<std::int64_t> job) {
  nlohmann::json l = {{"self", fmt::format("/api/submissions/{}", id)}};
  if (job) l["log"] = fmt::format("/api/jobs/{}/log", *job);
  return l;
}

}  // namespace

void Api::post_submission(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  auto refuse = [&](const Refusal& r) {
    metrics.count_submission("refused");
    send_error(res, r.status, r.code, r.message, r.field, r.extra);
  };
  // Who, and whether they may, before a byte of the body is read.
  auto caller = require(req, res, access::Action::submit);
  if (!caller || !within_limits(*caller, std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10), res)) {
    metrics.count_submission("refused");
    res.set_header("Connection", "close");
    return;
  }
  const std::string owner = caller->who->user;
  if (!req.is_multipart_form_data()) {
    res.set_header("Connection", "close");
    return refuse({415, "not_multipart",
                   fmt::format("Content-Type \"{}\" is refused: send multipart/form-data with the fields kernel_id, "
                               "submitter_id, package_filename, optimization_summary and one file part",
                               req.get_header_value("Content-Type"))});
  }
  FormSpec spec = upload_form_spec();
  spec.fields.assign(std::begin(kFields), std::end(kFields));
  spec.fields_hint = "the fields are kernel_id, submitter_id, package_filename, optimization_summary, route, "
                     "pull_request, and one file part";
  spec.field_cap = kFieldCap;
  spec.over_cap_hint = "keep sources only";
  auto form = read_upload_form(reader, spec);
  if (auto* r = std::get_if<FormRefusal>(&form)) {
    // The rest of the body is unread: this connection cannot go on.
    res.set_header("Connection", "close");
    return refuse(*r);
  }
  auto& fields = std::get<UploadForm>(form).fields;
  auto& file = std::get<UploadForm>(form).file;

  // submitter_id is the token's owner; the envelope may still name it (the
  // seed's field), and then it must name the owner.
  if (fields.count("submitter_id") && fields["submitter_id"] != owner)
    return refuse({403, "submitter_mismatch",
                   fmt::format("submitter_id \"{}\" is not the owner of this token ({}): leave the field out or give "
                               "\"{}\"",
                               package::detail::printable(fields["submitter_id"]), access::describe(*caller->who), owner),
                   "submitter_id"});
  fields["submitter_id"] = owner;
  // The envelope, against its schema; every violation listed.
  nlohmann::json envelope = nlohmann::json::object();
  for (auto& [k, v] : fields) envelope[k] = v;
  for (auto& [k, v] : fields)
    if (format::find_invalid_utf8(v))
      return refuse({400, "invalid_field", fmt::format("form field \"{}\" is not valid UTF-8", k), k});
  Violations vs = format::SchemaSet::bundled().validate(envelope, "submission_envelope", "submission");
  if (!vs.empty()) {
    std::string field = vs.front().pointer.empty() ? "" : vs.front().pointer.substr(1);
    if (vs.front().rule == "schema.required") {
      for (const char* f : kFields)
        if (!fields.count(f) && std::string(f) != "optimization_summary") {
          field = f;
          break;
        }
    }
    return refuse({400, "invalid_field", to_string(vs.front()), field, {{"violations", to_json(vs)}}});
  }
  if (!file)
    return refuse({400, "missing_file", "the request has no file part: attach the package .tar.gz as a file", "package"});
  const std::string kernel_id = fields["kernel_id"];
  auto index = kernels();
  if (!index) return refuse({500, "repository", index.error().message});
  if (!(*index)->ids.count(kernel_id))
    return refuse({422, "unknown_kernel",
                   fmt::format("kernel \"{}\" does not exist in the repository at {}: GET /api/kernels lists them",
                               kernel_id, (*index)->head.substr(0, 12)),
                   "kernel_id"});
  // The seed's desc.yaml status: a frozen kernel takes no submissions (it is
  // kept as it is, e.g. a reference others are measured against); a
  // deprecated one still does, and is marked where kernels are listed.
  if (auto st = (*index)->status.find(kernel_id); st != (*index)->status.end() && st->second == "frozen")
    return refuse({409, "kernel_frozen",
                   fmt::format("kernel \"{}\" is frozen (its desc.yaml says status: frozen at {}): it takes no "
                               "submissions. A maintainer may change that: a commit to main setting status: normal in "
                               "its desc.yaml (maintainers push and merge into main, docs/SECURITY.md)",
                               kernel_id, (*index)->head.substr(0, 12)),
                   "kernel_id", {{"status", "frozen"}}});
  auto sha = file->finish();
  if (!sha) return refuse({500, "storage", sha.error().message});

  // The package itself: tarball rules, then inspection of the tree.
  Violations pv;
  auto tar = package::read_package_tarball(file->temp_path(), kernel_id);
  if (!tar) return refuse({500, "storage", tar.error().message});
  for (auto& v : tar->violations) {
    if (v.path == file->temp_path()) v.path = fields["package_filename"];
    pv.push_back(v);
  }
  if (pv.empty()) {
    auto insp = package::inspect_tree(tar->tree, kernel_id, fields["package_filename"] + ":" + kernel_id);
    pv = std::move(insp.violations);
  }

  auto db_lease = db.get();
  if (!db_lease) return refuse({http_status(db_lease.error()), "database", db_lease.error().message});
  auto& dbx = *db_lease;
  dbx->set_actor(caller->actor());
  store::NewSubmission ns{.kernel_id = kernel_id,
                          .submitter_id = owner,
                          .summary = fields["optimization_summary"],
                          .package_path = "",
                          .sha256 = *sha,
                          .token_id = caller->who->token_id,
                          .package_bytes = static_cast<std::int64_t>(file->size()),
                          .route = "",
                          .kind = "submission",
                          .received_by = cfg.server_id,
                          .admission = std::nullopt};
  // The caps again, atomically with the record: within_limits above saw the
  // usage before the upload, and other requests of this token may have been
  // recorded since, on this server or another.
  auto token = dbx->get_token(caller->who->token_id);
  if (!token) return refuse({http_status(token.error()), "database", token.error().message});
  ns.admission = admission_of(*token);
  auto refuse_create = [&](const store::StateError& e) {
    if (e.kind != store::StateError::limited) return refuse({http_status(e), "database", e.message});
    res.set_header("Retry-After", "60");
    refuse({429, "rate_limited", e.message, "", {{"retry_after_s", 60}}});
  };
  bool held = caller->decision.held;  // an outsider's job waits for a maintainer (JobHeldAdmin)
  const bool pull_request = fields.count("pull_request") && fields["pull_request"] == "true";
  if (pull_request && (!fields.count("route") || fields["route"].empty()))
    return refuse({400, "invalid_field", "pull_request needs a route: a pull request is aimed at someone else's route",
                   "pull_request"});
  if (fields.count("route") && !fields["route"].empty()) {
    if (!board::valid_route_name(fields["route"]))
      return refuse({400, "invalid_field",
                     fmt::format("route \"{}\" is not a route name: use 1-63 of a-z 0-9 . _ -, starting with a "
                                 "letter or digit (the route is the branch routes/<name>)",
                                 package::detail::printable(fields["route"])),
                     "route"});
    ns.route = fields["route"];
    // A route is its owner's (and the maintainers'): anyone with a token may
    // start one; pushing to someone else's is refused.
    auto routes = dbx->list_routes();
    if (!routes) return refuse({http_status(routes.error()), "database", routes.error().message});
    access::Context ctx;
    for (const auto& r : *routes)
      if (r.name == ns.route) ctx.route_owner = r.owner;
    if (pull_request) {
      if (!ctx.route_owner)
        return refuse({422, "unknown_route",
                       fmt::format("route \"{}\" does not exist yet: leave out pull_request to start it", ns.route),
                       "route"});
      if (access::authorize(caller->who, access::Action::push_route, ctx).allowed())
        return refuse({400, "invalid_field",
                       fmt::format("route \"{}\" is yours to push to ({}): leave out pull_request", ns.route,
                                   access::describe(*caller->who)),
                       "pull_request"});
      auto d = access::authorize(caller->who, access::Action::open_pull_request, ctx);
      if (!d.allowed()) return refuse({d.status, d.code, d.reason, "route"});
    } else {
      auto d = access::authorize(caller->who, ctx.route_owner ? access::Action::push_route : access::Action::start_route, ctx);
      if (!d.allowed()) {
        if (d.status == 403 && ctx.route_owner) d.reason += " (kzoo submit --pull-request; form field pull_request=true)";
        return refuse({d.status, d.code, d.reason, "route"});
      }
      held = held || d.held;
    }
  }
  if (!pv.empty()) {
    // Recorded, so the submitter has an id to refer to; the bytes are not kept.
    ns.package_path = "-";
    auto s = dbx->create_submission(ns);
    if (!s) return refuse_create(s.error());
    std::vector<std::string> reasons;
    for (const auto& v : pv) reasons.push_back(to_string(v));
    nlohmann::json verdict = {{"stage", "intake"}, {"accept", false}, {"violations", to_json(pv)}};
    auto r = dbx->reject(s->id, reasons, verdict);
    if (!r) return refuse({http_status(r.error()), "database", r.error().message});
    metrics.count_submission("rejected");
    return send_error(res, 422, "package_invalid",
                      fmt::format("the package breaks {} rule{}; first: {}", pv.size(), pv.size() == 1 ? "" : "s",
                                  reasons.front()),
                      "package",
                      {{"violations", to_json(pv)}, {"id", s->id}, {"state", "rejected"}, {"links", links_for(s->id, {})}});
  }

  // Valid: record (received), store under its final name, queue. A crash
  // between these steps leaves a `received` submission, which recover()
  // rejects at the next start, deleting its file.
  std::string name = *sha + "-" + file->temp_path().substr(file->temp_path().size() - 6) + ".tar.gz";
  ns.package_path = paths.uploads() + "/" + name;
  if (!ns.route.empty()) {
    // The first submitter to name a route starts it and owns it. Another
    // may have started it since the check above: then this is a push to it.
    auto r = dbx->ensure_route(ns.route, ns.submitter_id);
    if (!r) return refuse({http_status(r.error()), "database", r.error().message});
    if (r->owner != ns.submitter_id && !pull_request) {
      access::Context ctx;
      ctx.route_owner = r->owner;
      if (auto d = access::authorize(caller->who, access::Action::push_route, ctx); !d.allowed())
        return refuse({d.status, d.code, d.reason, "route"});
    }
  }
  auto s = dbx->create_submission(ns);
  if (!s) return refuse_create(s.error());
  if (auto c = file->commit(name); !c) {
    (void)dbx->reject(s->id, {"the server could not store the upload: " + c.error().message}, nullptr);
    return refuse({500, "storage", c.error().message});
  }
  // A pull request waits for the route's owner (then, from outside the
  // project, for a maintainer too); an outsider's own job for a maintainer.
  const store::JobNeeds needs = needs_of(kernel_id);
  auto job = pull_request ? dbx->open_pull(s->id, cfg.max_attempts, needs) : dbx->enqueue(s->id, cfg.max_attempts, held, needs);
  if (!job) return refuse({http_status(job.error()), "database", job.error().message});
  metrics.count_submission(job->held ? "held" : "queued");
  res.set_header("Location", fmt::format("/api/submissions/{}", s->id));
  nlohmann::json body = {{"id", s->id}, {"state", "queued"}, {"job_id", job->id}, {"sha256", *sha},
                         {"submitter_id", owner}, {"held", job->held}, {"links", links_for(s->id, job->id)}};
  if (job->held) body["hold_reason"] = job->hold_reason;
  if (pull_request) {
    body["pull_request"] = true;
    body["links"]["pull"] = fmt::format("/api/pulls/{}", s->id);
  }
  send_json(res, 202, body);
}

FormSpec Api::upload_form_spec() {
  FormSpec spec;
  spec.file_cap = cfg.max_upload_bytes;
  spec.uploads_dir = paths.uploads();
  spec.owner = cfg.server_id;
  spec.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(cfg.upload_deadline_s);
  spec.deadline_s = cfg.upload_deadline_s;
  spec.on_file_bytes = [this](std::uint64_t n) { metrics.count_upload_bytes(n); };
  return spec;
}

Result<int> Api::recover() {
  int n = 0;
  // Several servers share the directory with a PostgreSQL state: each
  // recovers only what it was receiving itself when it stopped.
  const bool shared = store::is_postgres_url(paths.state_url());
  auto removed = remove_incoming(paths.uploads(), shared ? cfg.server_id : "");
  if (!removed) return tl::unexpected(removed.error());
  auto lease = db.get();
  if (!lease) return fail(lease.error().message);
  auto& dbx = *lease;
  for (;;) {
    store::SubmissionFilter f;
    f.state = store::State::received;
    if (shared) f.received_by = cfg.server_id;
    f.limit = 1000;
    auto list = dbx->list_submissions(f);
    if (!list) return fail(list.error().message);
    if (list->empty()) break;
    for (const auto& s : *list) {
      auto r = dbx->reject(s.id, {"interrupted: the server stopped while receiving this submission; submit it again"},
                           nlohmann::json{{"stage", "intake"}, {"accept", false}, {"interrupted", true}});
      if (!r) return fail(r.error().message);
      std::error_code ec;
      if (s.package_path.starts_with(paths.uploads() + "/")) fs::remove(s.package_path, ec);
      ++n;
    }
  }
  return n;
}

// What a kernel's jobs need of a GPU runner (local::required_capability,
// local::required_gpus), read from the trusted side: the package's desc.yaml
// on main (min_arch_feature) and its task in the catalog's tasks/ beside the
// kernel_data root the server serves (environment.min_compute_capability,
// environment.gpus). Capability 0 and one GPU when neither can be read: any
// GPU runner may take it, and the worker's own check of the task still applies.
store::JobNeeds Api::needs_of(const std::string& kernel_id) {
  const std::string& catalog = cfg.catalog;
  nlohmann::json desc, task;
  if (auto text = repo.read_file(kernel_id + "/.kernel_package/desc.yaml"); text)
    if (auto d = format::parse_yaml(*text, "desc.yaml"); d && d->is_object()) desc = *d;
  if (desc.is_object() && desc.contains("reference_sources") && desc["reference_sources"].is_array())
    for (const auto& r : desc["reference_sources"])
      if (r.is_object() && r.value("kind", "") == "task" && r.contains("ref") && r["ref"].is_string() &&
          package::detail::segment_problem(r["ref"].get<std::string>()).empty() && r["ref"] != "." && r["ref"] != "..") {
        const fs::path file = fs::path(catalog).parent_path() / "tasks" / r["ref"].get<std::string>() / "task.json";
        std::ifstream in(file, std::ios::binary);
        if (!in) break;
        auto t = nlohmann::json::parse(in, nullptr, false);
        if (!t.is_discarded()) task = t;
        break;
      }
  return {.compute_capability = local::required_capability(task, desc), .gpus = local::required_gpus(task)};
}

}  // namespace kzoo::server
