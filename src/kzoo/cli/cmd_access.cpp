// Accounts, tokens, held jobs and the audit trail (access/, docs/SECURITY.md):
//   kzoo user add NAME --role maintainer|member|outsider    kzoo user list
//   kzoo token new USER [--agent NAME | --runner NAME] [--expires DAYS] [--max-...]
//   kzoo token list [USER]    kzoo token revoke ID
//   kzoo jobs --held          kzoo release JOB          kzoo audit
// user and token work on the data directory (whoever may write it runs the
// site). jobs, release and audit do too, or go through a server with
// --server URL (or $KZOO_SERVER, unless --data is given) and a maintainer's
// token ($KZOO_TOKEN).
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "kzoo/access/token.hpp"
#include "kzoo/cli/command.hpp"
#include "kzoo/cli/local_state.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/util/iso_time.hpp"

namespace cmd_access {  // per command: a unity build joins commands (CMakeLists.txt)

using kzoo::cli::kExitError;
using kzoo::cli::kExitInvalid;
using kzoo::cli::kExitOk;
using kzoo::iso8601_utc;
using nlohmann::json;
namespace store = kzoo::store;

std::string default_data() {
  auto env = kzoo::server::process_env();
  return env("KZOO_DATA").value_or(kzoo::server::default_config(env).data_dir);
}

using kzoo::cli::local_actor;

int error(const std::string& verb, const std::string& msg) {
  std::cerr << "kzoo " << verb << ": " << msg << "\n";
  return kExitError;
}

// A refusal of the store: 1 for "cannot, as asked" (exists, not held...), 2 otherwise.
int refused(const std::string& verb, const store::StateError& e) {
  std::cerr << "kzoo " << verb << ": " << e.message << "\n";
  return e.kind == store::StateError::io || e.kind == store::StateError::busy ? kExitError : kExitInvalid;
}

json token_json(const store::Token& t, store::UnixMs now) {
  std::string status = t.revoked_at ? "revoked" : t.expires_at && *t.expires_at <= now ? "expired" : "active";
  json j = {{"id", t.id}, {"user", t.user}, {"kind", store::to_string(t.kind)},
            {"name", t.label.empty() ? json() : json(t.label)}, {"status", status},
            {"created_at", iso8601_utc(t.created_at)}, {"created_by", t.created_by},
            {"expires_at", t.expires_at ? json(iso8601_utc(*t.expires_at)) : json()},
            {"last_used_at", t.last_used_at ? json(iso8601_utc(*t.last_used_at)) : json()}};
  json lim = json::object();
  if (t.limits.submissions_per_hour) lim["submissions_per_hour"] = *t.limits.submissions_per_hour;
  if (t.limits.concurrent_jobs) lim["concurrent_jobs"] = *t.limits.concurrent_jobs;
  if (t.limits.upload_bytes_per_day) lim["upload_bytes_per_day"] = *t.limits.upload_bytes_per_day;
  j["limits"] = lim;
  return j;
}

struct Opts {
  std::string data = default_data();
  bool data_given = false;  // --data on the command line
  std::string name, role, agent, runner, server;
  int expires_days = 0;
  std::int64_t max_per_hour = -1, max_jobs = -1, max_bytes = -1;
  bool json_out = false, held = false;
  std::int64_t job = 0;
  int limit = 50;
};

void data_option(CLI::App& sub, Opts& o) {
  sub.add_option("--data", o.data, "data directory (default $KZOO_DATA)")->each([&o](const std::string&) { o.data_given = true; });
}

// The verbs with a server form (jobs, release, audit) go through a server when
// one is named: --server, else $KZOO_SERVER unless --data names a directory.
// Without either, the data directory ($KZOO_DATA or the default).
void server_or_data_options(CLI::App& sub, Opts& o, const char* what) {
  data_option(sub, o);
  sub.add_option("--server", o.server, std::string(what) + " (default $KZOO_SERVER, unless --data is given)");
}
bool through_server(Opts& o) {
  if (o.server.empty() && !o.data_given) {
    const char* env = std::getenv("KZOO_SERVER");
    if (env && *env) o.server = env;
  }
  return !o.server.empty();
}

const bool user_add = kzoo::cli::register_command(
    "user add", "Add a user with a role (maintainer, member, or outsider whose jobs wait held)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("name", o->name, "user name: letters, digits, . _ -")->required();
      sub.add_option("--role", o->role, "maintainer | member | outsider")
          ->required()
          ->check(CLI::IsMember({"maintainer", "member", "outsider"}));
      data_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto db = kzoo::cli::open_local_state(o->data);
        if (!db) return error("user add", db.error().message);
        auto u = (*db)->add_user(o->name, *store::parse_role(o->role));
        if (!u) return refused("user add", u.error());
        if (o->json_out)
          std::cout << json{{"name", u->name}, {"role", store::to_string(u->role)}, {"created_at", iso8601_utc(u->created_at)}}.dump(2)
                    << "\n";
        std::cerr << fmt::format("kzoo user add: {} is a {}; `kzoo token new {}` makes their token\n", u->name,
                                 store::to_string(u->role), u->name);
        return kExitOk;
      };
    });

