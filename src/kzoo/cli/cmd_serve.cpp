// `kzoo init DIR` and `kzoo serve`: create a data directory, run the service
// over one (server/service.hpp; settings in server/config.hpp).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "kzoo/cli/command.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/server/service.hpp"

namespace cmd_serve {  // per command: a unity build joins commands (CMakeLists.txt)

using namespace kzoo::server;

struct ServeOptions {
  std::string data, listen, config, catalog, state, server_id;
  std::string board_device_class = "auto";
  bool json = false;
};

// --json: each event one JSON line on stdout, flushed (a supervisor reads them as they come).
void event(const ServeOptions& o, nlohmann::json e) {
  if (o.json) std::cout << e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

// Defaults < config file < environment < flags (config.hpp).
kzoo::Result<ServerConfig> resolve(const ServeOptions& o) {
  auto env = process_env();
  ServerConfig cfg = default_config(env);
  if (auto d = env("KZOO_DATA"); d && !d->empty()) cfg.data_dir = *d;
  if (!o.data.empty()) cfg.data_dir = o.data;
  std::string file = o.config;
  if (file.empty())
    if (auto c = env("KZOO_CONFIG"); c && !c->empty()) file = *c;
  bool explicit_file = !file.empty();
  if (file.empty()) file = DataPaths{cfg.data_dir}.config();
  std::ifstream in(file, std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    ServerConfig before = cfg;
    if (auto r = apply_config_file(ss.str(), file, cfg); !r) return tl::unexpected(r.error());
    // Only an explicit config file may move the data directory.
    if (!explicit_file) cfg.data_dir = before.data_dir;
  } else if (explicit_file) {
    return kzoo::fail("cannot read the config file " + file);
  }
  if (auto r = apply_env(env, cfg); !r) return tl::unexpected(r.error());
  if (!o.data.empty()) cfg.data_dir = o.data;
  if (!o.catalog.empty()) cfg.catalog = o.catalog;
  if (!o.state.empty()) cfg.state = o.state;
  if (!o.server_id.empty()) cfg.server_id = o.server_id;
  if (!o.listen.empty())
    if (auto r = parse_listen(o.listen, cfg); !r) return tl::unexpected(r.error());
  if (auto r = check_config(cfg); !r) return tl::unexpected(r.error());
  return cfg;
}

const bool init_registered = kzoo::cli::register_command(
    "init", "Create a kzoo data directory (kernel_data.git, state.db, uploads/, kzoo.json)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<ServeOptions>();
      sub.add_option("dir", o->data, "The directory to create (absent or empty)")->required();
      sub.add_option("--catalog", o->catalog, "The catalog's kernel_data root (default: catalog/kernel_data)");
      sub.add_option("--state", o->state,
                     "The state: sqlite:PATH (default DIR/state.db) or postgresql://... (env KZOO_STATE); kept in "
                     "DIR/kzoo.json");
      sub.add_option("--board-device-class", o->board_device_class,
                     "Device class the demo board ranks (default auto: h200 with an NVIDIA GPU, else cpu)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        auto cfg = resolve(*o);
        if (!cfg) {
          std::cerr << "kzoo init: " << cfg.error().message << "\n";
          event(*o, {{"ok", false}, {"error", cfg.error().message}});
          return kzoo::cli::kExitError;
        }
        auto p = init_data_dir(o->data, cfg->catalog, *cfg, o->board_device_class);
        if (!p) {
          std::cerr << "kzoo init: " << p.error().message << "\n";
          event(*o, {{"ok", false}, {"error", p.error().message}});
          return kzoo::cli::kExitError;
        }
        std::cerr << "kzoo init: created " << p->root << " from " << cfg->catalog << "\n";
        event(*o, {{"ok", true}, {"data_dir", p->root}, {"catalog", cfg->catalog}, {"repository", p->repo()},
                   {"state_db", p->state_db()}, {"config", p->config()}});
        return kzoo::cli::kExitOk;
      };
    });

const bool serve_registered = kzoo::cli::register_command(
    "serve", "Run the submissions API over a data directory (created on first start)",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<ServeOptions>();
      sub.add_option("--data", o->data, "Data directory (env KZOO_DATA)");
      sub.add_option("--listen", o->listen, "HOST:PORT (env KZOO_LISTEN, default 127.0.0.1:8321; port 0 = any)");
      sub.add_option("--config", o->config, "JSON config file (env KZOO_CONFIG, default DATA/kzoo.json)");
      sub.add_option("--catalog", o->catalog, "Catalog kernel_data root, for the first start (env KZOO_CATALOG)");
      sub.add_option("--state", o->state,
                     "The state: sqlite:PATH or postgresql://... shared by several servers (env KZOO_STATE)");
      sub.add_option("--server-id", o->server_id,
                     "This server's id among several on one data directory (env KZOO_SERVER_ID, default the host name)");
      sub.add_flag("--json", o->json, "Print each event (listening, stopped, an error) as one JSON line on stdout");
      return [o] {
        auto cfg = resolve(*o);
        if (!cfg) {
          std::cerr << "kzoo serve: " << cfg.error().message << "\n";
          event(*o, {{"event", "error"}, {"error", cfg.error().message}});
          return kzoo::cli::kExitError;
        }
        // SIGTERM/SIGINT are taken by one thread with sigwait, so stopping
        // runs as ordinary code, never inside a signal handler. Blocked before
        // any server thread exists, so every thread inherits the mask.
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
        signal(SIGPIPE, SIG_IGN);
        auto svc = Service::open(*cfg);
        if (!svc) {
          std::cerr << "kzoo serve: " << svc.error().message << "\n";
          event(*o, {{"event", "error"}, {"error", svc.error().message}});
          return kzoo::cli::kExitError;
        }
        auto port = (*svc)->bind();
        if (!port) {
          std::cerr << "kzoo serve: " << port.error().message << "\n";
          event(*o, {{"event", "error"}, {"error", port.error().message}});
          return kzoo::cli::kExitError;
        }
        const std::string url = "http://" + cfg->listen_host + ":" + std::to_string(*port);
        // The one line scripts and tests read to learn the port.
        if (o->json)
          event(*o, {{"event", "listening"}, {"url", url}, {"data_dir", (*svc)->data_dir()}, {"limits", (*svc)->limits_note()}});
        else
          std::cout << "kzoo serve: listening on " << url << " (data " << (*svc)->data_dir() << ")" << std::endl;
        std::cerr << "kzoo serve: " << (*svc)->limits_note() << "\n";
        Service* s = svc->get();
        auto signalled = std::make_shared<std::atomic<bool>>(false);
        std::thread waiter([s, set, signalled] {
          int sig = 0;
          sigwait(&set, &sig);
          signalled->store(true);
          std::cerr << "kzoo serve: signal " << sig << ", stopping after requests in flight\n";
          s->stop();
        });
        bool ok = s->run();
        // run() also returns when the listener fails: wake the waiter then.
        if (!signalled->load()) pthread_kill(waiter.native_handle(), SIGTERM);
        waiter.join();
        event(*o, {{"event", "stopped"}, {"ok", ok}, {"signalled", signalled->load()}});
        return ok ? kzoo::cli::kExitOk : kzoo::cli::kExitError;
      };
    });

}  // namespace
