#include "kzoo/store/sql_conn.hpp"

#include <fmt/format.h>

namespace kzoo::store::sql {

namespace {
[[noreturn]] void wrong_type(std::size_t i, const char* want) {
  throw EngineFailure{EngineFailure::io, fmt::format("column {} of a result is not {}: the schema is not this kzoo's", i, want)};
}
}  // namespace

bool Row::null(std::size_t i) const { return std::holds_alternative<std::nullptr_t>(cells.at(i)); }

std::int64_t Row::i64(std::size_t i) const {
  if (auto* v = std::get_if<std::int64_t>(&cells.at(i))) return *v;
  wrong_type(i, "an integer");
}

std::optional<std::int64_t> Row::opt(std::size_t i) const {
  if (null(i)) return std::nullopt;
  return i64(i);
}

std::string Row::text(std::size_t i) const {
  if (null(i)) return "";
  if (auto* v = std::get_if<std::string>(&cells.at(i))) return *v;
  wrong_type(i, "text");
}

std::string Row::blob(std::size_t i) const {
  if (auto* v = std::get_if<Blob>(&cells.at(i))) return v->bytes;
  wrong_type(i, "bytes");
}

}  // namespace kzoo::store::sql
