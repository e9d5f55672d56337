// kzoo pulls / pull / merge / close / comment: pull requests through the
// server (store/pulls.hpp), with $KZOO_TOKEN as the bearer token. A pull
// request is opened by `kzoo submit --route NAME --pull-request`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/server_answer.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"

namespace cmd_pulls {  // per command: a unity build joins commands (CMakeLists.txt)

using kzoo::cli::kExitError;
using kzoo::cli::kExitInvalid;
using kzoo::cli::kExitOk;
using nlohmann::json;

struct Opts {
  std::string server = kzoo::server::default_server_url();
  std::string route, state = "open", why, body;
  std::int64_t id = 0;
  bool approve = false, request_changes = false, json_out = false;
};

using kzoo::cli::shown;
using kzoo::cli::refused;
constexpr auto str = &kzoo::cli::shown_field;

void print_pull(const json& p) {
  std::cout << fmt::format("pull request {} · {} · into {} (owner {}) · by {} · {}\n", p.value("id", 0), str(p, "state"),
                           str(p, "into"), p.value("route_owner", json()).is_string() ? str(p, "route_owner") : "?",
                           str(p, "author"), str(p, "created_at"));
  if (p.contains("kernel_id")) std::cout << fmt::format("  {}: {}\n", str(p, "kernel_id"), str(p, "optimization_summary"));
  if (p.value("decided_by", json()).is_string())
    std::cout << fmt::format("  {} by {} at {}\n", str(p, "state"), str(p, "decided_by"), str(p, "decided_at"));
  for (const auto& c : p.value("comments", json::array()))
    std::cout << fmt::format("  [{}] {} ({}): {}\n", str(c, "at"), str(c, "who"), str(c, "kind"), str(c, "body"));
}

void server_option(CLI::App& sub, Opts& o) {
  sub.add_option("--server", o.server, "Server URL (env KZOO_SERVER)");
}

const bool pulls_cmd = kzoo::cli::register_command(
    "pulls", "List pull requests (open ones by default)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      server_option(sub, *o);
      sub.add_option("--route", o->route, "only those aimed at this route");
      sub.add_option("--state", o->state, "open, merged, closed or all")
          ->check(CLI::IsMember({"open", "merged", "closed", "all"}));
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        std::string q = "/api/pulls?state=" + o->state;
        if (!o->route.empty()) q += "&route=" + kzoo::server::query_escape(o->route);
        auto a = kzoo::server::http_get(o->server, q);
        if (!a || a->status != 200) return refused("pulls", a);
        if (o->json_out) {
          std::cout << a->body.dump(2) << "\n";
          return kExitOk;
        }
        const json& list = a->body["pulls"];
        if (list.empty()) std::cerr << fmt::format("kzoo pulls: none {}\n", o->state == "all" ? "" : o->state);
        for (const auto& p : list) print_pull(p);
        return kExitOk;
      };
    });

const bool pull_cmd = kzoo::cli::register_command(
    "pull", "Show one pull request with its comments and reviews", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->id, "the pull request (its submission id)")->required()->check(kzoo::cli::positive_id());
      server_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto a = kzoo::server::http_get(o->server, fmt::format("/api/pulls/{}", o->id));
        if (!a || a->status != 200) return refused("pull", a);
        if (o->json_out) std::cout << a->body.dump(2) << "\n";
        else print_pull(a->body);
        return kExitOk;
      };
    });

kzoo::cli::Runner decide(const char* name, CLI::App& sub, bool merge) {
  auto o = std::make_shared<Opts>();
  sub.add_option("id", o->id, "the pull request (its submission id: kzoo pulls lists them)")
      ->required()
      ->check(kzoo::cli::positive_id());
  server_option(sub, *o);
  if (!merge) sub.add_option("--why", o->why, "the reason, kept as the submission's")->check(kzoo::cli::utf8_text());
  sub.add_flag("--json", o->json_out, "one JSON document on stdout");
  return [o, name, merge] {
    json body = json::object();
    if (!o->why.empty()) body["why"] = o->why;
    auto a = kzoo::server::http_post_json(o->server, fmt::format("/api/pulls/{}/{}", o->id, merge ? "merge" : "close"),
                                          body);
    if (!a || a->status != 200) return refused(name, a);
    if (o->json_out) {
      std::cout << a->body.dump(2) << "\n";
    } else if (merge) {
      const json& j = a->body.value("job", json::object());
      std::cerr << fmt::format("kzoo merge: pull request {} merged; job {} {}\n", o->id, j.value("id", 0),
                               j.value("held", false) ? "waits for a maintainer to release it (JobHeldAdmin)"
                                                      : "is queued for grading on route " + str(a->body, "route"));
    } else {
      std::cerr << fmt::format("kzoo close: pull request {} closed; its submission is cancelled\n", o->id);
    }
    return kExitOk;
  };
}

const bool merge_cmd = kzoo::cli::register_command(
    "merge", "Merge a pull request into your route (its job is then graded and lands if the checks accept it)",
    [](CLI::App& sub) { return decide("merge", sub, true); });

const bool close_cmd = kzoo::cli::register_command(
    "close", "Close a pull request (the route's owner, a maintainer, or its author)",
    [](CLI::App& sub) { return decide("close", sub, false); });

const bool comment_cmd = kzoo::cli::register_command(
    "comment", "Comment on or review a pull request", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->id, "the pull request (its submission id)")->required()->check(kzoo::cli::positive_id());
      sub.add_option("text", o->body, "the comment (1-10000 bytes)")->required()->check(kzoo::cli::utf8_text());
      auto* ap = sub.add_flag("--approve", o->approve, "a review that approves it");
      sub.add_flag("--request-changes", o->request_changes, "a review that asks for changes")->excludes(ap);
      server_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        json body = {{"body", o->body},
                     {"kind", o->approve ? "approve" : o->request_changes ? "request_changes" : "comment"}};
        auto a = kzoo::server::http_post_json(o->server, fmt::format("/api/pulls/{}/comments", o->id), body);
        if (!a || a->status != 201) return refused("comment", a);
        if (o->json_out) std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        std::cerr << fmt::format("kzoo comment: {} {} on pull request {}\n", str(a->body, "kind"), a->body.value("id", 0),
                                 o->id);
        return kExitOk;
      };
    });

const bool merge_route_cmd = kzoo::cli::register_command(
    "merge-route", "Merge a route into main or another route (its differing sources submitted there and judged)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("route", o->route, "the route to merge (NAME of routes/NAME)")
          ->required()
          ->check(kzoo::cli::utf8_text())
          ->check(kzoo::cli::route_name(false));
      sub.add_option("--into", o->state, "main (a maintainer's) or a route's NAME (someone else's: pull requests)")
          ->required()
          ->check(kzoo::cli::utf8_text())
          ->check(kzoo::cli::route_name(true));
      server_option(sub, *o);
      sub.add_flag("--json", o->json_out, "one JSON document on stdout");
      return [o] {
        auto a = kzoo::server::http_post_json(
            o->server, fmt::format("/api/routes/{}/merge", kzoo::server::query_escape(o->route)), {{"into", o->state}});
        if (!a || a->status != 202) return refused("merge-route", a);
        if (o->json_out) std::cout << a->body.dump(2) << "\n";
        for (const auto& x : a->body["submissions"])
          std::cerr << fmt::format("kzoo merge-route: {} submitted to {} as submission {}{}\n", str(x, "kernel_id"),
                                   str(a->body, "into"), x.value("id", 0),
                                   x.value("held", false) ? " (held: " + str(x, "hold_reason") + ")" : "");
        return kExitOk;
      };
    });

}  // namespace
