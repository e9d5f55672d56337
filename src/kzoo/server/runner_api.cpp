// The runner API: what `kzoo worker --server URL` calls with a runner token
// (the api mode of jobs/transport.hpp, worker/api_transport.hpp). The server
// does each step with the same direct transport (jobs/direct.hpp) a
// one-machine worker uses, after checking that the token
// is a runner's (access::Action::runner_work) and that its holder owns the
// job's lease: a runner's lease owner is "<token id>/<worker id>", so a runner
// token can act only on the jobs it claimed itself.
#include <charconv>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/jobs/bench_result.hpp"
#include "kzoo/jobs/direct.hpp"
#include "kzoo/jobs/wire.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/local/task_env.hpp"
#include "kzoo/server/api.hpp"

namespace kzoo::server {
namespace {

using nlohmann::json;

struct RunnerCall {
  Caller caller;
  json body = json::object();
  std::string owner;  // "<token id>/<worker>" for POSTs; "<token id>/" prefix for GETs
  std::optional<store::Job> job;
};

std::int64_t job_id_of(const httplib::Request& req) {
  return req.matches.size() > 1 ? std::stoll(req.matches[1]) : 0;
}

// The runner's token, the JSON body (POST), the job's lease (job routes).
std::optional<RunnerCall> gate(Api& api, const httplib::Request& req, httplib::Response& res, bool job_route,
                               store::StateDb& db) {
  auto c = api.require(req, res, access::Action::runner_work);
  if (!c) return std::nullopt;
  RunnerCall call;
  call.caller = *c;
  const std::string prefix = c->who->token_id + "/";
  if (req.method == "POST") {
    auto doc = format::parse_json(req.body, "request body", {.max_bytes = 64u << 20, .max_depth = 64});
    if (!doc || !doc->is_object()) {
      send_error(res, 400, "invalid_body", doc ? "the body must be a JSON object" : to_string(doc.error()));
      return std::nullopt;
    }
    call.body = std::move(*doc);
    static const std::regex kWorker("^[A-Za-z0-9._:@-]{1,100}$");
    const auto& w = call.body.value("worker", json());
    if (!w.is_string() || !std::regex_match(w.get<std::string>(), kWorker)) {
      send_error(res, 400, "invalid_field", "\"worker\" must be 1-100 of A-Z a-z 0-9 . _ : @ - (e.g. host:pid)", "worker");
      return std::nullopt;
    }
    call.owner = prefix + w.get<std::string>();
  }
  if (!job_route) return call;
  auto id = job_id_of(req);
  auto j = db.get_job(id);
  if (!j) {
    send_error(res, http_status(j.error()), j.error().kind == store::StateError::not_found ? "unknown_job" : "database",
               j.error().message, "id");
    return std::nullopt;
  }
  bool mine = req.method == "POST" ? j->lease_owner == call.owner : j->lease_owner.rfind(prefix, 0) == 0;
  if (j->state != store::State::running || !mine) {
    send_error(res, 409, "not_holder",
               fmt::format("job {} is {}{}: only the runner holding its lease may work on it; stop working on it", id,
                           store::to_string(j->state),
                           j->state == store::State::running ? " under another runner's lease" : ""),
               "id");
    return std::nullopt;
  }
  call.job = *j;
  return call;
}

// The lease a claim or heartbeat asks for (120 s when left out); nullopt
// (res filled) when it is not 1-86400 whole seconds. Checked here, as a
// 64-bit number: get<int> would cut 4294967356 down to a lease of 60 s.
std::optional<int> lease_of(const json& body, httplib::Response& res) {
  const auto& l = body.value("lease_seconds", json(120));
  const bool ok = l.is_number_unsigned()  ? l.get<std::uint64_t>() >= 1 && l.get<std::uint64_t>() <= 86400
                  : l.is_number_integer() ? l.get<std::int64_t>() >= 1 && l.get<std::int64_t>() <= 86400
                                          : false;
  if (ok) return l.get<int>();
  send_error(res, 400, "invalid_field",
             fmt::format("lease_seconds {} is not a whole number of seconds from 1 to 86400 (leave it out for 120)",
                         l.is_number() ? l.dump() : std::string(l.type_name())),
             "lease_seconds");
  return std::nullopt;
}

package::PackageTree src_of(const package::PackageTree& tree) {
  package::PackageTree out;
  for (const auto& f : tree.files)
    if (f.path.rfind("src/", 0) == 0) out.files.push_back(f);
  for (const auto& d : tree.dirs)
    if (d.rfind("src/", 0) == 0 || d == "src") out.dirs.push_back(d);
  return out;
}

// A stored upload (.tar.gz) as the answer.
void send_tarball(httplib::Response& res, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return send_error(res, 500, "storage", "cannot read " + path);
  res.status = 200;
  res.set_content(std::move(bytes), "application/gzip");
}

void state_refusal(httplib::Response& res, const store::StateError& e) {
  const char* code = e.kind == store::StateError::not_holder || e.kind == store::StateError::wrong_state
                         ? "not_holder"
                         : e.kind == store::StateError::invalid ? "invalid_field" : "database";
  send_error(res, http_status(e), code, e.message);
}

}  // namespace

#define RUNNER_GATE(job_route)                                                          \
  auto lease = db.get();                                                                \
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message); \
  auto call = gate(*this, req, res, job_route, **lease);                                \
  if (!call) return;                                                                    \
  (*lease)->set_actor(call->caller.actor())

