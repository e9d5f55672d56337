#include "kzoo/store/open_state.hpp"

#include <fmt/format.h>

#include "kzoo/store/pg_state.hpp"
#include "kzoo/store/repo_writer.hpp"
#include "kzoo/store/sqlite_state.hpp"

namespace kzoo::store {

namespace {
constexpr std::string_view kSqlite = "sqlite:";
constexpr std::string_view kPostgres[] = {"postgresql://", "postgres://"};

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
}  // namespace

bool is_sqlite_url(const std::string& url, std::string* path) {
  if (!starts_with(url, kSqlite) || url.size() == kSqlite.size()) return false;
  if (path) *path = url.substr(kSqlite.size());
  return true;
}

std::string default_state_url(const std::string& data_dir) { return std::string(kSqlite) + data_dir + "/state.db"; }

bool is_postgres_url(const std::string& url) {
  for (auto p : kPostgres)
    if (starts_with(url, p)) return true;
  return false;
}

Result<void> check_state_url(const std::string& url) {
  if (is_sqlite_url(url) || is_postgres_url(url)) return ok();
  return fail(fmt::format("state \"{}\" is not a state URL: give sqlite:PATH (the embedded default) or "
                          "postgresql://[user@]host[:port]/dbname (several servers)",
                          redact_state_url(url)));
}

std::string redact_state_url(const std::string& url) {
  // scheme://user:password@host -> scheme://user:***@host
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto at = url.find('@', scheme + 3);
  if (at == std::string::npos) return url;
  auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

StateResult<std::unique_ptr<StateDb>> open_state(const std::string& url) {
  if (auto r = check_state_url(url); !r) return tl::unexpected(StateError{StateError::invalid, r.error().message});
  std::string path;
  if (is_sqlite_url(url, &path)) return open_sqlite_state_db(path);
  return open_pg_state_db(url);
}

Result<KernelRepo> open_kernel_repo(const std::string& repo_dir, const std::string& url) {
  KernelRepoOptions o;
  if (is_postgres_url(url)) o.writer = pg_repo_writer(url);
  return KernelRepo::open(repo_dir, std::move(o));
}

}  // namespace kzoo::store
