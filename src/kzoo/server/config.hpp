// Configuration of `kzoo serve`: one JSON file plus environment variables,
// each with a default, so `kzoo serve` alone starts a loopback service.
//
// Precedence, lowest first: built-in defaults < the config file < environment
// variables < command-line flags (applied by the CLI). The file is the one
// given with --config, else $KZOO_CONFIG, else <data dir>/kzoo.json when it
// exists. Unknown keys in the file are errors (a typo must not silently fall
// back to a default).
//
// | key                 | env                     | default                    |
// |---------------------|-------------------------|----------------------------|
// | data_dir            | KZOO_DATA               | $XDG_DATA_HOME/kzoo, else ~/.local/share/kzoo |
// | listen              | KZOO_LISTEN             | 127.0.0.1:8321             |
// | catalog             | KZOO_CATALOG            | <source tree>/catalog/kernel_data |
// | max_upload_bytes    | KZOO_MAX_UPLOAD_BYTES   | 16777216 (16 MiB)          |
// | threads             | KZOO_THREADS            | 8                          |
// | queue_max           | KZOO_QUEUE_MAX          | 64 (complete requests queued for the threads; more wait in the front door) |
// | read_timeout_s      | KZOO_READ_TIMEOUT_S     | 10 (per socket read)       |
// | write_timeout_s     | KZOO_WRITE_TIMEOUT_S    | 10 (per socket write)      |
// | upload_deadline_s   | KZOO_UPLOAD_DEADLINE_S  | 120 (whole upload body)    |
// | max_attempts        | KZOO_MAX_ATTEMPTS       | 3 (claims of a job before it fails) |
// | header_timeout_s    | KZOO_HEADER_TIMEOUT_S   | 10 (a request head, whole: front_door.hpp) |
// | keep_alive_timeout_s | KZOO_KEEP_ALIVE_TIMEOUT_S | 5 (idle between requests) |
// | max_connections     | KZOO_MAX_CONNECTIONS    | 4096 (open at once, in total) |
// | max_connections_per_client | KZOO_MAX_CONNECTIONS_PER_CLIENT | 64 (per IPv4 address / IPv6 /64) |
// | require_token_for_reads | KZOO_REQUIRE_TOKEN_FOR_READS | false (reads are public) |
// | limit_submissions_per_hour | KZOO_LIMIT_SUBMISSIONS_PER_HOUR | 60 (per token; 0 = none allowed) |
// | limit_concurrent_jobs | KZOO_LIMIT_CONCURRENT_JOBS | 8 (queued or running, per token) |
// | limit_upload_bytes_per_day | KZOO_LIMIT_UPLOAD_BYTES_PER_DAY | 1073741824 (1 GiB, per token) |
// | limit_comments_per_hour | KZOO_LIMIT_COMMENTS_PER_HOUR | 120 (comments and reviews, per token) |
// | state               | KZOO_STATE              | sqlite:<data dir>/state.db (store/open_state.hpp; postgresql://... for several servers) |
// | server_id           | KZOO_SERVER_ID          | the host name (names this server's lock and the submissions it received) |
// | trusted_proxies     | KZOO_TRUSTED_PROXIES    | none (addresses or CIDR networks whose X-Forwarded-For is believed; comma-separated in the environment) |
// A token may carry its own limits (`kzoo token new --max-...`), which win.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct ServerConfig {
  std::string data_dir;
  std::string listen_host = "127.0.0.1";
  int listen_port = 8321;  // 0 = any free port (tests)
  std::string catalog;
  std::uint64_t max_upload_bytes = 16u << 20;
  int threads = 8;
  int queue_max = 64;
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  int upload_deadline_s = 120;
  int max_attempts = 3;
  int header_timeout_s = 10;
  int keep_alive_timeout_s = 5;
  int max_connections = 4096;
  int max_connections_per_client = 64;
  bool require_token_for_reads = false;
  std::int64_t limit_submissions_per_hour = 60;
  std::int64_t limit_concurrent_jobs = 8;
  std::int64_t limit_upload_bytes_per_day = 1ll << 30;
  std::int64_t limit_comments_per_hour = 120;
  std::string state;                         // empty: sqlite:<data_dir>/state.db
  std::string server_id;                     // 1-64 of [A-Za-z0-9._-]; default: the host name
  std::vector<std::string> trusted_proxies;  // trusted_proxy.hpp
  // The state URL in force.
  std::string state_url() const;
};

// Reads an environment variable; tests inject a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();

ServerConfig default_config(const EnvLookup& env);

// "HOST:PORT" (IPv4 literal or name, port 0-65535); "[v6]:PORT" for IPv6.
Result<void> parse_listen(const std::string& text, ServerConfig& cfg);

// Applies the keys of config JSON `text` (from `file`) onto `cfg`.
Result<void> apply_config_file(const std::string& text, const std::string& file, ServerConfig& cfg);

// Applies the KZOO_* variables onto `cfg`; a malformed value is an error naming it.
Result<void> apply_env(const EnvLookup& env, ServerConfig& cfg);

// Checks ranges (threads 1-256, queue_max 1-65536, timeouts 1-3600 s, upload cap 1 KiB-1 GiB,
// connection caps 1-1000000).
Result<void> check_config(const ServerConfig& cfg);

// The state URL of data directory `data_dir` for the verbs that open it
// beside the server (kzoo worker, kzoo user/token): `flag` when given, else
// KZOO_STATE, else the `state` of DATA/kzoo.json, else sqlite:DATA/state.db.
Result<std::string> resolve_state_url(const std::string& data_dir, const std::string& flag, const EnvLookup& env);

// The file form, as `kzoo init` writes it: every key but data_dir (the file
// lives in the data directory, which may be moved).
nlohmann::json to_json(const ServerConfig& cfg);

}  // namespace kzoo::server
