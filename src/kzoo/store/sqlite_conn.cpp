// The SQLite engine under the SQL state (sqlite_state.hpp).
#include <chrono>
#include <thread>
#include <unordered_map>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include "kzoo/store/sqlite_state.hpp"

namespace kzoo::store {

namespace {

using sql::EngineFailure;

// $1 -> ?1: SQLite's numbered parameters. The state's statements hold no '$'
// inside string literals.
std::string numbered(const std::string& sql) {
  std::string out = sql;
  for (char& c : out)
    if (c == '$') c = '?';
  return out;
}

EngineFailure failure_of(const SQLite::Exception& e) {
  int code = e.getErrorCode() & 0xff;  // primary code of an extended one
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    return {EngineFailure::busy, fmt::format("stayed locked for the busy timeout ({})", e.what())};
  return {EngineFailure::io, e.what()};
}

class SqliteConn final : public sql::Conn {
 public:
  SqliteConn(const std::string& path, SqliteOptions o)
      : db_(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX, o.busy_timeout_ms),
        clock_(o.clock ? std::move(o.clock) : std::function<UnixMs()>(system_now_ms)) {
    // journal_mode is persistent in the file; "memory" for in-memory databases.
    std::string mode = journal_mode_wal(o.busy_timeout_ms);
    if (mode != "wal" && mode != "memory")
      throw EngineFailure{EngineFailure::io, fmt::format("refused WAL mode (got \"{}\"); put it on a local filesystem", mode)};
    db_.exec(o.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    db_.exec("PRAGMA foreign_keys=ON");
  }

  sql::Rows query(const std::string& text, const sql::Params& params) override {
    return run(text, params, [](SQLite::Statement& q) {
      sql::Rows rows;
      while (q.executeStep()) {
        sql::Row r;
        for (int i = 0; i < q.getColumnCount(); ++i) {
          const auto c = q.getColumn(i);
          switch (c.getType()) {
            case SQLITE_NULL: r.cells.emplace_back(nullptr); break;
            case SQLITE_INTEGER: r.cells.emplace_back(c.getInt64()); break;
            case SQLITE_BLOB:
              r.cells.emplace_back(sql::Blob{std::string(static_cast<const char*>(c.getBlob()), c.getBytes())});
              break;
            default: r.cells.emplace_back(c.getString()); break;
          }
        }
        rows.push_back(std::move(r));
      }
      return rows;
    });
  }

  std::int64_t exec(const std::string& text, const sql::Params& params) override {
    return run(text, params, [](SQLite::Statement& q) { return static_cast<std::int64_t>(q.exec()); });
  }

  void script(const std::string& text) override {
    try {
      db_.exec(text);
    } catch (const SQLite::Exception& e) {
      throw failure_of(e);
    }
  }

  void write(const std::function<void()>& body) override {
    try {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      body();
      tx.commit();
    } catch (const SQLite::Exception& e) {
      reset_all();
      throw failure_of(e);
    } catch (...) {
      reset_all();
      throw;
    }
  }

  void lock_migrations() override {}  // BEGIN IMMEDIATE already excludes every other writer
  UnixMs now() override { return clock_(); }
  UnixMs estimated_now() const override { return clock_(); }
  const char* lock_rows() const override { return ""; }
  const char* skip_locked() const override { return ""; }
  std::string describe() const override { return db_.getFilename(); }

 private:
  // Switching a new file to WAL needs it alone: a second process opening the
  // same new file at that moment gets SQLITE_BUSY at once, without the busy
  // handler (seen: 1 in 5 of four concurrent first opens). Retried within
  // the busy timeout.
  std::string journal_mode_wal(int busy_timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
    for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
      try {
        SQLite::Statement wal(db_, "PRAGMA journal_mode=WAL");
        wal.executeStep();
        return wal.getColumn(0).getString();
      } catch (const SQLite::Exception& e) {
        if ((e.getErrorCode() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
      }
      std::this_thread::sleep_for(pause);
    }
  }

  // A prepared statement per text, kept per connection; each use starts clean.
  template <class F>
  auto run(const std::string& text, const sql::Params& params, F&& step) -> decltype(step(std::declval<SQLite::Statement&>())) {
    try {
      auto it = cache_.find(text);
      if (it == cache_.end()) it = cache_.emplace(text, std::make_unique<SQLite::Statement>(db_, numbered(text))).first;
      auto& p = it->second;
      p->tryReset();
      p->clearBindings();
      for (std::size_t i = 0; i < params.size(); ++i) {
        const int at = static_cast<int>(i + 1);
        std::visit(
            [&](const auto& v) {
              using T = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<T, std::nullptr_t>) p->bind(at);
              else if constexpr (std::is_same_v<T, std::int64_t>) p->bind(at, static_cast<int64_t>(v));
              else if constexpr (std::is_same_v<T, std::string>) p->bind(at, v);
              else p->bind(at, v.bytes.data(), static_cast<int>(v.bytes.size()));
            },
            params[i]);
      }
      auto out = step(*p);
      p->tryReset();
      return out;
    } catch (const SQLite::Exception& e) {
      reset_all();
      throw failure_of(e);
    }
  }

  void reset_all() {
    for (auto& [text, s] : cache_) s->tryReset();
  }

  SQLite::Database db_;
  std::function<UnixMs()> clock_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> cache_;
};

}  // namespace

StateResult<std::unique_ptr<sql::Conn>> open_sqlite_conn(const std::string& path, SqliteOptions options) {
  try {
    return std::unique_ptr<sql::Conn>(std::make_unique<SqliteConn>(path, std::move(options)));
  } catch (const EngineFailure& e) {
    return tl::unexpected(StateError{StateError::io, fmt::format("state database {} {}", path, e.message)});
  } catch (const SQLite::Exception& e) {
    return tl::unexpected(StateError{(e.getErrorCode() & 0xff) == SQLITE_BUSY ? StateError::busy : StateError::io,
                                     fmt::format("cannot open state database {}: {}", path, e.what())});
  }
}

StateResult<std::unique_ptr<StateDb>> open_sqlite_state_db(const std::string& path, SqliteOptions options) {
  auto conn = open_sqlite_conn(path, std::move(options));
  if (!conn) return tl::unexpected(conn.error());
  return sql::open_sql_state(std::move(*conn), sqlite_migrations());
}

}  // namespace kzoo::store
