// `kzoo board [--version N] [--json]`: the benchmark board (board/, served at
// GET /api/board and /api/boards/N; the page at GET /). `kzoo baselines`:
// queue a measurement of the board kernels' eager baselines.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"

namespace cmd_board {  // per command: a unity build joins commands (CMakeLists.txt)

using namespace kzoo::server;
using nlohmann::json;

// Percent-encodes a query value (kernel IDs hold slashes).
std::string fixed(const json& x, int digits = 4) {
  return x.is_number() ? fmt::format("{:.{}f}", x.get<double>(), digits) : std::string("-");
}
std::string str(const json& x) { return x.is_string() ? x.get<std::string>() : std::string("-"); }

void print_board(const json& b, const std::string& server) {
  std::cout << fmt::format("{} · {} · verifier v{} · started {} · device class {}\n", str(b["title"]),
                           str(b["status"]), b.value("version", 0), str(b["started"]).substr(0, 10),
                           str(b["device_class"]));
  if (!b["in_force"].get<bool>()) std::cout << "(an earlier board, kept as it was; not in force)\n";
  const json& c = b["counts"];
  std::cout << fmt::format("{} agents at work · {} agents in all · {} routes · last activity {}\n",
                           c.value("agents_at_work", 0), c.value("agents", 0), c.value("routes", 0),
                           str(c["last_activity"]));
  std::cout << fmt::format("rules: scienceslack.json at {} (the commit tagged checks); adopt: {}\n",
                           str(b["rules_commit"]).substr(0, 12), str(b["adopt"]));
  std::cout << fmt::format("score: geometric mean of {} kernels' speed-ups over {} (a kernel without a result counts 1)\n\n",
                           b["kernel_ids"].size(), str(b["baseline"]["name"]));
  std::cout << "Ranking\n";
  std::cout << fmt::format("  {:>3}  {:<24} {:<16} {:<9} {:>10} {:>10}  {}\n", "#", "route", "owner", "kind", "score",
                           "cost (s)", "date");
  for (const auto& r : b["ranking"])
    std::cout << fmt::format("  {:>3}  {:<24} {:<16} {:<9} {:>10} {:>10}  {}\n", r.value("rank", 0), str(r["route"]),
                             str(r["owner"]), str(r["kind"]), fixed(r["score"]), fixed(r["cost_s"], 1),
                             str(r["date"]));
  if (b["ranking"].empty()) std::cout << "  (no verified result yet)\n";
  for (const auto& r : b["reported_others"])
    std::cout << fmt::format("       {:<24} reported by {} (not a maintainer; unranked): {}\n", str(r["route"]),
                             str(r["by"]), fixed(r["score"]));
  std::cout << "\nKernels\n";
  std::size_t width = 6;  // the kernel column fits the longest ID
  for (const auto& k : b["kernels"]) width = std::max(width, str(k["kernel_id"]).size());
  std::cout << fmt::format("  {:<{}} {:>12} {:>12} {:>9}  {:<20} {:>10}\n", "kernel", width, "eager (us)", "best (us)",
                           "speed-up", "route", "% roofline");
  for (const auto& k : b["kernels"])
    std::cout << fmt::format("  {:<{}} {:>12} {:>12} {:>9}  {:<20} {:>10}{}\n", str(k["kernel_id"]), width,
                             fixed(k["eager_us"], 1), fixed(k["best_us"], 1), fixed(k["speedup"]), str(k["route"]),
                             fixed(k["roofline_pct"], 1),
                             k.contains("note") ? "  (" + k["note"].get<std::string>() + ")" : "");
  std::cout << fmt::format("\npage: {}/{}\n", server,
                           b["in_force"].get<bool>() ? std::string() : "boards/" + std::to_string(b.value("version", 0)));
}

struct BoardOptions {
  std::string server;
  int version = 0;
  bool json = false;
};

const bool board_registered = kzoo::cli::register_command(
    "board", "Show the benchmark board: ranking of routes, kernels, rules in force", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<BoardOptions>();
      o->server = default_server_url();
      sub.add_option("--version", o->version, "An earlier board's version (default: the one in force)")
          ->check(CLI::PositiveNumber);
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        auto s = http_get(o->server, o->version ? fmt::format("/api/boards/{}", o->version) : "/api/board");
        if (!s || s->status != 200) {
          std::cerr << "kzoo board: " << (s ? describe_error(*s) : s.error().message) << "\n";
          return kzoo::cli::kExitError;
        }
        if (o->json) std::cout << s->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        else print_board(s->body, o->server);
        return kzoo::cli::kExitOk;
      };
    });

struct BaselineOptions {
  std::string server, submitter;
  std::vector<std::string> kernels;
  bool wait = false, json = false;
};

