#include "kzoo/server/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include <unistd.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/server/trusted_proxy.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/util/read_file.hpp"

namespace kzoo::server {
namespace {

Result<std::int64_t> parse_int(const std::string& text, const std::string& what) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty())
    return fail(fmt::format("{} = \"{}\" is not an integer: give a whole number", what, text));
  return v;
}

// The host name, made a valid server id (characters outside [A-Za-z0-9._-] become '-').
std::string default_server_id() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  std::string id = buf[0] ? buf : "localhost";
  if (id.size() > 64) id.resize(64);
  for (char& ch : id)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '-';
  return id;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t c; (c = s.find(',', start)) != std::string::npos; start = c + 1)
    if (c > start) out.push_back(s.substr(start, c - start));
  if (start < s.size()) out.push_back(s.substr(start));
  for (auto& x : out) {
    while (!x.empty() && x.front() == ' ') x.erase(x.begin());
    while (!x.empty() && x.back() == ' ') x.pop_back();
  }
  return out;
}

std::string default_data_dir(const EnvLookup& env) {
  if (auto x = env("XDG_DATA_HOME"); x && !x->empty()) return *x + "/kzoo";
  if (auto h = env("HOME"); h && !h->empty()) return *h + "/.local/share/kzoo";
  return "kzoo-data";
}

// The integer settings, by file key and environment variable, so the file,
// the environment and to_json cannot drift apart.
template <class F>
void for_each_int(ServerConfig& c, F&& f) {
  std::int64_t up = static_cast<std::int64_t>(c.max_upload_bytes);
  f("max_upload_bytes", "KZOO_MAX_UPLOAD_BYTES", up);
  c.max_upload_bytes = static_cast<std::uint64_t>(up < 0 ? 0 : up);
  auto narrow = [&](const char* k, const char* e, int& field) {
    std::int64_t v = field;
    f(k, e, v);
    field = static_cast<int>(std::clamp<std::int64_t>(v, -1, 1 << 30));
  };
  narrow("threads", "KZOO_THREADS", c.threads);
  narrow("queue_max", "KZOO_QUEUE_MAX", c.queue_max);
  narrow("read_timeout_s", "KZOO_READ_TIMEOUT_S", c.read_timeout_s);
  narrow("write_timeout_s", "KZOO_WRITE_TIMEOUT_S", c.write_timeout_s);
  narrow("upload_deadline_s", "KZOO_UPLOAD_DEADLINE_S", c.upload_deadline_s);
  narrow("max_attempts", "KZOO_MAX_ATTEMPTS", c.max_attempts);
  narrow("header_timeout_s", "KZOO_HEADER_TIMEOUT_S", c.header_timeout_s);
  narrow("keep_alive_timeout_s", "KZOO_KEEP_ALIVE_TIMEOUT_S", c.keep_alive_timeout_s);
  narrow("max_connections", "KZOO_MAX_CONNECTIONS", c.max_connections);
  narrow("max_connections_per_client", "KZOO_MAX_CONNECTIONS_PER_CLIENT", c.max_connections_per_client);
  f("limit_submissions_per_hour", "KZOO_LIMIT_SUBMISSIONS_PER_HOUR", c.limit_submissions_per_hour);
  f("limit_concurrent_jobs", "KZOO_LIMIT_CONCURRENT_JOBS", c.limit_concurrent_jobs);
  f("limit_upload_bytes_per_day", "KZOO_LIMIT_UPLOAD_BYTES_PER_DAY", c.limit_upload_bytes_per_day);
  f("limit_comments_per_hour", "KZOO_LIMIT_COMMENTS_PER_HOUR", c.limit_comments_per_hour);
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

ServerConfig default_config(const EnvLookup& env) {
  ServerConfig c;
  c.data_dir = default_data_dir(env);
  c.catalog = std::string(KZOO_SOURCE_DIR) + "/catalog/kernel_data";
  c.server_id = default_server_id();
  return c;
}

std::string ServerConfig::state_url() const { return state.empty() ? store::default_state_url(data_dir) : state; }

Result<void> parse_listen(const std::string& text, ServerConfig& cfg) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find("]:");
    if (close == std::string::npos)
      return fail(fmt::format("listen address \"{}\" is malformed: write [IPv6]:PORT", text));
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return fail(fmt::format("listen address \"{}\" is malformed: write HOST:PORT, e.g. 127.0.0.1:8321", text));
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto p = parse_int(port, "listen port");
  if (!p) return tl::unexpected(p.error());
  if (*p < 0 || *p > 65535) return fail(fmt::format("listen port {} is out of range: give 0-65535", *p));
  cfg.listen_host = host;
  cfg.listen_port = static_cast<int>(*p);
  return ok();
}

