// A StateDb assembled from the concerns of the SQL state (sql_state.hpp), and
// the migrations that bring a database to this kzoo's schema.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

namespace {

// Constructed before the concerns that borrow it (bases are built in order).
struct CoreHolder {
  explicit CoreHolder(std::unique_ptr<Conn> conn) : core(std::move(conn)) {}
  Core core;
};

class SqlStateDb final : public StateDb,
                         private CoreHolder,
                         public SqlSubmissions,
                         public SqlJobQueue,
                         public SqlAccounts,
                         public SqlPulls,
                         public SqlIssues,
                         public SqlBoardAudit,
                         public SqlBatches {
 public:
  explicit SqlStateDb(std::unique_ptr<Conn> conn)
      : CoreHolder(std::move(conn)),
        SqlSubmissions(core),
        SqlJobQueue(core),
        SqlAccounts(core),
        SqlPulls(core),
        SqlIssues(core),
        SqlBoardAudit(core),
        SqlBatches(core) {}
  int schema_version() override { return core.version; }
  std::string describe() const override { return const_cast<Core&>(core).db().describe(); }
  Core& state() { return core; }
};

int current_version(Conn& c) {
  return static_cast<int>(c.query("SELECT COALESCE(MAX(version), 0) FROM schema_version").at(0).i64(0));
}

}  // namespace

StateResult<int> migrate(Conn& conn, std::span<const Migration> migrations) {
  const Migration* current = nullptr;
  const int newest = migrations.empty() ? 0 : migrations.back().version;
  // Every connection opens through here: an up-to-date database costs one
  // read, not a transaction per migration.
  try {
    if (current_version(conn) == newest) return newest;
  } catch (const EngineFailure&) {
    // No schema_version yet (a new database), or it cannot be read: the full path below says which.
  }
  try {
    conn.write([&] {
      conn.lock_migrations();
      conn.script("CREATE TABLE IF NOT EXISTS schema_version ("
                  " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)");
    });
    int at = current_version(conn);
    if (at > newest)
      return tl::unexpected(StateError{
          StateError::io, fmt::format("state database {} is at schema version {}, newer than the newest this kzoo "
                                      "knows ({}): it was written by a newer kzoo; upgrade kzoo",
                                      conn.describe(), at, newest)});
    int previous = 0;
    for (const Migration& m : migrations) {
      if (m.version <= previous)
        return tl::unexpected(StateError{
            StateError::io, fmt::format("migration list out of order at version {} (a kzoo bug)", m.version)});
      previous = m.version;
      current = &m;
      conn.write([&] {
        conn.lock_migrations();
        if (current_version(conn) >= m.version) return;  // another process applied it first
        conn.script(std::string(m.sql));
        conn.exec("INSERT INTO schema_version(version, description, applied_at) VALUES ($1, $2, $3)",
                  {std::int64_t{m.version}, std::string(m.description), conn.now()});
      });
    }
    return current_version(conn);
  } catch (const EngineFailure& e) {
    std::string which = current ? fmt::format("migration {} ({})", current->version, current->description)
                                : std::string("creating schema_version");
    return tl::unexpected(StateError{e.kind == EngineFailure::io ? StateError::io : StateError::busy,
                                     fmt::format("state database {}: {} failed and was rolled back: {}",
                                                 conn.describe(), which, e.message)});
  }
}

StateResult<std::unique_ptr<StateDb>> open_sql_state(std::unique_ptr<Conn> conn, std::span<const Migration> migrations) {
  auto db = std::make_unique<SqlStateDb>(std::move(conn));
  auto v = migrate(db->state().db(), migrations);
  if (!v) return tl::unexpected(v.error());
  db->state().version = *v;
  return std::unique_ptr<StateDb>(std::move(db));
}

}  // namespace kzoo::store::sql
