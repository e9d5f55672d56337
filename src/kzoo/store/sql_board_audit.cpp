// Boards' status and the audit trail (board_audit.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

void SqlBoardAudit::set_actor(const Actor& a) { c_.actor = a; }

StateResult<bool> SqlBoardAudit::append_audit(const std::string& action, const std::string& target,
                                              const nlohmann::json& detail) {
  return c_.guarded([&] {
    if (action.empty() || action.size() > 64) refuse(StateError::invalid, "an audit action is 1-64 bytes");
    return c_.write([&] {
      c_.audit(c_.db().now(), action, target, detail);
      return true;
    });
  });
}

StateResult<std::vector<AuditEntry>> SqlBoardAudit::audit_log(const AuditFilter& f) {
  return c_.guarded([&] {
    if (f.limit < 1 || f.limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    std::vector<AuditEntry> out;
    for (const auto& r : c_.db().query("SELECT id, at, who, token_id, action, target, detail, address FROM audit WHERE id < $1 "
                                       "AND (CAST($2 AS TEXT) IS NULL OR who = $2) ORDER BY id DESC LIMIT $3",
                                       {std::int64_t{f.before_id}, f.who ? Value(*f.who) : Value(nullptr),
                                        std::int64_t{f.limit}}))
      out.push_back({r.i64(0), r.i64(1), r.text(2), r.text(3), r.text(4), r.text(5), nlohmann::json::parse(r.text(6)),
                     r.text(7)});
    return out;
  });
}

StateResult<BoardStatus> SqlBoardAudit::set_board_status(int version, const std::string& status) {
  return c_.guarded([&] {
    if (version < 1) refuse(StateError::invalid, "a board version is 1 or more");
    if (status != "active" && status != "saturated" && status != "superseded" && status != "flawed")
      refuse(StateError::invalid, fmt::format("status \"{}\" is not active, saturated, superseded or flawed (quiet is "
                                              "computed, never set)",
                                              status));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      c_.db().exec("INSERT INTO board_status(version, status, set_by, set_at) VALUES ($1,$2,$3,$4) "
                   "ON CONFLICT(version) DO UPDATE SET status=excluded.status, set_by=excluded.set_by, "
                   "set_at=excluded.set_at",
                   {std::int64_t{version}, status, c_.actor.who, now});
      c_.audit(now, "board.status", fmt::format("board/v{}", version), {{"status", status}});
      return BoardStatus{version, status, c_.actor.who, now};
    });
  });
}

StateResult<std::optional<BoardStatus>> SqlBoardAudit::board_status(int version) {
  return c_.guarded([&]() -> std::optional<BoardStatus> {
    auto rows = c_.db().query("SELECT version, status, set_by, set_at FROM board_status WHERE version=$1",
                              {std::int64_t{version}});
    if (rows.empty()) return std::nullopt;
    return BoardStatus{static_cast<int>(rows[0].i64(0)), rows[0].text(1), rows[0].text(2), rows[0].i64(3)};
  });
}

}  // namespace kzoo::store::sql