Result<void> apply_config_file(const std::string& text, const std::string& file, ServerConfig& cfg) {
  auto doc = format::parse_json(text, file, {.max_bytes = 1u << 20, .max_depth = 8});
  if (!doc) return fail(to_string(doc.error()));
  if (!doc->is_object()) return fail(file + ": the configuration must be a JSON object");
  std::map<std::string, bool> used;
  for (auto& [k, v] : doc->items()) used[k] = false;
  auto str = [&](const char* key, std::string& out) -> Result<void> {
    if (!doc->contains(key)) return ok();
    used[key] = true;
    if (!(*doc)[key].is_string()) return fail(fmt::format("{}: \"{}\" must be a string", file, key));
    out = (*doc)[key].get<std::string>();
    return ok();
  };
  if (auto r = str("data_dir", cfg.data_dir); !r) return r;
  if (auto r = str("catalog", cfg.catalog); !r) return r;
  if (auto r = str("state", cfg.state); !r) return r;
  if (auto r = str("server_id", cfg.server_id); !r) return r;
  if (doc->contains("trusted_proxies")) {
    used["trusted_proxies"] = true;
    const auto& a = (*doc)["trusted_proxies"];
    if (!a.is_array()) return fail(fmt::format("{}: \"trusted_proxies\" must be an array of addresses or CIDR networks", file));
    cfg.trusted_proxies.clear();
    for (const auto& x : a) {
      if (!x.is_string()) return fail(fmt::format("{}: \"trusted_proxies\" holds {}, not an address string", file, x.dump()));
      cfg.trusted_proxies.push_back(x.get<std::string>());
    }
  }
  std::string listen;
  if (auto r = str("listen", listen); !r) return r;
  if (!listen.empty())
    if (auto r = parse_listen(listen, cfg); !r) return fail(file + ": " + r.error().message);
  if (doc->contains("require_token_for_reads")) {
    used["require_token_for_reads"] = true;
    const auto& b = (*doc)["require_token_for_reads"];
    if (!b.is_boolean()) return fail(fmt::format("{}: \"require_token_for_reads\" must be true or false, found {}", file, b.dump()));
    cfg.require_token_for_reads = b.get<bool>();
  }
  std::string err;
  for_each_int(cfg, [&](const char* key, const char*, std::int64_t& v) {
    if (!doc->contains(key) || !err.empty()) return;
    used[key] = true;
    const auto& j = (*doc)[key];
    if (!j.is_number_integer()) {
      err = fmt::format("{}: \"{}\" must be an integer, found {}", file, key, j.dump());
      return;
    }
    v = j.get<std::int64_t>();
  });
  if (!err.empty()) return fail(err);
  for (auto& [k, u] : used)
    if (!u)
      return fail(fmt::format("{}: unknown key \"{}\": the keys are data_dir, listen, catalog, max_upload_bytes, "
                              "threads, queue_max, read_timeout_s, write_timeout_s, upload_deadline_s, max_attempts, "
                              "header_timeout_s, keep_alive_timeout_s, max_connections, max_connections_per_client, "
                              "require_token_for_reads, limit_submissions_per_hour, limit_concurrent_jobs, "
                              "limit_upload_bytes_per_day, limit_comments_per_hour, state, server_id, trusted_proxies",
                              file, k));
  return ok();
}

Result<void> apply_env(const EnvLookup& env, ServerConfig& cfg) {
  if (auto v = env("KZOO_DATA"); v && !v->empty()) cfg.data_dir = *v;
  if (auto v = env("KZOO_CATALOG"); v && !v->empty()) cfg.catalog = *v;
  if (auto v = env("KZOO_STATE"); v && !v->empty()) cfg.state = *v;
  if (auto v = env("KZOO_SERVER_ID"); v && !v->empty()) cfg.server_id = *v;
  if (auto v = env("KZOO_TRUSTED_PROXIES"); v) cfg.trusted_proxies = split_commas(*v);
  if (auto v = env("KZOO_LISTEN"); v && !v->empty())
    if (auto r = parse_listen(*v, cfg); !r) return fail("KZOO_LISTEN: " + r.error().message);
  if (auto v = env("KZOO_REQUIRE_TOKEN_FOR_READS"); v && !v->empty()) {
    if (*v == "1" || *v == "true") cfg.require_token_for_reads = true;
    else if (*v == "0" || *v == "false") cfg.require_token_for_reads = false;
    else return fail(fmt::format("KZOO_REQUIRE_TOKEN_FOR_READS = \"{}\": give true or false", *v));
  }
  std::string err;
  for_each_int(cfg, [&](const char*, const char* name, std::int64_t& v) {
    auto s = env(name);
    if (!s || s->empty() || !err.empty()) return;
    auto n = parse_int(*s, name);
    if (!n) {
      err = n.error().message;
      return;
    }
    v = *n;
  });
  if (!err.empty()) return fail(err);
  return ok();
}

