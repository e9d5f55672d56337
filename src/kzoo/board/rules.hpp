// The board's rules: scienceslack.json at the root of kernel_data, read ONLY
// at the commit tagged `checks` (the approved version), never at a branch tip
// (seed benchmark_board; docs/BOARD.md). A change merged into main takes
// effect once a maintainer moves the tag.
//
// Boards are kept per version: refs/boards/v<N> points at the last rules
// commit seen in force with `version` N. record_in_force() moves it whenever
// the rules are read (by a check, or by the server), so raising `version`
// starts board N+1 while board N stays readable with the rules it had.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::board {

inline constexpr const char* kRulesFile = "scienceslack.json";
inline constexpr const char* kChecksTag = "refs/tags/checks";
// What a catalog tells `kzoo init` about the board it starts, at its kernel_data root:
// {"version": N, "reason": "..."}. A catalog raises N when its eager baselines change
// (the speed-ups' denominators), so that the boards started from it never put speed-ups
// over two sets of baselines on one board. Read once, by init_rules; the rules in force
// are scienceslack.json's.
inline constexpr const char* kCatalogBoardFile = "board_defaults.json";

struct Rules {
  std::string commit;   // the rules commit (what `checks` points at, peeled)
  std::int64_t commit_time = 0;
  nlohmann::json doc;   // the whole file, valid against schemas/scienceslack.schema.json
  // Shorthands into doc["benchmark"].
  int version = 0;
  std::string status, adopt, device_class;
  std::vector<std::string> kernels;
  std::vector<std::string> maintainers;
  int inputs = 0, timed_runs = 0, warmup = 0;
  std::optional<double> atol, rtol;
  std::string metrics_file = "metrics.json";  // the first check's `metrics`
};

// What an error in the rules in force tells the reader to do.
inline constexpr std::string_view kFixRulesOnMain = "fix the file on main and move the `checks` tag to the fixed commit";

// Parses and validates the text of a rules file: the schema, then the compute
// partition its checks run on (board.partition: declared, durations H:MM:SS,
// default_time within time_limit), so that rules a check could not run under
// are refused when they are read, pushed or approved, not when a job starts.
// `where` names the file in errors, `fix` ends them (a push says "push again").
Result<Rules> parse_rules(const std::string& text, const std::string& where, std::string_view fix = kFixRulesOnMain);

// The rules in force: scienceslack.json at the commit `checks` points at.
// nullopt when there is no `checks` tag (the project declares no checks yet).
// A tag pointing at a commit without the file, or an invalid file, is an error
// naming the commit, the rule broken and the fix.
Result<std::optional<Rules>> rules_in_force(const store::KernelRepo& repo);

// The rules of board `version`: at refs/boards/v<version>. nullopt if unknown.
Result<std::optional<Rules>> rules_of_version(const store::KernelRepo& repo, int version);

// Every board version recorded, ascending.
Result<std::vector<int>> versions(const store::KernelRepo& repo);

// Approves the rules at `commit` (a full id, or a ref): they must be a valid
// scienceslack.json there. Moves the `checks` tag to it and records its
// version (record_in_force). The caller checks who may (move_checks_tag).
Result<Rules> approve_rules(const store::KernelRepo& repo, const std::string& commit);

// Points refs/boards/v<rules.version> at rules.commit (no-op when it does).
Result<void> record_in_force(const store::KernelRepo& repo, const Rules& rules);

// The rules `kzoo init` writes for a catalog: every kernel of `kernel_ids`, the
// seed's guardrails, verifier version `version`, adopt auto, ranking `device_class`
// ("cpu" on a machine without a GPU: see docs/BOARD.md).
nlohmann::json demo_rules(const std::vector<std::string>& kernel_ids, const std::string& device_class,
                          int version = 1);

// The verifier version a catalog's kCatalogBoardFile declares; `where` names it in errors.
Result<int> catalog_board_version(const std::string& text, const std::string& where);

// Writes demo_rules onto main as its own commit and tags it `checks`: the version is
// main's kCatalogBoardFile's, 1 without one.
Result<std::string> init_rules(const store::KernelRepo& repo, const std::string& device_class);

}  // namespace kzoo::board
