// Service throughput and latency on loopback: uploads of a valid package
// (validate, store, record, queue) and GET /api/kernels, from 1 and 8
// concurrent clients. p50/p99 are reported as counters (microseconds).
// Run: build/kzoo_server_bench --benchmark_min_time=3
#include <algorithm>
#include <chrono>

#include <benchmark/benchmark.h>
#include <httplib.h>

#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"

namespace {

using namespace kzoo::server;
using namespace kzoo::server::testing;

struct Shared {
  TempDir tmp;
  std::unique_ptr<RunningService> svc;
  std::string tgz, token;
  Shared() {
    write_catalog(tmp.path() / "catalog");
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp / "data";
    cfg.catalog = tmp / "catalog";
    cfg.listen_port = 0;
    svc = std::make_unique<RunningService>(cfg);
    tgz = *kzoo::package::package_tarball_bytes(tree_of(package_files()), kKernelId);
    token = make_token(cfg.data_dir, "bench");
  }
};

Shared& shared() {
  static Shared s;
  return s;
}

template <class F>
void timed_loop(benchmark::State& state, F&& f) {
  std::vector<double> mine;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    if (!f()) state.SkipWithError("request failed");
    mine.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(mine.begin(), mine.end());
  if (!mine.empty()) {
    state.counters["p50_us"] = benchmark::Counter(mine[mine.size() / 2], benchmark::Counter::kAvgThreads);
    state.counters["p99_us"] = benchmark::Counter(mine[mine.size() * 99 / 100], benchmark::Counter::kAvgThreads);
  }
  state.counters["req_per_s"] = benchmark::Counter(static_cast<double>(mine.size()), benchmark::Counter::kIsRate);
}

void BM_Upload(benchmark::State& state) {
  auto& s = shared();
  std::map<std::string, std::string> f = {{"kernel_id", kKernelId}, {"submitter_id", "bench"},
                                          {"package_filename", "p.tar.gz"}, {"optimization_summary", "x"}};
  timed_loop(state, [&] {
    auto a = upload_submission(s.svc->url(), f, s.tgz, "p.tar.gz", {}, 120, s.token);
    return a && a->status == 202;
  });
}
BENCHMARK(BM_Upload)->UseRealTime()->Threads(1)->Threads(8);

void BM_GetKernels(benchmark::State& state) {
  auto& s = shared();
  httplib::Client cli(s.svc->url());
  cli.set_keep_alive(true);
  timed_loop(state, [&] {
    auto r = cli.Get("/api/kernels");
    return r && r->status == 200;
  });
}
BENCHMARK(BM_GetKernels)->UseRealTime()->Threads(1)->Threads(8);

}  // namespace

BENCHMARK_MAIN();