const bool user_list = kzoo::cli::register_command(
    "user list", "List users and their roles", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      data_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto db = kzoo::cli::open_local_state(o->data);
        if (!db) return error("user list", db.error().message);
        auto users = (*db)->list_users();
        if (!users) return refused("user list", users.error());
        json list = json::array();
        for (const auto& u : *users) list.push_back({{"name", u.name}, {"role", store::to_string(u.role)}, {"created_at", iso8601_utc(u.created_at)}});
        if (o->json_out) {
          std::cout << json{{"users", list}}.dump(2) << "\n";
        } else {
          for (const auto& u : *users) std::cout << fmt::format("{:<24} {:<10} {}\n", u.name, store::to_string(u.role), iso8601_utc(u.created_at));
        }
        return kExitOk;
      };
    });

const bool token_new = kzoo::cli::register_command(
    "token new", "Issue a token for a user, one of their agents, or a runner (shown once)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("user", o->name, "the token's owner")->required();
      auto* agent = sub.add_option("--agent", o->agent, "an agent's token, acting for USER");
      auto* runner =
          sub.add_option("--runner", o->runner, "a runner's token (USER must be a maintainer): claims and completes jobs only")
              ->excludes(agent);
      sub.add_option("--expires", o->expires_days, "days until it expires (default: never)")->check(CLI::Range(1, 3650));
      sub.add_option("--max-submissions-per-hour", o->max_per_hour, "this token's limit (default: the server's)")->check(CLI::NonNegativeNumber);
      sub.add_option("--max-concurrent-jobs", o->max_jobs, "this token's limit (default: the server's)")->check(CLI::NonNegativeNumber);
      sub.add_option("--max-upload-bytes-per-day", o->max_bytes, "this token's limit (default: the server's)")->check(CLI::NonNegativeNumber);
      data_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout (with the token)");
      return [o, agent, runner] {
        // An empty name (`--agent "$NAME"` with NAME unset) would read below as no flag at all, and
        // issue a person's token, which may do far more than an agent's or a runner's.
        if ((agent->count() && o->agent.empty()) || (runner->count() && o->runner.empty())) {
          const bool a = agent->count() > 0;
          return error("token new", fmt::format("{} needs a name: 1-64 letters, digits, '.', '_' or '-' (e.g. {} {})",
                                                a ? "--agent" : "--runner", a ? "--agent" : "--runner",
                                                a ? "claude" : "gpu-node-1"));
        }
        auto db = kzoo::cli::open_local_state(o->data);
        if (!db) return error("token new", db.error().message);
        auto fresh = kzoo::access::new_token();
        if (!fresh) return error("token new", fresh.error().message);
        store::Token t;
        t.id = fresh->id;
        t.hash = fresh->hash;
        t.user = o->name;
        t.kind = !o->agent.empty() ? store::TokenKind::agent : !o->runner.empty() ? store::TokenKind::runner : store::TokenKind::person;
        t.label = !o->agent.empty() ? o->agent : o->runner;
        t.created_by = local_actor().who;
        if (o->expires_days > 0) t.expires_at = (*db)->now() + std::int64_t{o->expires_days} * 86'400'000;
        if (o->max_per_hour >= 0) t.limits.submissions_per_hour = o->max_per_hour;
        if (o->max_jobs >= 0) t.limits.concurrent_jobs = o->max_jobs;
        if (o->max_bytes >= 0) t.limits.upload_bytes_per_day = o->max_bytes;
        auto stored = (*db)->add_token(t);
        if (!stored) return refused("token new", stored.error());
        if (o->json_out) {
          json j = token_json(*stored, (*db)->now());
          j["token"] = fresh->text;
          std::cout << j.dump(2) << "\n";
        } else {
          std::cout << fresh->text << "\n";
        }
        std::cerr << fmt::format("kzoo token new: token {} for {}{} -- shown once: only its hash is kept. Send it as "
                                 "\"Authorization: Bearer <token>\" (kzoo reads $KZOO_TOKEN).\n",
                                 stored->id, stored->user,
                                 stored->label.empty() ? "" : fmt::format(" ({} {})", store::to_string(stored->kind), stored->label));
        return kExitOk;
      };
    });

