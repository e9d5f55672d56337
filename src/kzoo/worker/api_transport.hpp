// The worker's api mode: a JobTransport (jobs/transport.hpp) over the
// server's runner API with a runner token (docs/SERVER.md "Runner API"), for
// compute nodes that must not reach the data directory or the state.
#pragma once

#include <memory>
#include <string>

#include "kzoo/jobs/transport.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::worker {

// Over the server's runner API at `server_url` with runner token `token`.
Result<std::unique_ptr<jobs::JobTransport>> open_api(const std::string& server_url, const std::string& token);

}  // namespace kzoo::worker
