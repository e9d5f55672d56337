// The JSON forms of the runner API (docs/SERVER.md "Runner API"), shared by
// its two sides: the server (server/runner_api.cpp) and the worker's api
// transport (worker/api_transport.cpp). Readers check what they read and say
// which field is wrong.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/jobs/transport.hpp"
#include "kzoo/package/package_tree.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::jobs {

// A BoardContext (GET .../board), and back.
nlohmann::json board_context_to_json(const BoardContext& c);
Result<BoardContext> board_context_from_json(const nlohmann::json& j);

nlohmann::json job_to_json(const store::Job& j);
store::Job job_from_json(const nlohmann::json& j);
nlohmann::json completion_to_json(const store::Completion& c);
Result<store::Completion> completion_from_json(const nlohmann::json& j);
nlohmann::json tree_to_json(const package::PackageTree& t);  // [{path, executable, base64}]
Result<package::PackageTree> tree_from_json(const nlohmann::json& j);
// A batch job as a runner needs it (the claim's "batch"), and how it ended (POST .../batch/finish).
nlohmann::json batch_to_json(const store::BatchJob& b);
Result<store::BatchJob> batch_from_json(const nlohmann::json& j);
nlohmann::json batch_end_to_json(const store::BatchEnd& e);
Result<store::BatchEnd> batch_end_from_json(const nlohmann::json& j);
std::string base64_encode(const std::string& bytes);
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace kzoo::jobs