const bool token_list = kzoo::cli::register_command(
    "token list", "List tokens (never their secrets)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("user", o->name, "only this user's");
      data_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto db = kzoo::cli::open_local_state(o->data);
        if (!db) return error("token list", db.error().message);
        auto ts = (*db)->list_tokens(o->name.empty() ? std::nullopt : std::optional(o->name));
        if (!ts) return refused("token list", ts.error());
        json list = json::array();
        for (const auto& t : *ts) list.push_back(token_json(t, (*db)->now()));
        if (o->json_out) {
          std::cout << json{{"tokens", list}}.dump(2) << "\n";
        } else {
          for (const auto& t : list)
            std::cout << fmt::format("{}  {:<16} {:<7} {:<16} {:<8} {}\n", t["id"].get<std::string>(),
                                     t["user"].get<std::string>(), t["kind"].get<std::string>(),
                                     t["name"].is_string() ? t["name"].get<std::string>() : "-",
                                     t["status"].get<std::string>(),
                                     t["expires_at"].is_string() ? "expires " + t["expires_at"].get<std::string>() : "");
        }
        return kExitOk;
      };
    });

const bool token_revoke = kzoo::cli::register_command(
    "token revoke", "Revoke a token by its id (the 16 hex digits after kzoo_)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->name, "token id, or the whole token")->required();
      data_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto db = kzoo::cli::open_local_state(o->data);
        if (!db) return error("token revoke", db.error().message);
        std::string id = o->name;
        if (auto p = kzoo::access::parse_token(id)) id = p->id;
        auto t = (*db)->revoke_token(id);
        if (!t) return refused("token revoke", t.error());
        if (o->json_out) std::cout << token_json(*t, (*db)->now()).dump(2) << "\n";
        std::cerr << fmt::format("kzoo token revoke: token {} of {} is revoked; the server refuses it from now on\n",
                                 t->id, t->user);
        return kExitOk;
      };
    });

