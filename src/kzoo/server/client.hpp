// The HTTP client side of the API, for `kzoo submit`, `kzoo status` and
// `kzoo kernels` (and the tests): plain functions over httplib::Client.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::server {

// $KZOO_SERVER, else http://127.0.0.1:8321.
std::string default_server_url();
// $KZOO_TOKEN, else empty (anonymous). Sent as "Authorization: Bearer".
std::string default_token();

struct Answer {
  int status = 0;
  nlohmann::json body;  // parsed JSON body; null when not JSON
  std::string text;     // the raw body
};

// GET `path`; fails only when the server cannot be reached.
Result<Answer> http_get(const std::string& server, const std::string& path, int timeout_s = 30,
                        const std::string& token = default_token());
// POST `path` with a JSON body (empty object when null).
Result<Answer> http_post_json(const std::string& server, const std::string& path, const nlohmann::json& body,
                              const std::string& token = default_token(), int timeout_s = 30);


// `v` percent-encoded for a query string (RFC 3986 unreserved characters kept).
std::string query_escape(const std::string& v);

// (sent bytes, total bytes)
using Progress = std::function<void(std::uint64_t, std::uint64_t)>;

// POST /api/submissions: `fields` as form fields, `package` as the file part
// "package" named `filename`. The body is sent with a Content-Length.
Result<Answer> upload_submission(const std::string& server, const std::map<std::string, std::string>& fields,
                                 const std::string& package, const std::string& filename,
                                 const Progress& progress = {}, int timeout_s = 120,
                                 const std::string& token = default_token());

// The one-line human form of an error answer: "HTTP 422 package_invalid: ...".
std::string describe_error(const Answer& a);

}  // namespace kzoo::server
