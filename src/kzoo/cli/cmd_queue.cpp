// `kzoo queue`: the server's queue (GET /api/jobs) as a person reads it --
// what runs and on which worker, what waits for a worker and in which place,
// what waits for a person -- or, with --state finished, what ended lately.
// Exit codes: 0 listed, 2 error (unreachable server, refused query).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"

namespace cmd_queue {  // per command: a unity build joins commands (CMakeLists.txt)

using nlohmann::json;

struct QueueOptions {
  std::string server, state = "active", kernel, submitter;
  int limit = 50;
  bool json = false;
};

std::string text(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// One job, one line: what it is waiting on first, then what it grades.
std::string line(const json& j) {
  const std::string what = fmt::format("job {:<5} submission {:<5} {}  {}", j.value("id", 0), j.value("submission_id", 0),
                                       text(j, "kernel_id"), text(j, "submitter_id"));
  const std::string state = text(j, "state");
  if (state == "running")
    return fmt::format("running   {}  on {} since {}, lease until {} (attempt {} of {})", what, text(j, "worker"),
                       text(j, "started_at"), text(j, "lease_expires_at"), j.value("attempts", 0),
                       j.value("max_attempts", 0));
  if (state == "queued" && j.value("held", false))
    return fmt::format("held      {}  waits for {} ({})", what,
                       text(j, "hold_reason") == "PullRequest" ? "its route's owner to merge it"
                                                               : "a maintainer to release it",
                       text(j, "hold_reason"));
  if (state == "queued") {
    const json& g = j.contains("requires_gpus") ? j["requires_gpus"] : json();
    const std::int64_t gpus = g.is_number_integer() ? g.get<std::int64_t>() : 1;
    return fmt::format("queued #{:<2} {}  since {}{}{}{}", j["position"].is_number() ? j["position"].get<std::int64_t>() : 0,
                       what, text(j, "created_at"),
                       text(j, "requires_compute_capability").empty()
                           ? ""
                           : ", needs compute capability " + text(j, "requires_compute_capability"),
                       gpus > 1 ? fmt::format(", needs {} GPUs of one node", gpus) : "",
                       text(j, "passed_over").empty() ? "" : "; " + text(j, "passed_over"));
  }
  return fmt::format("{:<9} {}  ended {}", state, what, text(j, "finished_at"));
}

int run(const QueueOptions& o) {
  // What is waiting or running is listed in the order workers claim it; what
  // has ended, newest first.
  const bool waiting = o.state == "active" || o.state == "queued" || o.state == "held" || o.state == "running";
  std::string path = fmt::format("/api/jobs?state={}&limit={}{}", kzoo::server::query_escape(o.state), o.limit,
                                 waiting ? "&after=0" : "");
  if (!o.kernel.empty()) path += "&kernel=" + kzoo::server::query_escape(o.kernel);
  if (!o.submitter.empty()) path += "&submitter=" + kzoo::server::query_escape(o.submitter);
  auto a = kzoo::server::http_get(o.server, path);
  std::string err = !a ? a.error().message : a->status != 200 ? kzoo::server::describe_error(*a) : "";
  if (!err.empty()) {
    std::cerr << "kzoo queue: " << err << "\n";
    if (o.json) std::cout << json{{"error", err}}.dump() << "\n";
    return kzoo::cli::kExitError;
  }
  if (o.json) {
    std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return kzoo::cli::kExitOk;
  }
  const json& counts = a->body["counts"];
  std::cout << fmt::format("{}: {} queued, {} held, {} running\n", o.server, counts.value("queued", 0),
                           counts.value("held", 0), counts.value("running", 0));
  // Running first, then the line in order, then what waits for a person.
  std::vector<std::string> running, queued, held, other;
  for (const auto& j : a->body["jobs"]) {
    const std::string s = text(j, "state");
    (s == "running" ? running : s == "queued" ? (j.value("held", false) ? held : queued) : other).push_back(line(j));
  }
  for (const auto* group : {&running, &queued, &held, &other})
    for (const auto& l : *group) std::cout << "  " << l << "\n";
  if (a->body["next"].is_string())
    std::cout << fmt::format("  ... more: --limit {} or GET {}\n", std::min(o.limit * 2, 1000),
                             a->body["next"].get<std::string>());
  return kzoo::cli::kExitOk;
}

const bool queue_registered = kzoo::cli::register_command(
    "queue", "Show the server's queue: running jobs and their workers, the line, held jobs",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<QueueOptions>();
      o->server = kzoo::server::default_server_url();
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER, default http://127.0.0.1:8321)");
      sub.add_option("--state", o->state,
                     "active (default: queued, held and running), queued, held, running, finished, accepted, "
                     "rejected, failed or cancelled")
          ->check(CLI::IsMember({"active", "queued", "held", "running", "finished", "accepted", "rejected", "failed",
                                 "cancelled"}));
      sub.add_option("--kernel", o->kernel, "Only jobs of this kernel ID")->check(kzoo::cli::utf8_text());
      sub.add_option("--submitter", o->submitter, "Only jobs of this submitter")->check(kzoo::cli::utf8_text());
      sub.add_option("--limit", o->limit, "At most this many jobs (1-1000, default 50)")->check(CLI::Range(1, 1000));
      sub.add_flag("--json", o->json, "Print the server's JSON document (GET /api/jobs) on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
