// `kzoo export -o DIR`: the tasks and every graded result as JSON Lines
// (dataset/export.hpp; schemas/export_result.schema.json), read from a data
// directory -- the state and the kernel_data repository -- and the catalog it
// serves. Exit codes: 0 written, 2 error (no data directory, unwritable DIR).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/dataset/export.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/store/open_state.hpp"

namespace cmd_export {  // per command: a unity build joins commands (CMakeLists.txt)

using nlohmann::json;

struct ExportOptions {
  std::string out, data, catalog;
  bool json = false;
};

// The catalog the data directory's server uses: --catalog, else its
// kzoo.json's `catalog`, else the environment's and defaults'.
std::string catalog_of(const std::string& data, const std::string& flag) {
  if (!flag.empty()) return flag;
  auto env = kzoo::server::process_env();
  kzoo::server::ServerConfig cfg = kzoo::server::default_config(env);
  std::ifstream in(data + "/kzoo.json", std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    (void)kzoo::server::apply_config_file(ss.str(), data + "/kzoo.json", cfg);
  }
  (void)kzoo::server::apply_env(env, cfg);
  return cfg.catalog;
}

int run(const ExportOptions& o) {
  auto error = [&](const std::string& msg) {
    std::cerr << "kzoo export: " << msg << "\n";
    if (o.json) std::cout << json{{"error", msg}}.dump() << "\n";
    return kzoo::cli::kExitError;
  };
  if (!kzoo::server::is_data_dir(o.data))
    return error(o.data + " is not a kzoo data directory (no kernel_data.git and state.db): pass --data DIR, set "
                          "KZOO_DATA, or create one with `kzoo init DIR`");
  auto url = kzoo::server::resolve_state_url(o.data, "", kzoo::server::process_env());
  if (!url) return error(url.error().message);
  auto db = kzoo::store::open_state(*url);
  if (!db) return error(db.error().message);
  auto repo = kzoo::store::KernelRepo::open(kzoo::server::DataPaths(o.data).repo());
  if (!repo) return error(repo.error().message);
  const std::string catalog = catalog_of(o.data, o.catalog);
  const std::string tasks = catalog.empty() ? "" : catalog + "/tasks";
  if (!tasks.empty() && !std::filesystem::is_directory(tasks))
    std::cerr << fmt::format("kzoo export: {} has no tasks/ folder: tasks.jsonl will be empty (give --catalog)\n", catalog);
  auto n = kzoo::dataset::export_dataset(**db, *repo, tasks, o.out);
  if (!n) return error(n.error().message);
  std::cerr << fmt::format("kzoo export: {} tasks and {} case results of {} graded jobs in {}/tasks.jsonl and "
                           "{}/results.jsonl\n",
                           n->tasks, n->results, n->jobs, o.out, o.out);
  if (o.json)
    std::cout << json{{"out", o.out},
                      {"tasks", n->tasks},
                      {"jobs", n->jobs},
                      {"results", n->results},
                      {"files", {o.out + "/tasks.jsonl", o.out + "/results.jsonl"}},
                      {"schema", "schemas/export_result.schema.json"}}
                     .dump()
              << "\n";
  return kzoo::cli::kExitOk;
}

const bool export_registered = kzoo::cli::register_command(
    "export", "Write the tasks and every graded result as JSON Lines (a dataset: docs/formats.md)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<ExportOptions>();
      auto env = kzoo::server::process_env();
      o->data = env("KZOO_DATA").value_or(kzoo::server::default_config(env).data_dir);
      sub.add_option("-o,--out", o->out, "Folder to write tasks.jsonl and results.jsonl into (created)")->required();
      sub.add_option("--data", o->data, "data directory (default $KZOO_DATA)");
      sub.add_option("--catalog", o->catalog, "catalog whose tasks/ to write (default: the data directory's server's)");
      sub.add_flag("--json", o->json, "Print one JSON document (the counts and files) on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
