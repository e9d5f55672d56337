// The PostgreSQL engine under the SQL state (pg_state.hpp).
#include <chrono>
#include <random>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "kzoo/store/open_state.hpp"
#include "kzoo/store/pg_state.hpp"
#include "kzoo/store/sqlite_state.hpp"

namespace kzoo::store {

namespace {

using sql::EngineFailure;

constexpr int kAttempts = 8;
// pg_advisory_xact_lock key of schema migrations ("kzoo" in ASCII).
constexpr std::int64_t kMigrationLock = 0x6b7a6f6f;

// PostgreSQL type OIDs of the columns the state reads as integers and bytes.
constexpr pqxx::oid kInt8 = 20, kInt2 = 21, kInt4 = 23, kBytea = 17;

std::string hex_of(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out = "\\x";
  for (unsigned char c : bytes) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// bytea's text output: \x followed by hex digits.
std::string bytes_of(std::string_view text) {
  auto nib = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (std::size_t i = 2; i + 1 < text.size(); i += 2) out += static_cast<char>(nib(text[i]) << 4 | nib(text[i + 1]));
  return out;
}

// Runs `f`, translating libpqxx's exceptions into the engine's failures.
template <class F>
auto translated(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const pqxx::deadlock_detected& e) {
    throw EngineFailure{EngineFailure::retry, e.what()};
  } catch (const pqxx::serialization_failure& e) {
    throw EngineFailure{EngineFailure::retry, e.what()};
  } catch (const pqxx::unique_violation& e) {
    throw EngineFailure{EngineFailure::retry, e.what()};
  } catch (const pqxx::broken_connection& e) {
    throw EngineFailure{EngineFailure::busy, fmt::format("cannot be reached ({})", e.what())};
  } catch (const pqxx::in_doubt_error& e) {
    throw EngineFailure{EngineFailure::io, fmt::format("lost the connection while committing; the last change may "
                                                       "or may not have been made ({})",
                                                       e.what())};
  } catch (const pqxx::failure& e) {
    throw EngineFailure{EngineFailure::io, e.what()};
  }
}

class PgConn final : public sql::Conn {
 public:
  PgConn(const std::string& url, PgOptions o) : url_(url), conn_(url), clock_(std::move(o.clock)) {}

  sql::Rows query(const std::string& text, const sql::Params& params) override {
    return translated([&] {
      pqxx::result r = run(text, params);
      sql::Rows rows;
      rows.reserve(r.size());
      for (const auto& row : r) {
        sql::Row out;
        out.cells.reserve(row.size());
        for (const auto& f : row) {
          if (f.is_null()) {
            out.cells.emplace_back(nullptr);
            continue;
          }
          const auto t = f.type();
          if (t == kInt8 || t == kInt4 || t == kInt2) out.cells.emplace_back(f.as<std::int64_t>());
          else if (t == kBytea) out.cells.emplace_back(sql::Blob{bytes_of(f.c_str())});
          else out.cells.emplace_back(std::string(f.c_str(), f.size()));
        }
        rows.push_back(std::move(out));
      }
      return rows;
    });
  }

  std::int64_t exec(const std::string& text, const sql::Params& params) override {
    return translated([&] { return static_cast<std::int64_t>(run(text, params).affected_rows()); });
  }

  void script(const std::string& text) override {
    translated([&] {
      if (tx_) {
        tx_->exec(text);
      } else {
        pqxx::nontransaction n(conn_);
        n.exec(text);
      }
      return 0;
    });
  }

  void write(const std::function<void()>& body) override {
    std::minstd_rand jitter(std::random_device{}());
    for (int attempt = 1;; ++attempt) {
      try {
        translated([&] {
          pqxx::work w(conn_);
          tx_ = &w;
          struct Clear {
            pqxx::work** p;
            ~Clear() { *p = nullptr; }
          } clear{&tx_};
          body();
          w.commit();
          return 0;
        });
        return;
      } catch (const EngineFailure& e) {
        if (e.kind != EngineFailure::retry) throw;
        if (attempt == kAttempts)
          throw EngineFailure{EngineFailure::busy,
                              fmt::format("kept losing races to other connections ({} attempts; last: {})", kAttempts, e.message)};
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % (5 * attempt)));
      }
    }
  }

  void lock_migrations() override { query("SELECT pg_advisory_xact_lock($1)", {kMigrationLock}); }

  UnixMs now() override {
    if (clock_) return clock_();
    const UnixMs before = system_now_ms();
    UnixMs t = query("SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)", {}).at(0).i64(0);
    offset_ms_ = t - before;
    return t;
  }
  UnixMs estimated_now() const override { return clock_ ? clock_() : system_now_ms() + offset_ms_; }
  const char* lock_rows() const override { return " FOR UPDATE"; }
  const char* skip_locked() const override { return " FOR UPDATE SKIP LOCKED"; }
  std::string describe() const override { return redact_state_url(url_); }

 private:
  // Each text is prepared once per connection (libpqxx re-prepares after a reconnect).
  pqxx::result run(const std::string& text, const sql::Params& params) {
    auto it = names_.find(text);
    if (it == names_.end()) {
      it = names_.emplace(text, "kzoo_" + std::to_string(names_.size())).first;
      conn_.prepare(it->second, text);
    }
    std::vector<std::string> held;
    held.reserve(params.size());
    std::vector<const char*> values;
    for (const auto& p : params) {
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::nullptr_t>) {
              values.push_back(nullptr);
              return;
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
              held.push_back(std::to_string(v));
            } else if constexpr (std::is_same_v<T, std::string>) {
              held.push_back(v);
            } else {
              held.push_back(hex_of(v.bytes));
            }
            values.push_back(held.back().c_str());
          },
          p);
    }
    auto dyn = pqxx::prepare::make_dynamic_params(values);
    if (tx_) return tx_->exec_prepared(it->second, dyn);
    pqxx::nontransaction n(conn_);
    return n.exec_prepared(it->second, dyn);
  }

  std::string url_;
  pqxx::connection conn_;
  std::function<UnixMs()> clock_;
  pqxx::work* tx_ = nullptr;
  std::unordered_map<std::string, std::string> names_;
  UnixMs offset_ms_ = 0;
};

}  // namespace

StateResult<std::unique_ptr<sql::Conn>> open_pg_conn(const std::string& url, PgOptions options) {
  try {
    return std::unique_ptr<sql::Conn>(std::make_unique<PgConn>(url, std::move(options)));
  } catch (const pqxx::broken_connection& e) {
    return tl::unexpected(StateError{StateError::busy, fmt::format("cannot connect to state database {}: {}",
                                                                   redact_state_url(url), e.what())});
  } catch (const std::exception& e) {
    return tl::unexpected(StateError{StateError::io, fmt::format("cannot open state database {}: {}",
                                                                 redact_state_url(url), e.what())});
  }
}

StateResult<std::unique_ptr<StateDb>> open_pg_state_db(const std::string& url, PgOptions options) {
  auto conn = open_pg_conn(url, std::move(options));
  if (!conn) return tl::unexpected(conn.error());
  return sql::open_sql_state(std::move(*conn), pg_migrations());
}

}  // namespace kzoo::store
