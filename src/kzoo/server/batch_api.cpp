// Users' own batch jobs (the board seed's "Jobs are Slurm batch scripts";
// store/batch.hpp, docs/BATCH.md): POST /api/batch (sbatch), GET /api/batch
// (squeue), GET /api/batch/{id} (sacct), POST /api/batch/{id}/cancel
// (scancel), GET /slurm.sh (the four commands), and judging a finished
// job's result commit as a push (judge_batches).
//
// Every answer has a JSON form and, with ?format=text|squeue|sacct, the text
// Slurm's own commands print, so the /slurm.sh wrapper needs only curl: its
// errors read "sbatch: error: ..." as Slurm's do.
#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "kzoo/access/token.hpp"
#include "kzoo/board/batch_request.hpp"
#include "kzoo/board/board.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/format/utf8.hpp"
#include "kzoo/gitserve/push_review.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/service.hpp"
#include "kzoo/server/upload_form.hpp"

namespace kzoo::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The fields the wrapper sends beside the submit directory's tarball (a file part).
const char* const kBatchFields[] = {"script", "script_text", "time", "cpus_per_task", "mem", "gpus",
                                    "partition", "job_name", "base_commit", "route"};
// The script itself (Slurm copies it at submission too); every other field is one short line.
constexpr std::size_t kScriptCap = 65536;
constexpr std::size_t kBatchFieldCap = 1024;
// squeue lists a job until this long after it ended (Slurm's MinJobAge default).
constexpr store::UnixMs kMinJobAgeMs = 300'000;

// Which text the caller asked for: "" (JSON), "text", "squeue" or "sacct".
std::string text_format(const httplib::Request& req) { return req.has_param("format") ? req.get_param_value("format") : ""; }

// A refusal in the asked form: JSON, or "<command>: error: <message>" as Slurm prints it.
void refuse_as(httplib::Response& res, const std::string& command, bool text, int status, const std::string& code,
               const std::string& message, const std::string& field = "", const json& extra = nullptr) {
  if (!text) return send_error(res, status, code, message, field, extra);
  res.status = status;
  res.set_content(fmt::format("{}: error: {}\n", command, message), "text/plain; charset=utf-8");
}

// A relative path of [A-Za-z0-9._-] segments, none "." or "..": the script
// inside the submit directory. "" when it is one, else why not.
std::string script_problem(const std::string& p) {
  if (p.empty() || p.size() > 320) return "give the script's path inside the clone, 1-320 bytes";
  if (p.front() == '/') return "it is absolute: give it relative to the clone's top directory";
  std::size_t at = 0;
  while (at <= p.size()) {
    std::size_t slash = p.find('/', at);
    if (slash == std::string::npos) slash = p.size();
    const std::string seg = p.substr(at, slash - at);
    if (seg.empty() || seg == "." || seg == ".." || !package::detail::segment_problem(seg).empty())
      return fmt::format("segment \"{}\" is not a plain name ([A-Za-z0-9._-], no \".\" or \"..\"): the script must lie "
                         "inside the submit directory",
                         package::detail::printable(seg));
    at = slash + 1;
  }
  return "";
}