const bool baselines_registered = kzoo::cli::register_command(
    "baselines", "Queue a measurement of the board kernels' eager baselines (the speed-ups' denominators)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<BaselineOptions>();
      o->server = default_server_url();
      sub.add_option("--kernel", o->kernels, "Only this kernel (repeatable; default: every board kernel)");
      sub.add_option("--submitter", o->submitter, "Who asks: the owner of $KZOO_TOKEN, a maintainer (checked)");
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--wait", o->wait, "Wait until every measurement is final");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        std::string q;
        for (const auto& k : o->kernels) q += (q.empty() ? "?" : "&") + std::string("kernel=") + query_escape(k);
        if (!o->submitter.empty()) q += (q.empty() ? "?" : "&") + std::string("submitter=") + query_escape(o->submitter);
        auto s = http_post_json(o->server, "/api/board/baselines" + q, nullptr);
        if (!s || s->status != 202) {
          std::cerr << "kzoo baselines: " << (s ? describe_error(*s) : s.error().message) << "\n";
          return kzoo::cli::kExitError;
        }
        json subs = s->body["submissions"];
        for (const auto& x : subs)
          std::cerr << fmt::format("kzoo baselines: {} queued as submission {}\n", str(x["kernel_id"]), x.value("id", 0));
        int rc = kzoo::cli::kExitOk;
        json finals = json::array();
        if (o->wait)
          for (const auto& x : subs) {
            for (auto pause = std::chrono::milliseconds(500);; pause = std::min(pause * 2, std::chrono::milliseconds(5000))) {
              auto st = http_get(o->server, fmt::format("/api/submissions/{}", x.value("id", 0)));
              if (!st || st->status != 200) {
                std::cerr << "kzoo baselines: " << (st ? describe_error(*st) : st.error().message) << "\n";
                return kzoo::cli::kExitError;
              }
              if (st->body.value("final", false)) {
                std::string state = st->body.value("state", "");
                std::cerr << fmt::format("kzoo baselines: {}: {}\n", str(x["kernel_id"]), state);
                for (const auto& r : st->body["reasons"]) std::cerr << "  reason: " << str(r) << "\n";
                if (state != "accepted") rc = kzoo::cli::kExitInvalid;
                finals.push_back(st->body);
                break;
              }
              std::this_thread::sleep_for(pause);
            }
          }
        if (o->json) std::cout << (o->wait ? json{{"submissions", finals}} : s->body).dump(2) << "\n";
        return rc;
      };
    });

// The maintainers' board decisions, through the server with their own $KZOO_TOKEN.
struct DecisionOptions {
  std::string server, value;
  int version = 0;
  bool json = false;
};

// The server's answer as the document (--json), or one line of what changed.
int post_decision(const char* cmd, const DecisionOptions& o, const std::string& path, const json& body) {
  auto a = http_post_json(o.server, path, body);
  if (!a || a->status != 200) {
    std::cerr << "kzoo " << cmd << ": " << (a ? describe_error(*a) : a.error().message) << "\n";
    return a && a->status < 500 ? kzoo::cli::kExitInvalid : kzoo::cli::kExitError;
  }
  if (o.json) {
    std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "kzoo " << cmd << ":";
    for (const auto& [k, v] : a->body.items())
      if (!v.is_structured()) std::cout << " " << k << " " << (v.is_string() ? v.get<std::string>() : v.dump());
    std::cout << "\n";
  }
  return kzoo::cli::kExitOk;
}

const bool approve_registered = kzoo::cli::register_command(
    "approve", "Approve the board's rules at a commit: move the `checks` tag there (maintainers only)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<DecisionOptions>();
      o->server = default_server_url();
      sub.add_option("commit", o->value, "the kernel_data commit holding the scienceslack.json to approve (40 hex digits)")
          ->required()
          ->check(kzoo::cli::utf8_text());
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] { return post_decision("approve", *o, "/api/board/checks", {{"commit", o->value}}); };
    });

const bool board_status_registered = kzoo::cli::register_command(
    "board-status", "Set a board's status: active, saturated, superseded or flawed (maintainers only)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<DecisionOptions>();
      o->server = default_server_url();
      sub.add_option("status", o->value, "active, saturated, superseded or flawed (quiet is computed)")
          ->required()
          ->check(CLI::IsMember({"active", "saturated", "superseded", "flawed"}));
      sub.add_option("--version", o->version, "the board's version (default: the board in force)")->check(CLI::PositiveNumber);
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        json body = {{"status", o->value}};
        if (o->version) body["version"] = o->version;
        return post_decision("board-status", *o, "/api/board/status", body);
      };
    });

}  // namespace
