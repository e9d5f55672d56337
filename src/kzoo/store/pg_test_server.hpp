// For tests: a real PostgreSQL 15 and a fresh database per test. The server
// is the one ctest started for the whole run (the file KZOO_TEST_PG_FILE
// names holds its admin URL: CMakeLists.txt, tests/lib/postgres.sh), else one
// this process starts on first use (initdb + pg_ctl on a unix socket in a
// temporary directory, a few seconds) and stops at exit.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "kzoo/store/test_support.hpp"

namespace kzoo::store::testing {

inline std::string pg_script() { return std::string(KZOO_SOURCE_DIR) + "/tests/lib/postgres.sh"; }

// The URL of ctest's server; empty when there is none.
inline std::string pg_ctest_url() {
  const char* f = std::getenv("KZOO_TEST_PG_FILE");
  if (!f || !*f) return "";
  std::ifstream in(f);
  std::string url;
  std::getline(in, url);
  return url.rfind("postgresql://", 0) == 0 ? url : "";
}

// Why no server can be had here; empty when one can.
inline std::string pg_unavailable() {
  if (!pg_ctest_url().empty()) return "";
  auto why = sh("bash " + quote(pg_script()) + " why");
  if (why.rc != 0) return "cannot run " + pg_script() + ": " + why.out;
  while (!why.out.empty() && why.out.back() == '\n') why.out.pop_back();
  return why.out;
}

namespace detail {
struct OwnServer {
  std::string dir, url;
  ~OwnServer() {
    if (!dir.empty()) (void)sh("bash " + quote(pg_script()) + " stop " + quote(dir + "/pg") + "; rmdir " + quote(dir));
  }
};
}  // namespace detail

// The admin URL (database postgres, user kzoo); empty when the server could not start.
inline std::string pg_admin_url() {
  if (auto u = pg_ctest_url(); !u.empty()) return u;
  static detail::OwnServer own;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kzoo-pg-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return;
    std::filesystem::permissions(tmpl, std::filesystem::perms(0711));  // the postgres user passes through
    own.dir = tmpl;
    auto r = sh("bash " + quote(pg_script()) + " start " + quote(tmpl + "/pg") + " 2>/dev/null");
    if (r.rc == 0 && r.out.rfind("postgresql://", 0) == 0) own.url = r.out.substr(0, r.out.find('\n'));
    else std::fprintf(stderr, "starting PostgreSQL failed:\n%s\n", r.out.c_str());
  });
  return own.url;
}

// The URL of a new, empty database on the server; empty on failure.
inline std::string pg_fresh_database() {
  static std::atomic<int> n{0};
  const std::string admin = pg_admin_url();
  if (admin.empty()) return "";
  const std::string name = fmt::format("kzoo_t{}_{}", ::getpid(), n++);
  try {
    pqxx::connection c(admin);
    pqxx::nontransaction t(c);
    t.exec("DROP DATABASE IF EXISTS " + name);
    t.exec("CREATE DATABASE " + name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "creating database %s failed: %s\n", name.c_str(), e.what());
    return "";
  }
  std::string url = admin;
  url.replace(url.find("/postgres?"), 10, "/" + name + "?");
  return url;
}

}  // namespace kzoo::store::testing
