// `kzoo prepare`: makes this machine's runner ready before its first grade: the judge
// interpreter's modules compiled into kzoo's bytecode cache (runner/bytecode_cache.hpp).
// A grade does it itself when the cache is cold; a runner image runs this once when it is
// provisioned, so that no job pays it.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/runner/bytecode_cache.hpp"
#include "kzoo/runner/grade.hpp"

namespace cmd_prepare {  // per command: a unity build joins commands (CMakeLists.txt)

namespace fs = std::filesystem;

struct Args {
  std::string python = kzoo::cli::env_or("KZOO_PYTHON", "/usr/bin/python3");
  std::string judge_dir = kzoo::cli::env_or("KZOO_JUDGE_DIR", std::string(KZOO_SOURCE_DIR) + "/judge");
  std::string cache = kzoo::runner::default_bytecode_cache();
  bool json = false;
  bool refresh = false;
};

const bool registered = kzoo::cli::register_command(
    "prepare",
    "Prepare this machine to grade: compile the judge interpreter's Python modules (torch's among them) into "
    "kzoo's bytecode cache, which every sandbox then reads; a grade does it at its first run, a runner image once",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto a = std::make_shared<Args>();
      sub.add_option("--python", a->python, "the judge's interpreter (default $KZOO_PYTHON or /usr/bin/python3)");
      sub.add_option("--judge-dir", a->judge_dir, "directory holding kzoo_judge/ (default $KZOO_JUDGE_DIR or the source tree's)");
      sub.add_flag("--json", a->json, "print one JSON document on stdout: {bytecode_cache, python, warmed} or {status: error, reason}");
      sub.add_flag("--refresh", a->refresh, "warm the cache again even where its stamp holds: after upgrading Python "
                   "packages other than torch, numpy and triton, whose changes the stamp does not watch (without it "
                   "their modules are compiled at each start, never used stale)");
      sub.add_option("--bytecode-cache", a->cache, "the cache (default $KZOO_BYTECODE_CACHE; else, run as "
                     "root, /var/cache/kzoo/bytecode; else $XDG_CACHE_HOME/kzoo/bytecode or ~/.cache/kzoo/bytecode; "
                     "grades use the same default)");
      return [a] {
        auto error = [&](const std::string& why) {
          std::cerr << "kzoo prepare: " << why << "\n";
          if (a->json) kzoo::cli::print_json(std::cout, nlohmann::json{{"status", "error"}, {"reason", why}});
          return kzoo::cli::kExitError;
        };
        if (a->cache.empty() || a->cache == "off")
          return error("no bytecode cache to fill (KZOO_BYTECODE_CACHE is off, or no HOME): grades compile what they "
                       "import at every start");
        // The request a sandboxed grade makes with these options: the stamp it checks.
        kzoo::runner::GradeOptions g;
        std::error_code ec;
        g.bytecode_cache = fs::absolute(a->cache, ec).lexically_normal().string();
        g.python = a->python;
        g.judge_dir = a->judge_dir;
        kzoo::runner::BytecodeCacheRequest r = kzoo::runner::bytecode_request(g);
        bool warmed = false;
        r.say = [&](std::string_view line) {
          warmed = true;
          std::cerr << "kzoo prepare: " << line << "\n";
        };
        if (a->refresh) fs::remove(kzoo::runner::bytecode_stamp_path(r), ec);
        auto got = kzoo::runner::ensure_bytecode_cache(r);
        if (!got) return error("cannot fill the bytecode cache " + r.dir + ": " + got.error().message);
        if (!warmed) std::cerr << "kzoo prepare: the bytecode cache " << r.dir << " is current for " << r.python << "\n";
        if (a->json)
          kzoo::cli::print_json(std::cout, nlohmann::json{{"bytecode_cache", *got}, {"python", r.python}, {"warmed", warmed}});
        else
          std::cout << *got << "\n";
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace cmd_prepare
