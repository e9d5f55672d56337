// Boards' status and the audit trail. The audit trail is append-only (the
// database refuses UPDATE and DELETE on it) and written inside the
// transaction of the change it records, so a refused transition leaves no
// row and a committed one always has its row.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/accounts.hpp"
#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

class BoardAudit {
 public:
  virtual ~BoardAudit() = default;

  // Every transition on this connection, of any interface, is written to the
  // audit trail as done by `actor` (default {"system", ""}) until the next
  // set_actor. Server request threads set it per request; a pooled
  // connection is reset to the default.
  virtual void set_actor(const Actor& actor) = 0;
  // An audit row for a change made outside this database (a commit to the
  // repository, a moved tag), as done by the current actor.
  virtual StateResult<bool> append_audit(const std::string& action, const std::string& target,
                                         const nlohmann::json& detail) = 0;
  // Newest first.
  virtual StateResult<std::vector<AuditEntry>> audit_log(const AuditFilter& f) = 0;

  // A board's status as a maintainer set it (active, saturated, superseded,
  // flawed), over what its rules file says; by the current actor, audited.
  virtual StateResult<BoardStatus> set_board_status(int version, const std::string& status) = 0;
  // nullopt: never set (the rules file's stands).
  virtual StateResult<std::optional<BoardStatus>> board_status(int version) = 0;
};

}  // namespace kzoo::store
