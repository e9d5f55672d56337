// `kzoo version`: prints the version and the build's dependency versions.
#include <iostream>

#include <archive.h>
#include <git2.h>
#include <sqlite3.h>

#include "kzoo/cli/command.hpp"

namespace {

const bool registered = kzoo::cli::register_command(
    "version", "Print kzoo's version and the versions of the libraries it was built with",
    [](CLI::App&) -> kzoo::cli::Runner {
      return [] {
        int maj = 0, min = 0, rev = 0;
        git_libgit2_version(&maj, &min, &rev);
        std::cout << "kzoo " << KZOO_VERSION << "\n"
                  << "libarchive " << archive_version_string() << "\n"
                  << "libgit2 " << maj << "." << min << "." << rev << "\n"
                  << "sqlite " << sqlite3_libversion() << "\n";
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