void Api::runner_claim(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(false);
  auto seconds = lease_of(call->body, res);
  if (!seconds) return;
  // A GPU runner says its compute capability ("9.0") and the GPUs of its
  // node, and takes only the jobs its node can run.
  store::RunnerHas has;
  if (call->body.contains("compute_capability")) {
    const json& c = call->body["compute_capability"];
    has.compute_capability = c.is_string() ? local::capability_tenths(c.get<std::string>()) : std::nullopt;
    if (!has.compute_capability)
      return send_error(res, 400, "invalid_field",
                        fmt::format("compute_capability {} is not MAJOR.MINOR (\"9.0\"): give the GPU's, as "
                                    "nvidia-smi --query-gpu=compute_cap reports it, or leave it out for a CPU runner",
                                    c.dump().substr(0, 64)),
                        "compute_capability");
  }
  if (call->body.contains("gpus")) {
    const json& g = call->body["gpus"];
    if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > store::kMaxNodeGpus)
      return send_error(res, 400, "invalid_field",
                        fmt::format("gpus {} is not a count of GPUs from 1 to {}: give how many GPUs of its node "
                                    "one job may take (kzoo worker --gpus 0,1,2,3 has 4), or leave it out for a CPU "
                                    "runner",
                                    g.dump().substr(0, 64), store::kMaxNodeGpus),
                        "gpus");
    has.gpus = static_cast<int>(g.get<std::int64_t>());
  }
  (void)(*lease)->requeue_expired((*lease)->now());  // a runner that vanished gives its jobs back here
  auto j = (*lease)->claim_job(call->owner, *seconds, has);
  if (!j) return state_refusal(res, j.error());
  if (!*j) {
    res.status = 204;
    return;
  }
  if ((*j)->is_batch()) {
    // A user's batch job: its script and limits instead of a submission.
    auto b = (*lease)->get_batch((*j)->id);
    if (!b) return state_refusal(res, b.error());
    return send_json(res, 200, {{"job", jobs::job_to_json(**j)}, {"batch", jobs::batch_to_json(*b)}});
  }
  auto s = (*lease)->get_submission((*j)->submission_id);
  if (!s) return state_refusal(res, s.error());
  send_json(res, 200,
            {{"job", jobs::job_to_json(**j)},
             {"submission",
              {{"id", s->id}, {"kernel_id", s->kernel_id}, {"submitter_id", s->submitter_id},
               {"optimization_summary", s->summary}, {"sha256", s->sha256}, {"route", s->route},
               {"kind", s->kind}}}});
}

void Api::runner_heartbeat(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto seconds = lease_of(call->body, res);
  if (!seconds) return;
  auto j = (*lease)->heartbeat(call->job->id, call->owner, *seconds);
  if (!j) return state_refusal(res, j.error());
  send_json(res, 200, {{"job", jobs::job_to_json(*j)}});
}

void Api::runner_complete(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto c = jobs::completion_from_json(call->body.value("completion", json()));
  if (!c) return send_error(res, 400, "invalid_field", c.error().message, "completion");
  auto j = (*lease)->complete(call->job->id, call->owner, *c);
  if (!j) return state_refusal(res, j.error());
  send_json(res, 200, {{"job", jobs::job_to_json(*j)}});
}

