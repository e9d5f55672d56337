// The service's state (DESIGN §4): one database connection that speaks every
// concern's interface --
//
//   SubmissionStore  submissions and routes            submission_store.hpp
//   JobQueue         jobs, leases and holds            job_queue.hpp
//   AccountStore     users and tokens                  accounts.hpp
//   PullStore        pull requests and comments        pulls.hpp
//   IssueStore       issues and their comments         issues.hpp
//   BoardAudit       boards' status, the audit trail   board_audit.hpp
//   BatchStore       users' own batch jobs (sbatch)   batch.hpp
//
// so that a transition of one concern and the audit row it writes share a
// transaction, and one actor (set_actor) covers them all. Code that needs one
// concern takes that interface; code that needs several takes a StateDb.
//
// open_state (open_state.hpp) is the one constructor: SQLite embedded by
// default, PostgreSQL when several servers share the work. Both run the same
// statements (sql_state.hpp) and pass the same tests.
//
// Threads: an object is one database connection and is NOT thread-safe; give
// each thread (each worker, each server request thread) its own object opened
// on the same database.
#pragma once

#include "kzoo/store/accounts.hpp"
#include "kzoo/store/batch.hpp"
#include "kzoo/store/board_audit.hpp"
#include "kzoo/store/issues.hpp"
#include "kzoo/store/job_queue.hpp"
#include "kzoo/store/pulls.hpp"
#include "kzoo/store/state_records.hpp"
#include "kzoo/store/submission_store.hpp"

namespace kzoo::store {

// Virtual bases: an implementation supplies each concern from its own class
// (sql_state.hpp) and they meet here without forwarding.
class StateDb : public virtual SubmissionStore,
                public virtual JobQueue,
                public virtual AccountStore,
                public virtual PullStore,
                public virtual IssueStore,
                public virtual BoardAudit,
                public virtual BatchStore {
 public:
  ~StateDb() override = default;
  // The schema version the database is at after open.
  virtual int schema_version() = 0;
  // "sqlite:PATH" or the PostgreSQL URL without its password, for messages.
  virtual std::string describe() const = 0;
};

}  // namespace kzoo::store
