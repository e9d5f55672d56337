// `kzoo docs [-o FILE] [--check FILE]`: renders docs/formats.md from the
// schemas compiled into this binary (stdout by default). --check compares
// instead of writing, so CI fails when someone edits a schema and forgets to
// regenerate the page (or edits the page by hand).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "kzoo/cli/command.hpp"
#include "kzoo/format/schema_docs.hpp"
#include "kzoo/util/embedded.hpp"

namespace {

struct DocsOptions {
  std::string output;
  std::string check;
};

const bool registered = kzoo::cli::register_command(
    "docs", "Generate docs/formats.md from the bundled JSON Schemas (or --check a copy)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto opts = std::make_shared<DocsOptions>();
      sub.add_option("-o,--output", opts->output, "Write the page to FILE instead of stdout");
      sub.add_option("--check", opts->check, "Exit 1 if FILE differs from what would be generated");
      sub.get_option("--check")->excludes(sub.get_option("--output"));
      return [opts] {
        auto doc = kzoo::format::render_formats_doc(kzoo::embedded_schemas());
        if (!doc) {
          std::cerr << "kzoo docs: " << doc.error().message << "\n";
          return kzoo::cli::kExitError;
        }
        if (!opts->check.empty()) {
          std::ifstream in(opts->check, std::ios::binary);
          if (!in) {
            std::cerr << "kzoo docs: cannot read " << opts->check
                      << ": generate it with `build/kzoo docs -o " << opts->check << "`\n";
            return kzoo::cli::kExitError;
          }
          std::ostringstream current;
          current << in.rdbuf();
          if (current.str() != *doc) {
            std::cerr << opts->check << " is stale: run `build/kzoo docs -o " << opts->check << "`\n";
            return kzoo::cli::kExitInvalid;
          }
          return kzoo::cli::kExitOk;
        }
        if (opts->output.empty()) {
          std::cout << *doc;
          return kzoo::cli::kExitOk;
        }
        std::ofstream out(opts->output, std::ios::binary | std::ios::trunc);
        out << *doc;
        out.close();
        if (!out) {
          std::cerr << "kzoo docs: cannot write " << opts->output << "\n";
          return kzoo::cli::kExitError;
        }
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
