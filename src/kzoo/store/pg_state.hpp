// The state on PostgreSQL (libpqxx 6.4), for several servers and workers on
// one database. Transactions are READ COMMITTED; every row a transition
// checks is read FOR UPDATE, so the check and the update see the same row;
// claim_job takes the oldest queued job with FOR UPDATE SKIP LOCKED, so
// claimers on any number of hosts never wait for each other nor share a job.
// A transaction that loses a race (deadlock, serialization failure, a key
// another connection inserted first) is run again from the start, up to 8
// times. Leases are measured by the database's clock (clock_timestamp()),
// never a host's, so servers and workers with skewed clocks agree on expiry.
// Migrations run at open under an advisory lock (several first opens apply
// each exactly once).
//
// One object = one connection = one thread, like SQLite's.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "kzoo/store/sql_conn.hpp"
#include "kzoo/store/sql_state.hpp"
#include "kzoo/store/state_db.hpp"

namespace kzoo::store {

struct PgOptions {
  std::function<UnixMs()> clock;  // tests only: replaces the database's clock
};

// Connects to `url` (libpq's connection URL or key=value string) and migrates.
// Callers outside the store use open_state (open_state.hpp).
StateResult<std::unique_ptr<StateDb>> open_pg_state_db(const std::string& url, PgOptions options = {});

// The engine alone, unmigrated (migration tests).
StateResult<std::unique_ptr<sql::Conn>> open_pg_conn(const std::string& url, PgOptions options = {});

// The schema's migrations in PostgreSQL's dialect, oldest first; the same
// numbers and descriptions as sqlite_migrations().
std::span<const sql::Migration> pg_migrations();

}  // namespace kzoo::store
