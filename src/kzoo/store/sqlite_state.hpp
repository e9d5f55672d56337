// The state on SQLite (SQLiteCpp 3.2.1), the embedded default. The database
// file is opened in WAL mode (readers never block the writer), with a busy
// timeout (writers wait for each other instead of failing at once), foreign
// keys on, and synchronous=FULL by default (a committed transition survives
// power loss). Every write is one BEGIN IMMEDIATE transaction: it takes the
// write lock before reading the state it checks, so no other connection can
// change that state between the check and the update (a DEFERRED transaction
// would fail with SQLITE_BUSY_SNAPSHOT instead of waiting). Migrations run at
// open.
//
// One object = one connection = one thread (LIBNOTES): open one per thread on
// the same file; the object itself is not safe to share.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "kzoo/store/sql_conn.hpp"
#include "kzoo/store/sql_state.hpp"
#include "kzoo/store/state_db.hpp"

namespace kzoo::store {

struct SqliteOptions {
  int busy_timeout_ms = 10000;
  bool synchronous_full = true;       // false: synchronous=NORMAL (faster, may lose the last commits on power loss)
  std::function<UnixMs()> clock;      // default: the system clock; tests inject a fake one
};

// Opens (creating if needed) the state database at `path` and migrates it.
// Callers outside the store use open_state (open_state.hpp).
StateResult<std::unique_ptr<StateDb>> open_sqlite_state_db(const std::string& path, SqliteOptions options = {});

// The engine alone, unmigrated (migration tests).
StateResult<std::unique_ptr<sql::Conn>> open_sqlite_conn(const std::string& path, SqliteOptions options = {});

// The schema's migrations in SQLite's dialect, oldest first.
std::span<const sql::Migration> sqlite_migrations();

}  // namespace kzoo::store
