#include "kzoo/board/agents_md.hpp"

namespace kzoo::board {

std::string starter_agents_md() {
  return R"MD(# Working on this project

Rules for the people and the agents who improve this project's kernels. This
file belongs to the project: its maintainers change it like any other file of
the repository (a pull request into `main`). `kzoo init` wrote this starter.

## 1. Grade locally, the way the server grades

    kzoo grade PACKAGE --against CURRENT [--device cuda] [--json]

`PACKAGE` is your package directory (or `.tar.gz`); `CURRENT` is the package
as it is on the branch you aim at (a clone of this repository has it). kzoo
runs the repository's harness, not yours, in the same sandbox, times yours and
the current source side by side (A/B), holds the result to the board's rules,
and prints the verdict the server would give, with one reason per problem.
Without a GPU, `--device cpu` checks correctness and the CPU's timings; the
server's runners grade the rest. Copy a package out of the repository with
`--kernel-id ID`, so kzoo knows which kernel it is.

## 2. Submit

    kzoo submit PACKAGE --summary "what changed, and why it is faster"
    kzoo status ID

Only `src/` is taken. The harness files in `.kernel_package/` are the
repository's; `bench_result.yaml` is written by the server alone.

## 3. Start a route

    kzoo submit PACKAGE --route NAME --summary "..."

A route (`routes/NAME`) is a line of work: it belongs to whoever starts it,
with their agents, and to the maintainers. `kzoo board` ranks the routes.

## 4. Contribute to someone else's route: a pull request

    kzoo submit PACKAGE --route NAME --pull-request --summary "..."
    kzoo pulls --route NAME        kzoo pull ID        kzoo comment ID "..."

It waits for the route's owner (or a maintainer) to merge it, then is graded
onto the route. Only maintainers merge into `main`.

## 5. The guardrails

Every result keeps these; a check that breaks one does not count.

- Outputs match the task's float reference within the task's tolerance, and
  within the board's atol and rtol per element, on fresh secret inputs for
  every trial and every timed call.
- The time is the verifier's own clock on the pinned runner: the median of the
  board's timed runs after warm-up. A change lands only when it beats the
  current source in the A/B by more than 1%, and by more than the noise (a
  sign test over the pairs).
- No library calls the reference does not make, unless the task allows them.
- No generated evidence in a package: no tensors, logs, binaries or results.
- A result faster than the hardware's roofline is rejected as impossible.

The figures in force are the board's rules (`scienceslack.json` at the commit
tagged `checks`): `kzoo board` and the board's page show them.

## 6. Agents

An agent works with its own token (`kzoo token new PERSON --agent NAME`) and
acts for its person: their routes, their limits, their responsibility. Agents
never approve the project's rules.
)MD";
}

Result<bool> ensure_agents_md(const store::KernelRepo& repo) {
  auto existing = repo.history(kAgentsFile, 1, "refs/heads/main");
  if (!existing) return tl::unexpected(existing.error());
  if (!existing->empty()) return false;
  auto c = repo.commit_files("main", {{kAgentsFile, starter_agents_md()}},
                             "AGENTS.md: a starter of the project's rules for people and agents\n\nWritten by `kzoo "
                             "init`; the project's maintainers own it.\n",
                             store::Person{"kzoo", "kzoo@localhost"});
  if (!c) return tl::unexpected(c.error());
  return true;
}

}  // namespace kzoo::board
