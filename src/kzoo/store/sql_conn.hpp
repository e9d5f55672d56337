// The seam between the state's logic, written once (sql_state.hpp), and a
// database engine (sqlite_state.hpp, pg_state.hpp). An engine runs statements
// and transactions; it decides nothing about submissions or jobs.
//
// Statements are written once for both engines: parameters are $1, $2, ...
// (an engine that numbers them otherwise rewrites them); a parameter that
// may be NULL is compared as CAST($n AS TEXT) IS NULL (PostgreSQL cannot type
// a bare `$n IS NULL`); types are INTEGER / BIGINT, TEXT and BLOB / bytea,
// and what differs is asked of the engine:
// lock_rows() and skip_locked() are empty on SQLite, whose write
// transactions hold the whole database, and FOR UPDATE [SKIP LOCKED] on
// PostgreSQL, whose READ COMMITTED transactions lock the rows they read.
//
// Errors: a database failure is thrown as EngineFailure (the state's logic
// turns it into a StateError value at its interface); anything else thrown
// inside write() rolls the transaction back and passes through.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store::sql {

struct Blob {
  std::string bytes;
};
using Value = std::variant<std::nullptr_t, std::int64_t, std::string, Blob>;
using Params = std::vector<Value>;

// One result row; readers throw EngineFailure (io) on a cell of another type,
// which only a schema that is not this kzoo's can produce.
struct Row {
  std::vector<Value> cells;
  bool null(std::size_t i) const;
  std::int64_t i64(std::size_t i) const;
  std::optional<std::int64_t> opt(std::size_t i) const;  // null: nullopt
  std::string text(std::size_t i) const;                 // null: ""
  std::string blob(std::size_t i) const;
};
using Rows = std::vector<Row>;

struct EngineFailure {
  enum Kind {
    busy,   // locked past the timeout, or the connection dropped: the caller may retry
    retry,  // the transaction lost a race (deadlock, serialization): write() runs it again
    io,     // anything else
  };
  Kind kind;
  // What went wrong, without naming the database (the caller does): for busy
  // a phrase that reads after the database's name ("stayed locked ...").
  std::string message;
};

class Conn {
 public:
  virtual ~Conn() = default;
  virtual Rows query(const std::string& sql, const Params& params = {}) = 0;
  // Rows changed.
  virtual std::int64_t exec(const std::string& sql, const Params& params = {}) = 0;
  // Several statements without parameters (a migration).
  virtual void script(const std::string& sql) = 0;
  // `body` inside one write transaction, committed when it returns. An engine
  // may run `body` again from the start when the transaction lost a race to
  // another connection, so `body` only reads and writes through this Conn.
  virtual void write(const std::function<void()>& body) = 0;
  // Inside write(): waits until no other connection is migrating.
  virtual void lock_migrations() = 0;
  // Milliseconds since the epoch by the database's clock (or the test clock
  // the engine was opened with).
  virtual UnixMs now() = 0;
  // now() without asking the database: this host's clock corrected by the
  // difference last seen between the two.
  virtual UnixMs estimated_now() const = 0;
  virtual const char* lock_rows() const = 0;    // appended to a SELECT whose rows a transition changes
  virtual const char* skip_locked() const = 0;  // appended to the SELECT that picks a job to claim
  // The database, for messages (a path, or a URL without its password).
  virtual std::string describe() const = 0;
};

}  // namespace kzoo::store::sql