void Api::runner_retry(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  std::vector<std::string> reasons;
  const auto& rs = call->body.value("reasons", json::array());
  if (!rs.is_array()) return send_error(res, 400, "invalid_field", "reasons must be an array of strings", "reasons");
  for (const auto& r : rs) {
    if (!r.is_string()) return send_error(res, 400, "invalid_field", "reasons must be an array of strings", "reasons");
    reasons.push_back(r.get<std::string>());
  }
  auto j = (*lease)->retry(call->job->id, call->owner, reasons, call->body.value("result", json()));
  if (!j) return state_refusal(res, j.error());
  send_json(res, 200, {{"job", jobs::job_to_json(*j)}});
}

void Api::runner_package(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto s = (*lease)->get_submission(call->job->submission_id);
  if (!s) return state_refusal(res, s.error());
  if (!s->package_path.starts_with(paths.uploads() + "/"))
    return send_error(res, 404, "no_package", fmt::format("submission {} has no stored package", s->id));
  send_tarball(res, s->package_path);
}

void Api::runner_batch_package(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto b = (*lease)->get_batch(call->job->id);
  if (!b) return state_refusal(res, b.error());
  send_tarball(res, b->package_path);
}
// How a batch job ended, with its submit directory as the job left it: the
// server commits it to refs/jobs/<id> on the job's base commit and judges it.
void Api::runner_batch_finish(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto end = jobs::batch_end_from_json(call->body.value("end", json()));
  if (!end) return send_error(res, 400, "invalid_field", end.error().message, "end");
  std::optional<package::PackageTree> tree;
  if (const json& f = call->body.value("files", json()); !f.is_null()) {
    auto t = jobs::tree_from_json(f);
    if (!t) return send_error(res, 400, "invalid_field", t.error().message, "files");
    // The same caps as the submit directory it started from.
    package::TreeLimits lim = package::repository_limits();
    std::uint64_t total = 0;
    for (const auto& file : t->files) total += file.content.size();
    if (t->files.size() > lim.max_entries || total > lim.max_total_bytes)
      return send_error(res, 413, "too_large",
                        fmt::format("the submit directory holds {} files, {} bytes: over {} files or {} bytes",
                                    t->files.size(), total, lim.max_entries, lim.max_total_bytes),
                        "files");
    tree = std::move(*t);
  }
  auto b = jobs::direct_over(**lease, repo)->finish_batch(call->job->id, call->owner, *end, tree);
  if (!b) return send_error(res, 409, "not_holder", b.error().message);
  judge_batches(**lease);
  auto now = (*lease)->get_batch(call->job->id);
  send_json(res, 200, {{"batch", jobs::batch_to_json(now ? *now : *b)}, {"result_commit", b->result_commit}});
}
void Api::runner_trusted(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto s = (*lease)->get_submission(call->job->submission_id);
  if (!s) return state_refusal(res, s.error());
  auto t = jobs::direct_over(**lease, repo)->trusted(s->kernel_id, call->job->id);
  if (!t) return send_error(res, 500, "repository", t.error().message);
  send_json(res, 200, {{"kernel_id", s->kernel_id}, {"base", t->base}, {"files", jobs::tree_to_json(t->tree)}});
}

void Api::runner_recovery(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto s = (*lease)->get_submission(call->job->submission_id);
  if (!s) return state_refusal(res, s.error());
  std::size_t scan = 200;
  if (req.has_param("scan")) {
    // Parsed whole: strtoull read "abc" as 0 (then 1) and "-5" as 2^64-5 (then 10000).
    const std::string v = req.get_param_value("scan");
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), scan);
    if (ec != std::errc() || end != v.data() + v.size() || scan < 1 || scan > 10000)
      return send_error(res, 400, "invalid_query",
                        "scan must be a whole number of commits from 1 to 10000 (leave it out for 200)", "scan");
  }
  auto r = jobs::direct_over(**lease, repo)->recover(s->kernel_id, call->job->id, scan);
  if (!r) return send_error(res, 500, "repository", r.error().message);
  send_json(res, 200, {{"commit", r->commit}, {"verdict", r->verdict}});
}

void Api::runner_board(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  auto c = jobs::direct_over(**lease, repo)->board(call->job->id);
  if (!c) return send_error(res, 500, "repository", c.error().message);
  send_json(res, 200, jobs::board_context_to_json(*c));
}

