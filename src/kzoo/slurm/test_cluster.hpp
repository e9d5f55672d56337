// For tests: a real single-node Slurm cluster (tests/lib/slurm.sh), started
// on first use in a temporary directory and stopped at exit; SLURM_CONF
// points the client commands at it.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "kzoo/store/test_support.hpp"

namespace kzoo::slurm::testing {

inline std::string slurm_script() { return std::string(KZOO_SOURCE_DIR) + "/tests/lib/slurm.sh"; }

// Why no cluster can run here; empty when one can.
inline std::string cluster_unavailable() {
  auto why = store::testing::sh("bash " + store::testing::quote(slurm_script()) + " why");
  while (!why.out.empty() && why.out.back() == '\n') why.out.pop_back();
  return why.rc == 0 ? why.out : "cannot run " + slurm_script();
}

namespace detail {
struct OwnCluster {
  std::string dir;
  bool up = false;
  ~OwnCluster() {
    if (!dir.empty()) (void)store::testing::sh("bash " + store::testing::quote(slurm_script()) + " stop " + store::testing::quote(dir));
  }
};
}  // namespace detail

// The cluster's directory (its slurm.conf, logs); empty when it did not start.
inline std::string cluster_dir() {
  static detail::OwnCluster own;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kzoo-slurm-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return;
    own.dir = tmpl + "/c";
    auto r = store::testing::sh("bash " + store::testing::quote(slurm_script()) + " start " + store::testing::quote(own.dir));
    own.up = r.rc == 0;
    if (own.up) ::setenv("SLURM_CONF", (own.dir + "/slurm.conf").c_str(), 1);
    else std::fprintf(stderr, "starting the Slurm cluster failed:\n%s\n", r.out.c_str());
  });
  return own.up ? own.dir : "";
}

}  // namespace kzoo::slurm::testing
