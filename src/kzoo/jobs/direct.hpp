// The direct transport (transport.hpp): the state and kernel_data.git
// themselves, reached without a server in between. `kzoo worker --data`
// uses it on a host that sees both; the server's runner API uses it on its
// side of the wire, once per request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kzoo/jobs/transport.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::jobs {

// Over a data directory's kernel_data.git and the state at `state_url`
// (store/open_state.hpp; empty: the directory's own sqlite:DATA/state.db).
Result<std::unique_ptr<JobTransport>> open_direct(const std::string& data_dir, const std::string& state_url = "");
// Over an open database and repository; `db` is borrowed and must outlive
// the transport (the server's runner API, one per request).
std::unique_ptr<JobTransport> direct_over(store::StateDb& db, store::KernelRepo repo);

// The commit on `rev` (newest first among the package's last `scan` commits)
// whose message carries the trailer `Kzoo-Job: <job_id>`; empty if none.
Result<std::string> find_job_commit(const store::KernelRepo& repo, const std::string& kernel_id,
                                    std::int64_t job_id, std::size_t scan = 200, const std::string& rev = "HEAD");

}  // namespace kzoo::jobs
