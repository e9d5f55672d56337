#include "kzoo/access/policy.hpp"

#include <fmt/format.h>

namespace kzoo::access {
namespace {

using store::Role;
using store::TokenKind;

Decision allow(bool held = false) { return Decision{0, held, "", ""}; }
Decision forbid(std::string reason) { return Decision{403, false, "forbidden", std::move(reason)}; }

}  // namespace

std::string_view to_string(Action a) {
  switch (a) {
    case Action::read: return "read";
    case Action::submit: return "submit";
    case Action::start_route: return "start a route";
    case Action::push_route: return "push to a route";
    case Action::open_pull_request: return "open a pull request";
    case Action::comment: return "comment";
    case Action::open_issue: return "open an issue";
    case Action::close_issue: return "close an issue";
    case Action::merge_into_route: return "merge into a route";
    case Action::push_main: return "push to main";
    case Action::move_checks_tag: return "move the checks tag";
    case Action::change_project_files: return "change the project's files (scienceslack.json, AGENTS.md, harnesses)";
    case Action::set_board_status: return "set a board's status";
    case Action::measure_baselines: return "queue the board's baseline measurements";
    case Action::release_job: return "release a held job";
    case Action::read_held: return "list held jobs";
    case Action::read_audit: return "read the audit trail";
    case Action::runner_work: return "claim and complete jobs";
    case Action::cancel_batch: return "cancel a batch job";
  }
  return "?";
}

std::string describe(const Principal& p) {
  if (p.kind == TokenKind::person) return p.user;
  return fmt::format("{} ({} {})", p.user, store::to_string(p.kind), p.label);
}

Decision authorize(const std::optional<Principal>& who, Action action, const Context& ctx) {
  if (!who) {
    if (action == Action::read && !ctx.reads_need_token) return allow();
    return Decision{401, false, "unauthenticated",
                    fmt::format("to {} send a token: Authorization: Bearer kzoo_... (`kzoo token new USER` on the "
                                "server's data directory makes one)",
                                to_string(action))};
  }
  const Principal& p = *who;
  const bool runner = p.kind == TokenKind::runner;
  const bool maintainer = p.role == Role::maintainer;
  const bool own_person = p.kind == TokenKind::person;
  if (action == Action::read) return allow();
  if (action == Action::runner_work)
    return runner ? allow()
                  : forbid(fmt::format("{} holds a {} token; only runner tokens, issued by a maintainer with "
                                       "`kzoo token new MAINTAINER --runner NAME`, claim and complete jobs",
                                       describe(p), store::to_string(p.kind)));
  if (runner)
    return forbid(fmt::format("a runner token ({}) only claims and completes jobs; to {} use a person's or "
                              "agent's token",
                              describe(p), to_string(action)));
  switch (action) {
    case Action::submit: return allow(p.role == Role::outsider);
    case Action::start_route:
    case Action::open_pull_request:
    case Action::comment:
    case Action::open_issue: return allow();
    case Action::close_issue:
      if (maintainer || (ctx.issue_author && *ctx.issue_author == p.user)) return allow();
      return forbid(fmt::format("the issue was opened by {}: only its author (with their agents) or a maintainer "
                                "closes it; {} may comment on it instead",
                                ctx.issue_author ? *ctx.issue_author : "someone else", describe(p)));
    case Action::cancel_batch:
      if (maintainer || (ctx.job_owner && *ctx.job_owner == p.user)) return allow();
      return forbid(fmt::format("the batch job belongs to {}: only its owner (with their agents) or a maintainer "
                                "cancels it (scancel)",
                                ctx.job_owner ? *ctx.job_owner : "someone else"));
    case Action::push_route:
    case Action::merge_into_route:
      if (maintainer || (ctx.route_owner && *ctx.route_owner == p.user)) return allow(p.role == Role::outsider);
      return forbid(fmt::format("the route belongs to {}: {} may open a pull request to it, which its owner or a "
                                "maintainer merges",
                                ctx.route_owner ? *ctx.route_owner : "someone else", describe(p)));
    case Action::push_main:
    case Action::measure_baselines:
    case Action::read_held:
    case Action::read_audit:
      if (maintainer) return allow();
      return forbid(fmt::format("only maintainers {}; {} is a {}{}", to_string(action), p.user,
                                store::to_string(p.role),
                                action == Action::push_main ? ": open a pull request to main instead" : ""));
    case Action::move_checks_tag:
    case Action::change_project_files:
    case Action::set_board_status:
    case Action::release_job:
      if (maintainer && own_person) return allow();
      if (maintainer)
        return forbid(fmt::format("only a maintainer's own token may {} (agents never approve or change rules, nor "
                                  "release jobs); {} is an agent token",
                                  to_string(action), describe(p)));
      return forbid(fmt::format("only maintainers {}; {} is a {}", to_string(action), p.user, store::to_string(p.role)));
    case Action::read:
    case Action::runner_work: break;
  }
  return forbid("unknown action");
}

}  // namespace kzoo::access
