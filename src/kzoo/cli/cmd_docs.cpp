// `kzoo docs [-o FILE] [--check FILE]`: renders docs/formats.md from the
// schemas compiled into this binary (stdout by default). --check compares
// instead of writing, so CI fails when someone edits a schema and forgets to
// regenerate the page (or edits the page by hand).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kzoo/cli/command.hpp"
#include "kzoo/format/schema_docs.hpp"
#include "kzoo/util/embedded.hpp"

namespace cmd_docs {  // per command: a unity build joins commands (CMakeLists.txt)

struct DocsOptions {
  std::string output;
  std::string check;
  bool json = false;
};

// Prints `doc` as the one JSON document of --json; returns `rc`.
int answer(const DocsOptions& o, const nlohmann::json& doc, int rc) {
  if (o.json) std::cout << doc.dump(2) << "\n";
  return rc;
}

const bool registered = kzoo::cli::register_command(
    "docs", "Generate docs/formats.md from the bundled JSON Schemas (or --check a copy)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto opts = std::make_shared<DocsOptions>();
      sub.add_option("-o,--output", opts->output, "Write the page to FILE instead of stdout");
      sub.add_option("--check", opts->check, "Exit 1 if FILE differs from what would be generated");
      sub.get_option("--check")->excludes(sub.get_option("--output"));
      sub.add_flag("--json", opts->json, "Print one JSON document on stdout (the page as a string without -o)");
      return [opts] {
        auto doc = kzoo::format::render_formats_doc(kzoo::embedded_schemas());
        if (!doc) {
          std::cerr << "kzoo docs: " << doc.error().message << "\n";
          return answer(*opts, {{"ok", false}, {"error", doc.error().message}}, kzoo::cli::kExitError);
        }
        if (!opts->check.empty()) {
          std::ifstream in(opts->check, std::ios::binary);
          if (!in) {
            std::cerr << "kzoo docs: cannot read " << opts->check
                      << ": generate it with `build/kzoo docs -o " << opts->check << "`\n";
            return answer(*opts, {{"ok", false}, {"error", "cannot read " + opts->check}}, kzoo::cli::kExitError);
          }
          std::ostringstream current;
          current << in.rdbuf();
          if (current.str() != *doc) {
            std::cerr << opts->check << " is stale: run `build/kzoo docs -o " << opts->check << "`\n";
            return answer(*opts, {{"ok", false}, {"file", opts->check}, {"current", false}}, kzoo::cli::kExitInvalid);
          }
          return answer(*opts, {{"ok", true}, {"file", opts->check}, {"current", true}}, kzoo::cli::kExitOk);
        }
        if (opts->output.empty()) {
          if (opts->json) return answer(*opts, {{"ok", true}, {"markdown", *doc}}, kzoo::cli::kExitOk);
          std::cout << *doc;
          return kzoo::cli::kExitOk;
        }
        std::ofstream out(opts->output, std::ios::binary | std::ios::trunc);
        out << *doc;
        out.close();
        if (!out) {
          std::cerr << "kzoo docs: cannot write " << opts->output << "\n";
          return answer(*opts, {{"ok", false}, {"error", "cannot write " + opts->output}}, kzoo::cli::kExitError);
        }
        return answer(*opts, {{"ok", true}, {"file", opts->output}}, kzoo::cli::kExitOk);
      };
    });

}  // namespace
