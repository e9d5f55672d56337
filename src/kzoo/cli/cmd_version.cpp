// `kzoo version`: prints the version and the build's dependency versions.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include <archive.h>
#include <git2.h>
#include <sqlite3.h>

#include "kzoo/cli/command.hpp"

namespace cmd_version {  // per command: a unity build joins commands (CMakeLists.txt)

const bool registered = kzoo::cli::register_command(
    "version", "Print kzoo's version and the versions of the libraries it was built with",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto as_json = std::make_shared<bool>(false);
      sub.add_flag("--json", *as_json, "Print one JSON document on stdout");
      return [as_json] {
        int maj = 0, min = 0, rev = 0;
        git_libgit2_version(&maj, &min, &rev);
        const std::string git = std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rev);
        if (*as_json) {
          std::cout << nlohmann::json{{"kzoo", KZOO_VERSION}, {"libarchive", archive_version_string()},
                                      {"libgit2", git}, {"sqlite", sqlite3_libversion()}}
                           .dump(2)
                    << "\n";
          return kzoo::cli::kExitOk;
        }
        std::cout << "kzoo " << KZOO_VERSION << "\n"
                  << "libarchive " << archive_version_string() << "\n"
                  << "libgit2 " << git << "\n"
                  << "sqlite " << sqlite3_libversion() << "\n";
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
