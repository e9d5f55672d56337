// The board model (DESIGN §5, seed benchmark_board, docs/BOARD.md): reads the
// kernel_data repository and the state database and computes, for one board
// version, the ranking of routes, the kernels table and the header figures.
// It renders nothing; the server's pages and the CLI print what it returns.
//
// Where each figure comes from:
//   rules          scienceslack.json at `checks` (rules.hpp); an earlier
//                  version at refs/boards/v<N>
//   routes         main and every branch routes/<name>; owners from the state DB
//   a kernel's     the newest commit on the route that changed the kernel and
//   result         carries `Kzoo-Job: N`, whose check (refs/jobs/N:check.json)
//                  passed under this board's version and device class; a
//                  commit without a check (the eager source, a hand edit) ends
//                  the search: that source is unverified
//   the baseline   the newest accepted baseline measurement of the kernel
//                  (a `kind: baseline` submission) under the same version and
//                  device class
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/board/rules.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::board {

inline constexpr const char* kRoutePrefix = "refs/heads/routes/";
inline constexpr std::int64_t kQuietAfterMs = 14LL * 24 * 3600 * 1000;

// A route name: ^[a-z0-9][a-z0-9._-]{0,62}$ without "..", and not ending in ".lock".
bool valid_route_name(const std::string& name);

// The commit that added `kernel_id`'s source on main: its eager baseline.
Result<std::string> baseline_commit(const store::KernelRepo& repo, const std::string& kernel_id);

// The check record of job `job_id` (its evidence's check.json), or null.
nlohmann::json check_record(const store::KernelRepo& repo, std::int64_t job_id);

// The baseline check record of `kernel_id` for `rules` (version, device class), or null.
Result<nlohmann::json> baseline_for(const store::KernelRepo& repo, store::StateDb& db, const Rules& rules,
                                    const std::string& kernel_id);

// The verified result of `kernel_id` on the branch `ref`:
// {commit, time, job, check} or null.
Result<nlohmann::json> route_result(const store::KernelRepo& repo, const Rules& rules, const std::string& ref,
                                    const std::string& kernel_id);

// kernel -> verified speed-up on `ref` (kernels without one are absent).
Result<std::map<std::string, double>> route_speedups(const store::KernelRepo& repo, store::StateDb& db,
                                                     const Rules& rules, const std::string& ref);

// The whole board of `version` (default: the version in force), as the JSON of
// GET /api/board. nullopt when there is no such board (no `checks` tag, or an
// unknown version).
Result<std::optional<nlohmann::json>> board_json(const store::KernelRepo& repo, store::StateDb& db,
                                                 std::optional<int> version, store::UnixMs now);

// One kernel of the board in force: its desc (desc.yaml at main), its baseline,
// and every verified result on every route, oldest first:
// {kernel_id, on_board, description, summary, baseline, points: [{date, time_ms, speedup, route, commit, job}]}.
Result<nlohmann::json> kernel_json(const store::KernelRepo& repo, store::StateDb& db, const std::string& kernel_id);

// GET /api/routes: every route with owner, ref, head and, under the rules in
// force, its verified and reported scores.
Result<nlohmann::json> routes_json(const store::KernelRepo& repo, store::StateDb& db, store::UnixMs now);

}  // namespace kzoo::board