std::string base_name(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Slurm's compact state (squeue ST), its long name (sacct State) and, while
// pending, the reason (squeue NODELIST(REASON)).
struct SlurmView {
  std::string st, state, reason;
  long long elapsed_s = 0;
};

SlurmView view_of(const store::BatchJob& b, store::UnixMs now) {
  SlurmView v;
  using store::State;
  if (b.job.state == State::queued) {
    v.st = "PD";
    v.state = "PENDING";
    v.reason = b.job.held ? "JobHeldAdmin" : "Priority";
    return v;
  }
  if (b.job.state == State::running) {
    v.st = "R";
    v.state = "RUNNING";
    v.reason = "None";
    if (b.job.started_at) v.elapsed_s = (now - *b.job.started_at) / 1000;
    return v;
  }
  static const std::pair<const char*, const char*> kCodes[] = {
      {"COMPLETED", "CD"}, {"FAILED", "F"}, {"TIMEOUT", "TO"}, {"CANCELLED", "CA"}, {"NODE_FAIL", "NF"},
      {"OUT_OF_MEMORY", "OOM"}};
  v.state = b.end_state.empty() ? "FAILED" : b.end_state;
  v.st = "F";
  for (const auto& [name, code] : kCodes)
    if (v.state == name) v.st = code;
  v.reason = "None";
  if (b.elapsed_ms) v.elapsed_s = *b.elapsed_ms / 1000;
  return v;
}

// squeue's TIME: M:SS, H:MM:SS, D-HH:MM:SS.
std::string squeue_time(long long s) {
  if (s >= 86400) return fmt::format("{}-{:02}:{:02}:{:02}", s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// Slurm cuts a column's text to its width, marking nothing (squeue) or with "+" (sacct).
std::string cut(const std::string& s, std::size_t w, bool plus = false) {
  if (s.size() <= w) return s;
  return plus ? s.substr(0, w - 1) + "+" : s.substr(0, w);
}

// The host part of a worker id ("host:pid", "host:pid/gpu0"): squeue's NODELIST.
std::string node_of(const std::string& worker) {
  auto colon = worker.find_first_of(":/");
  return worker.substr(0, colon);
}

std::string squeue_text(const std::vector<store::BatchJob>& jobs, store::UnixMs now) {
  std::string out = fmt::format("{:>18} {:>9} {:>8} {:>8} {:>2} {:>10} {:>6} {}\n", "JOBID", "PARTITION", "NAME", "USER",
                                "ST", "TIME", "NODES", "NODELIST(REASON)");
  for (const auto& b : jobs) {
    const SlurmView v = view_of(b, now);
    const std::string where = v.st == "PD" ? "(" + v.reason + ")" : v.st == "R" ? node_of(b.job.lease_owner) : "";
    out += fmt::format("{:>18} {:>9} {:>8} {:>8} {:>2} {:>10} {:>6} {}\n", b.job.id, cut(b.partition, 9),
                       cut(b.name, 8), cut(b.owner, 8), v.st, squeue_time(v.elapsed_s), 1, where);
  }
  return out;
}

std::string sacct_text(const std::vector<store::BatchJob>& jobs, store::UnixMs now, bool with_review) {
  std::string out = fmt::format("{:<12} {:>10} {:>10} {:>10} {:>8} {:>10} \n", "JobID", "JobName", "Partition", "State",
                                "ExitCode", "Elapsed");
  out += fmt::format("{} {} {} {} {} {} \n", std::string(12, '-'), std::string(10, '-'), std::string(10, '-'),
                     std::string(10, '-'), std::string(8, '-'), std::string(10, '-'));
  for (const auto& b : jobs) {
    const SlurmView v = view_of(b, now);
    const std::string exit = fmt::format("{}:{}", b.exit_code.value_or(0) < 0 ? 0 : b.exit_code.value_or(0),
                                         b.exit_signal.value_or(0));
    out += fmt::format("{:<12} {:>10} {:>10} {:>10} {:>8} {:>10} \n", b.job.id, cut(b.name, 10, true),
                       cut(b.partition, 10, true), cut(v.state, 10, true), exit, board::slurm_duration(v.elapsed_s));
  }
  if (!with_review) return out;
  // What kzoo adds below Slurm's table: where the result is and how it was judged.
  for (const auto& b : jobs) {
    if (!b.result_commit.empty())
      out += fmt::format("kzoo: job {}: its submit directory is commit {} (git fetch origin refs/jobs/{})\n", b.job.id,
                         b.result_commit.substr(0, 12), b.job.id);
    if (b.review.is_object()) {
      for (const auto& m : b.review.value("messages", json::array()))
        if (m.is_string()) out += fmt::format("kzoo: job {}: {}\n", b.job.id, m.get<std::string>());
    } else if (!b.result_commit.empty()) {
      out += fmt::format("kzoo: job {}: its result is being judged as a push\n", b.job.id);
    }
  }
  return out;
}

json batch_json(const store::BatchJob& b, store::UnixMs now) {
  const SlurmView v = view_of(b, now);
  return {{"job_id", b.job.id},
          {"name", b.name},
          {"user", b.owner},
          {"script", b.script},
          {"partition", b.partition},
          {"state", v.state},
          {"st", v.st},
          {"reason", v.reason},
          {"time_limit", board::slurm_duration(b.time_s)},
          {"time_limit_s", b.time_s},
          {"cpus", b.cpus},
          {"memory_mb", b.memory_mb},
          {"gpus", b.gpus},
          {"route", b.route},
          {"base_commit", b.base_commit},
          {"held", b.job.held},
          {"hold_reason", b.job.hold_reason.empty() ? json() : json(b.job.hold_reason)},
          {"elapsed_s", v.elapsed_s},
          {"exit_code", b.exit_code ? json(fmt::format("{}:{}", std::max(0, *b.exit_code), b.exit_signal.value_or(0)))
                                    : json()},
          {"result_commit", b.result_commit.empty() ? json() : json(b.result_commit)},
          {"result_ref", fmt::format("refs/jobs/{}", b.job.id)},
          {"judged", b.judged},
          {"review", b.review},
          {"submitted_at", iso8601(b.job.created_at)},
          {"links", {{"self", fmt::format("/api/batch/{}", b.job.id)}}}};
}

}  // namespace

void Api::post_batch(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  const bool text = text_format(req) == "text";
  auto refuse = [&](int status, const std::string& code, const std::string& message, const std::string& field = "",
                    const json& extra = nullptr) {
    refuse_as(res, "sbatch", text, status, code,
              status >= 500 ? message : "Batch job submission failed: " + message, field, extra);
  };
  auto caller = require(req, res, access::Action::submit);
  if (!caller || !within_limits(*caller, std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10), res)) {
    res.set_header("Connection", "close");
    return;
  }
  if (!req.is_multipart_form_data()) {
    res.set_header("Connection", "close");
    return refuse(415, "not_multipart",
                  "send multipart/form-data: the submit directory as a .tar.gz file part (git archive "
                  "--format=tar.gz HEAD) and the fields script, time, cpus_per_task, mem, gpus, partition, job_name, "
                  "base_commit, route (source /slurm.sh and use its sbatch)");
  }
  FormSpec spec = upload_form_spec();
  spec.fields.assign(std::begin(kBatchFields), std::end(kBatchFields));
  spec.fields_hint = "the fields are script, time, cpus_per_task, mem, gpus, partition, job_name, base_commit, route, "
                     "and one file part (the submit directory as a .tar.gz)";
  spec.field_cap = kScriptCap;
  spec.file_noun = "submit directory";
  spec.file_field = "submit";
  spec.over_cap_hint = "keep the clone's committed files small (a job's inputs are the repository's files)";
  auto form = read_upload_form(reader, spec);
  if (auto* r = std::get_if<FormRefusal>(&form)) {
    res.set_header("Connection", "close");
    return refuse(r->status, r->code, r->message, r->field, r->extra);
  }
  auto& fields = std::get<UploadForm>(form).fields;
  auto& file = std::get<UploadForm>(form).file;
  for (auto& [k, v] : fields) {
    if (k == "script_text") continue;
    if (v.size() > kBatchFieldCap)
      return refuse(413, "field_too_large", fmt::format("form field \"{}\" is over {} bytes", k, kBatchFieldCap), k);
    if (format::find_invalid_utf8(v) || v.find_first_of(std::string("\0\r\n\x1b", 4)) != std::string::npos)
      return refuse(400, "invalid_field", fmt::format("form field \"{}\" is not one line of UTF-8 text", k), k);
  }
  const std::string& script_text = fields["script_text"];
  if (script_text.empty() || script_text.find('\0') != std::string::npos)
    return refuse(400, "invalid_field",
                  "script_text must hold the batch script (1-65536 bytes, no NUL): sbatch sends the file's content",
                  "script_text");
  if (!file)
    return refuse(400, "missing_file",
                  "the request has no file part: attach the submit directory (git archive --format=tar.gz HEAD)",
                  "submit");

  // The script: a plain relative path, present in the submit directory.
  const std::string script = fields["script"];
  if (auto why = script_problem(script); !why.empty())
    return refuse(400, "invalid_field", fmt::format("script \"{}\": {}", package::detail::printable(script), why),
                  "script");
  // The commit the submit directory is: one the server has (pushed).
  const std::string base = fields["base_commit"];
  if (base.size() != 40 || base.find_first_not_of("0123456789abcdef") != std::string::npos)
    return refuse(400, "invalid_field",
                  fmt::format("base_commit \"{}\" is not a commit id (40 lowercase hex digits, git rev-parse HEAD)",
                              package::detail::printable(base.substr(0, 64))),
                  "base_commit");
  if (!gitserve::is_commit(repo.dir(), base))
    return refuse(422, "unknown_commit",
                  fmt::format("commit {} is not on the server: push it first (git push origin HEAD:routes/<name>), "
                              "then sbatch again; a job's result is judged against the commit it was built on",
                              base.substr(0, 12)),
                  "base_commit");
  const std::string route = fields["route"];
  if (!route.empty() && !board::valid_route_name(route))
    return refuse(400, "invalid_field",
                  fmt::format("route \"{}\" is not a route name: use 1-63 of a-z 0-9 . _ -, starting with a letter "
                              "or digit (KZOO_ROUTE)",
                              package::detail::printable(route)),
                  "route");
  const std::string name = fields["job_name"].empty() ? base_name(script) : fields["job_name"];
  if (name.size() > 200) return refuse(400, "invalid_field", "job_name is 1-200 bytes (--job-name)", "job_name");

  // The partition's limits over what the script asks (board/batch_request.hpp).
  auto rules = board::rules_in_force(repo);
  if (!rules) return refuse(500, "repository", rules.error().message);
  std::optional<board::Partition> partition;
  if (*rules) {
    auto p = board::named_partition((*rules)->doc.value("benchmark", json::object()), fields["partition"]);
    if (!p) return refuse(400, "invalid_field", p.error().message, "partition");
    partition = *p;
  }
  if (!partition) {
    partition = board::seed_partition();
    if (!fields["partition"].empty() && fields["partition"] != partition->name)
      return refuse(400, "invalid_field",
                    fmt::format("partition \"{}\" does not exist: this project has only partition {} (its rules "
                                "declare none); leave --partition out",
                                package::detail::printable(fields["partition"]), partition->name),
                    "partition");
  }
  auto limits = board::settle_batch({fields["time"], fields["cpus_per_task"], fields["mem"], fields["gpus"]}, *partition);
  if (!limits) {
    const std::string option = limits.error().option;
    return refuse(400, "over_partition", limits.error().message,
                  option == "--time" ? "time" : option == "--mem" ? "mem" : option == "--gres" ? "gpus" : "cpus_per_task",
                  {{"option", option}, {"partition", partition->name},
                   {"time_limit", board::slurm_duration(partition->time_limit_s)}});
  }

  // The submit directory: the tarball rules of uploads, over a whole tree.
  auto sha = file->finish();
  if (!sha) return refuse(500, "storage", sha.error().message);
  auto tar = package::read_tree_tarball(file->temp_path(), package::repository_limits());
  if (!tar) return refuse(500, "storage", tar.error().message);
  if (!tar->violations.empty()) {
    for (auto& v : tar->violations)
      if (v.path == file->temp_path()) v.path = "<submit directory>";
    return refuse(422, "invalid_submit_directory",
                  fmt::format("the submit directory breaks {} rule{}; first: {}", tar->violations.size(),
                              tar->violations.size() == 1 ? "" : "s", to_string(tar->violations.front())),
                  "submit", {{"violations", to_json(tar->violations)}});
  }
  const std::string stored = *sha + "-" + file->temp_path().substr(file->temp_path().size() - 6) + ".tar.gz";
  auto lease = db.get();
  if (!lease) return refuse(http_status(lease.error()), "database", lease.error().message);
  auto& dbx = *lease;
  dbx->set_actor(caller->actor());
  auto token = dbx->get_token(caller->who->token_id);
  if (!token) return refuse(http_status(token.error()), "database", token.error().message);
  store::NewBatch nb;
  nb.owner = caller->who->user;
  nb.token_id = caller->who->token_id;
  nb.name = name;
  nb.script = script;
  nb.script_text = script_text;
  nb.partition = partition->name;
  nb.time_s = limits->time_s;
  nb.cpus = limits->cpus;
  nb.memory_mb = static_cast<int>(limits->memory_mb);
  nb.gpus = limits->gpus;
  nb.route = route;
  nb.base_commit = base;
  nb.package_path = paths.uploads() + "/" + stored;
  nb.sha256 = *sha;
  nb.package_bytes = static_cast<std::int64_t>(file->size());
  nb.held = caller->decision.held;  // an outsider's job waits for a maintainer (JobHeldAdmin)
  nb.max_attempts = cfg.max_attempts;
  nb.max_concurrent = admission_of(*token).concurrent_jobs;
  // Stored first: a job never names a file that is not there. A refusal below removes it.
  if (auto c = file->commit(stored); !c) return refuse(500, "storage", c.error().message);
  auto b = dbx->create_batch(nb);
  if (!b) {
    std::error_code ec;
    fs::remove(nb.package_path, ec);
    if (b.error().kind == store::StateError::limited) res.set_header("Retry-After", "60");
    return refuse(b.error().kind == store::StateError::limited ? 429 : http_status(b.error()),
                  b.error().kind == store::StateError::limited ? "rate_limited" : "database", b.error().message);
  }
  res.set_header("Location", fmt::format("/api/batch/{}", b->job.id));
  if (text) {
    res.status = 201;
    // Slurm's own line; a held job says so on stderr-like second line only in the JSON.
    return res.set_content(fmt::format("Submitted batch job {}\n", b->job.id), "text/plain; charset=utf-8");
  }
  send_json(res, 201, batch_json(*b, dbx->now()));
}

void Api::get_batches(const httplib::Request& req, httplib::Response& res) {
  const std::string fmt_ = text_format(req);
  const bool text = fmt_ == "squeue" || fmt_ == "sacct";
  const std::string command = fmt_.empty() ? "squeue" : fmt_;
  auto caller = require(req, res, access::Action::submit);
  if (!caller) return;
  store::BatchFilter f;
  f.owner = caller->who->user;
  if (req.has_param("user")) {
    // squeue -u: another user's jobs are a maintainer's to list.
    const std::string u = req.get_param_value("user");
    if (u != caller->who->user && caller->who->role != store::Role::maintainer)
      return refuse_as(res, command, text, 403, "forbidden",
                       fmt::format("only maintainers list other users' jobs; {} sees their own (leave -u out)",
                                   caller->who->user));
    f.owner = u == "all" ? std::optional<std::string>() : std::optional<std::string>(u);
  }
  f.limit = 1000;
  auto lease = db.get();
  if (!lease) return refuse_as(res, command, text, http_status(lease.error()), "database", lease.error().message);
  judge_batches(**lease);
  auto list = (*lease)->list_batch(f);
  if (!list) return refuse_as(res, command, text, http_status(list.error()), "database", list.error().message);
  const store::UnixMs now = (*lease)->now();
  std::vector<store::BatchJob> shown;
  for (auto& b : *list) {
    // squeue shows what waits or runs, and what ended less than MinJobAge ago.
    if (fmt_ == "squeue" && store::is_final(b.job.state) && b.job.finished_at && now - *b.job.finished_at > kMinJobAgeMs)
      continue;
    shown.push_back(std::move(b));
  }
  std::reverse(shown.begin(), shown.end());  // oldest first, as Slurm lists
  if (fmt_ == "squeue") return res.set_content(squeue_text(shown, now), "text/plain; charset=utf-8");
  if (fmt_ == "sacct") return res.set_content(sacct_text(shown, now, false), "text/plain; charset=utf-8");
  json out = json::array();
  for (const auto& b : shown) out.push_back(batch_json(b, now));
  send_json(res, 200, {{"jobs", out}});
}

void Api::get_batch(const httplib::Request& req, httplib::Response& res) {
  const bool text = text_format(req) == "sacct";
  auto caller = require(req, res, access::Action::submit);
  if (!caller) return;
  auto lease = db.get();
  if (!lease) return refuse_as(res, "sacct", text, http_status(lease.error()), "database", lease.error().message);
  judge_batches(**lease);
  auto b = (*lease)->get_batch(path_id(req));
  if (!b) return refuse_as(res, "sacct", text, http_status(b.error()), "unknown_job", b.error().message);
  if (text) return res.set_content(sacct_text({*b}, (*lease)->now(), true), "text/plain; charset=utf-8");
  send_json(res, 200, batch_json(*b, (*lease)->now()));
}

void Api::post_batch_cancel(const httplib::Request& req, httplib::Response& res) {
  const bool text = text_format(req) == "text";
  const std::int64_t id = path_id(req);
  // A refusal of require() as scancel prints it.
  auto as_text = [&] {
    if (!text) return;
    const json doc = json::parse(res.body, nullptr, false);
    const std::string why = doc.is_object() ? doc.value(json::json_pointer("/error/message"), std::string("refused"))
                                            : std::string("refused");
    refuse_as(res, "scancel", true, res.status, "forbidden", fmt::format("Kill job error on job id {}: {}", id, why));
  };
  auto lease = db.get();
  if (!lease) return refuse_as(res, "scancel", text, http_status(lease.error()), "database", lease.error().message);
  auto b = (*lease)->get_batch(id);
  if (!b) {
    // Whether a job exists is told only to someone signed in.
    if (!require(req, res, access::Action::submit)) return as_text();
    return refuse_as(res, "scancel", text, http_status(b.error()), "unknown_job",
                     fmt::format("Kill job error on job id {}: {}", id, b.error().message));
  }
  access::Context ctx;
  ctx.job_owner = b->owner;
  auto caller = require(req, res, access::Action::cancel_batch, ctx);
  if (!caller) return as_text();
  (*lease)->set_actor(caller->actor());
  auto c = (*lease)->cancel_batch(id, "scancel by " + access::describe(*caller->who));
  if (!c)
    return refuse_as(res, "scancel", text, http_status(c.error()),
                     c.error().kind == store::StateError::wrong_state ? "job_ended" : "database",
                     fmt::format("Kill job error on job id {}: {}", id, c.error().message));
  if (text) {
    res.status = 200;
    return res.set_content("", "text/plain; charset=utf-8");  // scancel prints nothing when it worked
  }
  send_json(res, 200, batch_json(*c, (*lease)->now()));
}

// Judges each ended batch job's result commit as a push of it to the job's
// route (or main) by its owner: the same policy, tree rules, package rules
// and submissions as git_api.cpp's judge_ref, with Slurm's output file, which
// every job leaves at its submit directory's top, exempt.
void Api::judge_batches(store::StateDb& dbx) {
  auto todo = dbx.unjudged_batches(20);
  if (!todo) return;
  for (const auto& b : *todo) {
    if (!dbx.begin_judgement(b.job.id)) continue;  // another server took it
    std::vector<std::string> messages;
    Caller owner;
    if (auto t = dbx.get_token(b.token_id); t && !t->revoked_at)
      owner.who = access::Principal{t->user, t->role, t->kind, t->id, t->label};
    else if (auto u = dbx.get_user(b.owner))
      owner.who = access::Principal{u->name, u->role, store::TokenKind::person, b.token_id, ""};
    json review = {{"ok", false}, {"messages", json::array()}, {"submissions", json::array()}};
    if (!owner.who) {
      review["messages"].push_back(fmt::format("not judged: its owner {} is no longer a user", b.owner));
    } else {
      dbx.set_actor(owner.actor());
      const std::string ref = b.route.empty() ? "refs/heads/main" : "refs/heads/routes/" + b.route;
      auto r = judge_ref(owner, dbx, {b.base_commit, b.result_commit, ref}, messages,
                         PushOrigin{true, fmt::format("slurm-{}.out", b.job.id)});
      review["ok"] = r.ok;
      if (!r.ok) review["refused"] = r.reason;
      static const std::regex kLine(R"(kzoo-submission: id=(\d+) job=(\d+) kernel=(\S+) .*held=(\S+) .*)");
      for (const auto& m : messages) {
        std::smatch s;
        if (std::regex_match(m, s, kLine))
          review["submissions"].push_back(
              {{"id", std::stoll(s[1])}, {"job", std::stoll(s[2])}, {"kernel", s[3]}, {"held", s[4] == "true"}});
        else
          review["messages"].push_back(m.rfind("kzoo: ", 0) == 0 ? m.substr(6) : m);
      }
    }
    dbx.set_actor({"kzoo", "", ""});
    (void)dbx.record_judgement(b.job.id, review);
  }
}

void Api::get_slurm_sh(const httplib::Request& req, httplib::Response& res) {
  auto caller = require(req, res, access::Action::submit);
  if (!caller) return;
  // The token it came with: the script acts as its caller, nobody else.
  auto token = access::bearer(req.get_header_value("Authorization"));
  if (!token) token = access::basic_password(req.get_header_value("Authorization"));
  // This server as the caller reached it; a Host that is not a plain host[:port] is refused, since it lands in a shell script.
  const std::string host = req.get_header_value("Host");
  static const std::regex kHost(R"([A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?)");
  if (!std::regex_match(host, kHost))
    return send_error(res, 400, "invalid_host",
                      "the Host header is not a host name or address with an optional port: ask for /slurm.sh at the "
                      "server's own address");
  std::string script(slurm_sh());
  auto put = [&](const std::string& key, const std::string& value) {
    for (std::size_t at; (at = script.find(key)) != std::string::npos;) script.replace(at, key.size(), value);
  };
  put("@KZOO_URL@", "http://" + host);
  put("@KZOO_TOKEN@", *token);
  res.set_header("Cache-Control", "no-store");
  res.status = 200;
  res.set_content(script, "text/x-shellscript; charset=utf-8");
}

}  // namespace kzoo::server