const bool jobs_cmd = kzoo::cli::register_command(
    "jobs", "List jobs waiting for a maintainer (--held)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_flag("--held", o->held, "jobs held for a maintainer's release (JobHeldAdmin)")->required();
      server_or_data_options(sub, *o, "ask this server instead of the data directory");
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        json list = json::array();
        if (through_server(*o)) {
          auto a = kzoo::server::http_get(o->server, "/api/jobs/held");
          if (!a) return error("jobs", a.error().message);
          if (a->status != 200) return error("jobs", kzoo::server::describe_error(*a));
          list = a->body.value("held", json::array());
        } else {
          auto db = kzoo::cli::open_local_state(o->data);
          if (!db) return error("jobs", db.error().message);
          auto held = (*db)->held_jobs(1000);
          if (!held) return refused("jobs", held.error());
          for (const auto& h : *held)
            list.push_back({{"job_id", h.job_id}, {"submission_id", h.submission_id}, {"kernel_id", h.kernel_id},
                            {"submitter_id", h.submitter_id}, {"optimization_summary", h.summary},
                            {"reason", "JobHeldAdmin"}, {"created_at", iso8601_utc(h.created_at)}});
        }
        if (o->json_out) {
          std::cout << json{{"held", list}}.dump(2) << "\n";
        } else {
          if (list.empty()) std::cerr << "kzoo jobs: no held jobs\n";
          for (const auto& h : list)
            std::cout << fmt::format("job {:<6} submission {:<6} {:<16} {:<40} {}\n", h.value("job_id", 0),
                                     h.value("submission_id", 0), h.value("submitter_id", ""), h.value("kernel_id", ""),
                                     h.value("created_at", ""));
        }
        return kExitOk;
      };
    });

const bool release_cmd = kzoo::cli::register_command(
    "release", "Release a held job so a runner may claim it", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("job", o->job, "job id (kzoo jobs --held lists them)")->required()->check(kzoo::cli::positive_id());
      server_or_data_options(sub, *o, "release through this server (a maintainer's $KZOO_TOKEN)");
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        json released = {{"job_id", o->job}, {"released", true}};
        if (through_server(*o)) {
          auto a = kzoo::server::http_post_json(o->server, fmt::format("/api/jobs/{}/release", o->job), json::object());
          if (!a) return error("release", a.error().message);
          if (a->status != 200) {
            std::cerr << "kzoo release: " << kzoo::server::describe_error(*a) << "\n";
            return a->status == 409 || a->status == 404 ? kExitInvalid : kExitError;
          }
          if (a->body.is_object()) released.update(a->body);
        } else {
          auto db = kzoo::cli::open_local_state(o->data);
          if (!db) return error("release", db.error().message);
          auto j = (*db)->release_job(o->job);
          if (!j) return refused("release", j.error());
        }
        if (o->json_out) std::cout << released.dump(2) << "\n";
        std::cerr << fmt::format("kzoo release: job {} released; a runner may claim it now\n", o->job);
        return kExitOk;
      };
    });

const bool audit_cmd = kzoo::cli::register_command(
    "audit", "Show the audit trail, newest first", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      server_or_data_options(sub, *o, "ask this server (a maintainer's $KZOO_TOKEN)");
      sub.add_option("--limit", o->limit, "entries (1-1000)")->check(CLI::Range(1, 1000));
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        json list = json::array();
        if (through_server(*o)) {
          auto a = kzoo::server::http_get(o->server, fmt::format("/api/audit?limit={}", o->limit));
          if (!a) return error("audit", a.error().message);
          if (a->status != 200) return error("audit", kzoo::server::describe_error(*a));
          list = a->body.value("entries", json::array());
        } else {
          auto db = kzoo::cli::open_local_state(o->data);
          if (!db) return error("audit", db.error().message);
          auto log = (*db)->audit_log({INT64_MAX, o->limit, std::nullopt});
          if (!log) return refused("audit", log.error());
          for (const auto& e : *log)
            list.push_back({{"id", e.id}, {"at", iso8601_utc(e.at)}, {"who", e.who}, {"token_id", e.token_id},
                            {"action", e.action}, {"target", e.target}, {"detail", e.detail}});
        }
        if (o->json_out) {
          std::cout << json{{"entries", list}}.dump(2) << "\n";
        } else {
          for (const auto& e : list)
            std::cout << fmt::format("{:<24} {:<20} {:<18} {:<20} {}\n", e.value("at", ""), e.value("who", ""),
                                     e.value("action", ""), e.value("target", ""), e.value("detail", json()).dump());
        }
        return kExitOk;
      };
    });

}  // namespace
