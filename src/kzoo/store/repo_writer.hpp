// The repository's writer lock for several hosts (kernel_repo.hpp
// RepoWriterLock): a PostgreSQL session-level advisory lock on the state's
// database, which every server and direct-mode worker of a deployment
// reaches already. Threads of one process take turns on a mutex first, so a
// process holds one connection for it.
//
// If the connection drops while a turn is held, PostgreSQL releases the lock
// and another writer may start; the ref's compare-and-swap still refuses a
// stale move, so the lock orders writers but correctness never rests on it.
#pragma once

#include <memory>
#include <string>

#include "kzoo/store/kernel_repo.hpp"

namespace kzoo::store {

// pg_advisory_lock key of the repository's writers ("kzrepo" in ASCII).
inline constexpr long long kRepoWriterKey = 0x6b7a7265706fLL;

std::shared_ptr<RepoWriterLock> pg_repo_writer(const std::string& url);

}  // namespace kzoo::store
