// The one constructor of the service's state (state_db.hpp), chosen by the
// configuration's state URL:
//
//   sqlite:PATH              SQLite, embedded (the default: sqlite:DATA/state.db)
//   postgresql://...         PostgreSQL (libpq's URL; postgres:// too), when
//                            several servers share the work
//
// Every server thread, worker and CLI verb opens its connections here, so a
// deployment changes engines in its configuration, not in code.
#pragma once

#include <memory>
#include <string>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::store {

// Opens (creating a SQLite file if needed) and migrates the state at `url`.
StateResult<std::unique_ptr<StateDb>> open_state(const std::string& url);

// The kernel_data repository at `repo_dir`, as the deployment whose state is
// at `url` writes it: with PostgreSQL, several hosts share it and take turns
// under the state's advisory lock (repo_writer.hpp); with SQLite, one host and
// the refs' compare-and-swap.
Result<KernelRepo> open_kernel_repo(const std::string& repo_dir, const std::string& url);

// The state of a data directory that configures none: sqlite:DIR/state.db.
std::string default_state_url(const std::string& data_dir);

// Checks the form of `url` without connecting; the message names the forms.
Result<void> check_state_url(const std::string& url);

// True for a SQLite URL; `path` receives its file.
bool is_sqlite_url(const std::string& url, std::string* path = nullptr);
bool is_postgres_url(const std::string& url);

// `url` with any password replaced by "***", for logs and messages.
std::string redact_state_url(const std::string& url);

}  // namespace kzoo::store
