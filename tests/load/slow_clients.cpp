// kzoo_slow_clients: holds N slow connections to a kzoo server on loopback
// for a bounded time (src/kzoo/server/slow_clients.hpp), for the front-door
// benchmark (scripts/bench_front_door.sh). It connects to 127.0.0.1 only and
// stops by itself.
//
//   kzoo_slow_clients --port P [--count 1000] [--mode trickle|idle]
//                     [--seconds 30] [--interval-ms 1000] [--per-source 50] [--first-source 0]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kzoo/server/slow_clients.hpp"

int main(int argc, char** argv) {
  using kzoo::server::testing::SlowLoad;
  using kzoo::server::testing::SlowLoadConfig;
  SlowLoadConfig cfg;
  cfg.count = 1000;
  cfg.seconds = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto num = [&](int& out) {
      if (!v) {
        std::fprintf(stderr, "kzoo_slow_clients: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      out = std::atoi(v);
      ++i;
    };
    if (a == "--port") num(cfg.port);
    else if (a == "--count") num(cfg.count);
    else if (a == "--interval-ms") num(cfg.interval_ms);
    else if (a == "--per-source") num(cfg.per_source);
    else if (a == "--first-source") num(cfg.first_source);
    else if (a == "--seconds" && v) {
      cfg.seconds = std::atof(v);
      ++i;
    } else if (a == "--mode" && v && (std::strcmp(v, "trickle") == 0 || std::strcmp(v, "idle") == 0)) {
      cfg.mode = std::strcmp(v, "idle") == 0 ? SlowLoadConfig::idle : SlowLoadConfig::trickle;
      ++i;
    } else {
      std::fprintf(stderr,
                   "usage: kzoo_slow_clients --port P [--count N<=20000] [--mode trickle|idle] [--seconds S<=3600] "
                   "[--interval-ms MS] [--per-source K] [--first-source I]\n");
      return 2;
    }
  }
  try {
    SlowLoad load(cfg);
    load.start();
    std::fprintf(stderr, "kzoo_slow_clients: %d %s connections to 127.0.0.1:%d for %.0f s\n", cfg.count,
                 cfg.mode == SlowLoadConfig::idle ? "idle keep-alive" : "trickling", cfg.port, cfg.seconds);
    load.stop_when_done();
    const auto& r = load.report();
    std::printf(
        "{\"mode\": \"%s\", \"count\": %d, \"connects\": %llu, \"connect_failed\": %llu, \"server_closed\": %llu, "
        "\"responses\": %llu, \"bytes_sent\": %llu, \"open_at_end\": %d}\n",
        cfg.mode == SlowLoadConfig::idle ? "idle" : "trickle", cfg.count, (unsigned long long)r.connects,
        (unsigned long long)r.connect_failed, (unsigned long long)r.server_closed, (unsigned long long)r.responses,
        (unsigned long long)r.bytes_sent, r.open_at_end);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kzoo_slow_clients: %s\n", e.what());
    return 2;
  }
  return 0;
}
