# Every third-party dependency of libkzoo, from Debian 12 packages, gathered
# into one interface target kzoo::deps. Some Debian packages ship CMake
# configs, others only pkg-config files; this file hides the difference.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(valijson REQUIRED)           # defines VALIJSON_USE_EXCEPTIONS (LIBNOTES)
find_package(yaml-cpp REQUIRED)           # target yaml-cpp, no namespace
find_package(LibArchive REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(SQLiteCpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(tl-expected REQUIRED)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)
# cpp-httplib is a compiled library in Debian; its Cflags change class layout,
# so they must reach every translation unit (LIBNOTES).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# The sandbox's seccomp filter (runner/seccomp.cpp); OpenSSL for the judge
# signature's HMAC-SHA256 (runner/grade.cpp) and SHA-256 of uploads (server/).
pkg_check_modules(LIBSECCOMP REQUIRED IMPORTED_TARGET libseccomp)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# Bearer tokens (access/): random bytes, BLAKE2b hashes, constant-time comparison.
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
# The board's pages (server/pages.cpp): cmark for AGENTS.md; kainjow-mustache
# is header-only (<kainjow/mustache.hpp>, LIBNOTES).
pkg_check_modules(LIBCMARK REQUIRED IMPORTED_TARGET libcmark)
# The state on PostgreSQL (store/pg_*.cpp): libpqxx 6.4 over libpq (LIBNOTES).
pkg_check_modules(LIBPQXX REQUIRED IMPORTED_TARGET libpqxx)
if(KZOO_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KZOO_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

add_library(kzoo_deps INTERFACE)
add_library(kzoo::deps ALIAS kzoo_deps)
target_link_libraries(kzoo_deps INTERFACE
  nlohmann_json::nlohmann_json valijson yaml-cpp LibArchive::LibArchive
  SQLiteCpp SQLite::SQLite3 CLI11::CLI11 fmt::fmt spdlog::spdlog
  tl::expected PkgConfig::LIBGIT2 PkgConfig::HTTPLIB PkgConfig::LIBSECCOMP OpenSSL::Crypto PkgConfig::SODIUM
  PkgConfig::LIBCMARK PkgConfig::LIBPQXX
  Threads::Threads)
