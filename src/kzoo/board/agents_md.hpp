// AGENTS.md at the root of kernel_data: the project's rules for people and
// agents (seed benchmark_board: "Its rules for people and agents go there").
// It lives in the repository, so its maintainers own it and change it like
// any other file (a pull request into main); the board's page shows it.
// `kzoo init` commits a starter when the catalog brings none: how to grade
// locally, submit, start a route, open a pull request, and the guardrails.
#pragma once

#include <string>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::board {

inline constexpr const char* kAgentsFile = "AGENTS.md";

// The starter's text.
std::string starter_agents_md();

// Commits the starter onto main when main has no AGENTS.md. Returns whether it did.
Result<bool> ensure_agents_md(const store::KernelRepo& repo);

}  // namespace kzoo::board