void Api::runner_evidence(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  static const std::regex kName("^[A-Za-z0-9._-]{1,64}$");
  const auto& f = call->body.value("files", json());
  if (!f.is_object() || f.empty() || f.size() > 16)
    return send_error(res, 400, "invalid_field", "\"files\" must map 1-16 file names to base64 content", "files");
  std::map<std::string, std::string> files;
  for (const auto& [name, v] : f.items()) {
    if (!std::regex_match(name, kName) || name == "." || name == ".." || !v.is_string())
      return send_error(res, 400, "invalid_field", fmt::format("evidence file \"{}\" needs a plain name and base64 content", name), "files");
    auto bytes = jobs::base64_decode(v.get<std::string>());
    if (!bytes) return send_error(res, 400, "invalid_field", fmt::format("evidence file \"{}\" is not base64", name), "files");
    files[name] = std::move(*bytes);
  }
  const auto& m = call->body.value("message", json(""));
  if (!m.is_string())
    return send_error(res, 400, "invalid_field",
                      fmt::format("\"message\" is {}: the evidence commit's message is a string", m.type_name()),
                      "message");
  auto commit = jobs::direct_over(**lease, repo)->record_evidence(call->job->id, call->owner, files,
                                                                     m.get<std::string>());
  if (!commit) return send_error(res, 500, "repository", commit.error().message);
  (void)(*lease)->append_audit("repo.evidence", fmt::format("job/{}", call->job->id), {{"commit", *commit}});
  send_json(res, 200, {{"commit", *commit}});
}

void Api::runner_accept(const httplib::Request& req, httplib::Response& res) {
  RUNNER_GATE(true);
  static const std::regex kCommit("^[0-9a-f]{40}$");
  const json& b = call->body;
  auto str = [&](const char* k) { return b.contains(k) && b[k].is_string() ? b[k].get<std::string>() : std::string(); };
  const std::string measured_at = str("measured_at"), evidence = str("evidence_commit"), message = str("message");
  if (!std::regex_match(measured_at, kCommit) || !std::regex_match(evidence, kCommit))
    return send_error(res, 400, "invalid_field", "measured_at and evidence_commit must be commit ids (40 hex digits)");
  if (message.empty() || !b.contains("benchmark_output") || !b["benchmark_output"].is_object())
    return send_error(res, 400, "invalid_field", "an accept needs a message and the benchmark_output document");
  // The commit's author: {"name": text}, the submitter's name when left out.
  const json& author = b.value("author", json::object());
  if (!author.is_object() || (author.contains("name") && !author["name"].is_string()))
    return send_error(res, 400, "invalid_field",
                      fmt::format("author is {}{}: it is {{\"name\": text}}, or left out for the submitter",
                                  author.type_name(), author.is_object() ? " with a name that is no string" : ""),
                      "author");
  auto s = (*lease)->get_submission(call->job->submission_id);
  if (!s) return state_refusal(res, s.error());
  // The source that lands is the stored upload's, never bytes the runner sends.
  auto tar = package::read_package_tarball(s->package_path, s->kernel_id);
  if (!tar || !tar->violations.empty())
    return send_error(res, 500, "storage", fmt::format("the stored package of submission {} cannot be read", s->id));
  auto measured = repo.read_package(s->kernel_id, measured_at);
  if (!measured)
    return send_error(res, 422, "unknown_commit", fmt::format("{} has no package {}: {}", measured_at, s->kernel_id,
                                                              measured.error().message), "measured_at");
  auto insp = package::inspect_tree(*measured, s->kernel_id, "kernel_data:" + s->kernel_id);
  jobs::AcceptRequest ar;
  ar.job_id = call->job->id;
  ar.kernel_id = s->kernel_id;
  ar.src = src_of(tar->tree);
  ar.benchmark_output = b["benchmark_output"];
  ar.directions = jobs::directions_from_metas(insp.metas);
  ar.evidence_commit = evidence;
  ar.now_iso = jobs::utc_now_iso();
  ar.message = message;
  ar.author = {author.value("name", s->submitter_id), ""};
  ar.measured_at = measured_at;
  const json& adopt = b.value("adopt", json(false));
  if (!adopt.is_boolean()) return send_error(res, 400, "invalid_field", "adopt must be true or false", "adopt");
  ar.adopt = adopt.get<bool>();
  auto acc = jobs::direct_over(**lease, repo)->accept(ar, call->owner);
  if (!acc) return send_error(res, 500, "repository", acc.error().message);
  if (!acc->incumbent_moved)
    (void)(*lease)->append_audit(ar.adopt ? "repo.adopt" : "repo.accept", fmt::format("job/{}", call->job->id),
                                 {{"commit", acc->commit}, {"kernel_id", s->kernel_id}});
  send_json(res, 200, {{"commit", acc->commit}, {"parent", acc->parent}, {"attempts", acc->attempts},
                       {"incumbent_moved", acc->incumbent_moved}});
}

}  // namespace kzoo::server