Result<void> check_config(const ServerConfig& c) {
  auto range = [](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) -> Result<void> {
    if (v < lo || v > hi) return fail(fmt::format("{} = {} is out of range: give {} to {}", key, v, lo, hi));
    return ok();
  };
  for (auto r : {range("max_upload_bytes", static_cast<std::int64_t>(c.max_upload_bytes), 1024, 1ll << 30),
                 range("threads", c.threads, 1, 256), range("queue_max", c.queue_max, 1, 65536),
                 range("read_timeout_s", c.read_timeout_s, 1, 3600),
                 range("write_timeout_s", c.write_timeout_s, 1, 3600),
                 range("upload_deadline_s", c.upload_deadline_s, 1, 3600),
                 range("max_attempts", c.max_attempts, 1, 100),
                 range("header_timeout_s", c.header_timeout_s, 1, 3600),
                 range("keep_alive_timeout_s", c.keep_alive_timeout_s, 1, 3600),
                 range("max_connections", c.max_connections, 1, 1000000),
                 range("max_connections_per_client", c.max_connections_per_client, 1, 1000000),
                 range("limit_submissions_per_hour", c.limit_submissions_per_hour, 0, 1'000'000),
                 range("limit_concurrent_jobs", c.limit_concurrent_jobs, 0, 1'000'000),
                 range("limit_upload_bytes_per_day", c.limit_upload_bytes_per_day, 0, 1ll << 50),
                 range("limit_comments_per_hour", c.limit_comments_per_hour, 0, 1'000'000)})
    if (!r) return r;
  if (c.data_dir.empty()) return fail("data_dir is empty: give --data DIR or KZOO_DATA");
  if (!c.state.empty())
    if (auto r = store::check_state_url(c.state); !r) return r;
  bool id_ok = !c.server_id.empty() && c.server_id.size() <= 64;
  for (char ch : c.server_id) id_ok = id_ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-');
  if (!id_ok)
    return fail(fmt::format("server_id \"{}\" is invalid: use 1-64 letters, digits, '.', '_' or '-', different on each "
                            "server of one deployment",
                            c.server_id));
  for (const auto& p : c.trusted_proxies)
    if (auto n = parse_network(p); !n) return fail(n.error().message);
  return ok();
}

Result<std::string> resolve_state_url(const std::string& data_dir, const std::string& flag, const EnvLookup& env) {
  ServerConfig cfg;
  cfg.data_dir = data_dir;
  if (!flag.empty()) cfg.state = flag;
  else if (auto v = env("KZOO_STATE"); v && !v->empty()) cfg.state = *v;
  else if (auto text = util::read_file_capped(data_dir + "/kzoo.json", 1u << 20); text) {
    if (auto r = apply_config_file(*text, data_dir + "/kzoo.json", cfg); !r) return tl::unexpected(r.error());
  }
  if (!cfg.state.empty())
    if (auto r = store::check_state_url(cfg.state); !r) return tl::unexpected(r.error());
  return cfg.state_url();
}

nlohmann::json to_json(const ServerConfig& c) {
  nlohmann::json j;
  j["listen"] = (c.listen_host.find(':') != std::string::npos ? "[" + c.listen_host + "]" : c.listen_host) + ":" +
                std::to_string(c.listen_port);
  j["catalog"] = c.catalog;
  j["require_token_for_reads"] = c.require_token_for_reads;
  // The state is the deployment's, so the file names it; server_id is each
  // server's own and never written where several servers would read it.
  if (!c.state.empty()) j["state"] = c.state;
  if (!c.trusted_proxies.empty()) j["trusted_proxies"] = c.trusted_proxies;
  ServerConfig copy = c;
  for_each_int(copy, [&](const char* key, const char*, std::int64_t& v) { j[key] = v; });
  return j;
}

}  // namespace kzoo::server
