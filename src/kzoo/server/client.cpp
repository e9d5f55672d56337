#include "kzoo/server/client.hpp"

#include <cctype>
#include <cstdlib>
#include <random>

#include <fmt/format.h>
#include <httplib.h>

namespace kzoo::server {
namespace {

Answer to_answer(const httplib::Result& r) {
  Answer a;
  a.status = r->status;
  a.text = r->body;
  a.body = nlohmann::json::parse(r->body, nullptr, false);
  if (a.body.is_discarded()) a.body = nullptr;
  return a;
}

std::string boundary() {
  std::random_device rd;
  return fmt::format("kzoo-{:016x}{:016x}", (std::uint64_t(rd()) << 32) | rd(), (std::uint64_t(rd()) << 32) | rd());
}

}  // namespace

std::string default_server_url() {
  const char* s = std::getenv("KZOO_SERVER");
  return s && *s ? s : "http://127.0.0.1:8321";
}

std::string default_token() {
  const char* t = std::getenv("KZOO_TOKEN");
  return t && *t ? t : "";
}

Result<Answer> http_get(const std::string& server, const std::string& path, int timeout_s, const std::string& token) {
  httplib::Client cli(server);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(timeout_s, 0);
  if (!token.empty()) cli.set_bearer_token_auth(token);
  auto r = cli.Get(path.c_str());
  if (!r) return fail(fmt::format("cannot reach {}: {}", server, httplib::to_string(r.error())));
  return to_answer(r);
}

Result<Answer> http_post_json(const std::string& server, const std::string& path, const nlohmann::json& body,
                              const std::string& token, int timeout_s) {
  httplib::Client cli(server);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(timeout_s, 0);
  if (!token.empty()) cli.set_bearer_token_auth(token);
  auto r = cli.Post(path.c_str(), body.is_null() ? std::string("{}") : body.dump(), "application/json");
  if (!r) return fail(fmt::format("cannot reach {}: {}", server, httplib::to_string(r.error())));
  return to_answer(r);
}

std::string query_escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

Result<Answer> upload_submission(const std::string& server, const std::map<std::string, std::string>& fields,
                                 const std::string& package, const std::string& filename, const Progress& progress,
                                 int timeout_s, const std::string& token) {
  // The multipart body is built whole (packages are small, capped at 16 MiB)
  // and sent through a content provider, so progress can be reported while
  // the length stays known (no chunked encoding, which the server refuses).
  const std::string b = boundary();
  auto body = std::make_shared<std::string>();
  for (const auto& [k, v] : fields)
    *body += "--" + b + "\r\nContent-Disposition: form-data; name=\"" + k + "\"\r\n\r\n" + v + "\r\n";
  *body += "--" + b + "\r\nContent-Disposition: form-data; name=\"package\"; filename=\"" + filename +
           "\"\r\nContent-Type: application/gzip\r\n\r\n";
  *body += package;
  *body += "\r\n--" + b + "--\r\n";
  httplib::Client cli(server);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(timeout_s, 0);
  cli.set_write_timeout(timeout_s, 0);
  if (!token.empty()) cli.set_bearer_token_auth(token);
  const std::uint64_t total = body->size();
  auto r = cli.Post(
      "/api/submissions", body->size(),
      [body, progress, total](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        std::size_t n = std::min<std::size_t>(length, 64 * 1024);
        if (!sink.write(body->data() + offset, n)) return false;
        if (progress) progress(offset + n, total);
        return true;
      },
      "multipart/form-data; boundary=" + b);
  if (!r) return fail(fmt::format("cannot upload to {}: {}", server, httplib::to_string(r.error())));
  return to_answer(r);
}

std::string describe_error(const Answer& a) {
  if (a.body.is_object() && a.body.contains("error") && a.body["error"].is_object()) {
    const auto& e = a.body["error"];
    std::string s = fmt::format("HTTP {} {}: {}", a.status, e.value("code", "?"), e.value("message", ""));
    if (e.contains("violations") && e["violations"].is_array())
      for (const auto& v : e["violations"])
        s += fmt::format("\n  {}: {}: {}", v.value("path", ""), v.value("rule", ""), v.value("detail", ""));
    return s;
  }
  return fmt::format("HTTP {}: {}", a.status, a.text.substr(0, 500));
}

}  // namespace kzoo::server
