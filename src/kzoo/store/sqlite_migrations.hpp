// Schema migrations of the SQLite state database. The `schema_version` table
// records each applied migration (version, description, applied_at). At open,
// every migration above the recorded version runs in its own IMMEDIATE
// transaction, which re-reads the version first, so two processes opening a
// fresh database at once apply each migration exactly once. A database whose
// version is above the newest migration known here was written by a newer
// kzoo and is refused rather than guessed at.
//
// Append a migration to change the schema; never edit a released one.
#pragma once

#include <span>
#include <string_view>

#include <SQLiteCpp/Database.h>

#include "kzoo/store/state_db.hpp"

namespace kzoo::store {

struct Migration {
  int version;                   // 1, 2, 3... strictly increasing
  std::string_view description;  // one line, stored in schema_version
  std::string_view sql;          // one or more statements
};

// The state database's migrations, oldest first.
std::span<const Migration> sqlite_migrations();

// Applies `migrations` to `db` and returns the resulting schema version.
// `now` stamps applied_at. Errors are StateError::io, naming the migration.
StateResult<int> migrate(SQLite::Database& db, std::span<const Migration> migrations, UnixMs now);

}  // namespace kzoo::store
