// Who may do what (seed benchmark_board, "Who can do what"; docs/SECURITY.md).
// One pure function, authorize(), that every mutating endpoint calls -- the
// submissions API, the runner API, and the board's routes and pull requests --
// so the rules live in one place and one table test covers them.
//
//   principal   anonymous (no token), or a token: its owner, the owner's role
//               (maintainer | member | outsider) and its kind (person | agent |
//               runner). An agent's token acts for its person.
//   answer      allowed (possibly `held`), or refused with 401 (no valid
//               token, where one is needed) or 403 (a valid token that lacks
//               the role), with a reason that says what would be allowed.
//
// The rules:
//   - reads are public unless the server requires a token for them;
//   - runner tokens do runner work (claim, heartbeat, evidence, complete) and
//     nothing else; no other token does runner work;
//   - anyone signed in (person or agent) submits to kernels on main, starts
//     routes, opens pull requests, comments and reviews; an outsider's jobs
//     are held until a maintainer releases them;
//   - a route's owner (with their agents) and the maintainers push to it and
//     merge pull requests into it; others open pull requests;
//   - maintainers (with their agents) push and merge into main, read held jobs
//     and the audit trail;
//   - a batch job's owner (with their agents) and the maintainers cancel it;
//   - only a maintainer's own person token releases held jobs, moves the
//     `checks` tag and sets a board's status: agents never approve rules;
//   - only a maintainer's own person token changes the project's files
//     (scienceslack.json, AGENTS.md, a package's harness: everything outside a
//     kernel's src/) by a push to main: they are the maintainers' edits, and
//     an agent's push never rewrites the rules its own work is judged by.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kzoo/store/accounts.hpp"

namespace kzoo::access {

struct Principal {
  std::string user;
  store::Role role = store::Role::outsider;
  store::TokenKind kind = store::TokenKind::person;
  std::string token_id;
  std::string label;  // agent or runner name
};

enum class Action {
  read,               // kernels, boards, routes, submissions, job logs
  submit,             // a submission to a kernel on main
  start_route,        // create routes/<name> (owned by the principal's user)
  push_route,         // submit to / push a route directly
  open_pull_request,  // a submission or route merge aimed at a route not owned, or at main
  comment,            // comment on or review a pull request; comment on an issue
  open_issue,         // open an issue
  close_issue,        // close an issue: its author's (their agents too) or any, for a maintainer
  merge_into_route,   // merge a pull request into a route
  push_main,          // push or merge into main
  move_checks_tag,    // approve the rules (scienceslack.json and what its checks read)
  change_project_files,  // push files outside kernels' src/ to main (scienceslack.json, AGENTS.md, harnesses)
  set_board_status,
  measure_baselines,  // queue measurements of the board kernels' eager baselines (the speed-ups' denominators)
  release_job,
  read_held,          // list held jobs
  read_audit,
  runner_work,        // claim, heartbeat, evidence upload, accept, complete
  cancel_batch,       // scancel a batch job: its owner's (their agents too) or any, for a maintainer
};

std::string_view to_string(Action a);

struct Context {
  bool reads_need_token = false;        // the server's require_token_for_reads
  std::optional<std::string> route_owner;  // for push_route and merge_into_route
  std::optional<std::string> issue_author;  // for close_issue
  std::optional<std::string> job_owner;     // for cancel_batch
};

struct Decision {
  int status = 0;     // 0 allowed; 401 or 403 refused
  bool held = false;  // allowed, but the job waits for a maintainer
  std::string code;   // "unauthenticated" | "forbidden" when refused
  std::string reason;
  bool allowed() const { return status == 0; }
};

Decision authorize(const std::optional<Principal>& who, Action action, const Context& ctx = {});

// "alice", "alice (agent claude-1)", "alice (runner gpu-7)"
std::string describe(const Principal& p);

}  // namespace kzoo::access
