// Store latencies: claiming and completing jobs with 10k queued (the worker's
// hot path), and one git accept (the verdict's commit). Run:
//   ./build/kzoo_store_bench --benchmark_min_time=2
// Figures go to docs/STORE.md under "Measured".
#include <benchmark/benchmark.h>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/sqlite_state.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::store {
namespace {

constexpr int kQueued = 10000;

void fill(StateDb& db, int n) {
  for (int i = 0; i < n; ++i) {
    auto s = db.create_submission({"cuda/softmax", "bench", "", "/uploads/x.tar.gz", std::string(64, 'b'), "", 0});
    if (!s || !db.enqueue(s->id)) throw std::runtime_error("fill failed");
  }
}

std::unique_ptr<StateDb> open_db(const testing::TempDir& dir, bool full) {
  SqliteOptions o;
  o.synchronous_full = full;
  auto db = open_sqlite_state_db(dir / "state.db", o);
  if (!db) throw std::runtime_error(db.error().message);
  return std::move(*db);
}

// Keeps between kQueued/2 and 1.5*kQueued jobs queued, counting locally:
// refills (untimed, through `filler`, a synchronous=NORMAL connection, so
// fsyncs of 20k setup transactions do not dominate the run) when it runs low.
void ensure_queue(benchmark::State& state, int& queued, StateDb& filler) {
  if (--queued >= kQueued / 2) return;
  state.PauseTiming();
  fill(filler, kQueued);
  queued += kQueued;
  state.ResumeTiming();
}

// Arg 1: synchronous=FULL (the default), 0: NORMAL.
void BM_ClaimJob(benchmark::State& state) {
  testing::TempDir dir;
  auto db = open_db(dir, state.range(0) == 1);
  auto filler = open_db(dir, false);
  fill(*filler, kQueued);
  int queued = kQueued;
  for (auto _ : state) {
    auto j = db->claim_job("bench-worker", 300);
    if (!j || !*j) state.SkipWithError("claim failed");
    state.PauseTiming();
    db->complete((**j).id, "bench-worker", {Outcome::rejected, nullptr, nullptr, {"bench"}, ""});
    if (--queued < kQueued / 2) {
      fill(*filler, kQueued);
      queued += kQueued;
    }
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ClaimJob)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

void BM_ClaimAndComplete(benchmark::State& state) {
  testing::TempDir dir;
  auto db = open_db(dir, state.range(0) == 1);
  auto filler = open_db(dir, false);
  fill(*filler, kQueued);
  int queued = kQueued;
  for (auto _ : state) {
    auto j = db->claim_job("bench-worker", 300);
    if (!j || !*j) state.SkipWithError("claim failed");
    auto c = db->complete((**j).id, "bench-worker", {Outcome::rejected, {{"cases", 3}}, nullptr, {"bench"}, ""});
    if (!c) state.SkipWithError("complete failed");
    ensure_queue(state, queued, *filler);
  }
}
BENCHMARK(BM_ClaimAndComplete)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

void BM_GitAccept(benchmark::State& state) {
  testing::TempDir dir;
  std::string id = "cuda/reduction/softmax/fp32/softmax_eager";
  auto pkg = dir.path() / "catalog" / id;
  testing::write_file(dir.path() / "catalog/.kernel_data", "");
  for (const char* f : {"desc.yaml", "bench_result.yaml", "build_test_env.py", "benchmark.py"})
    testing::write_file(pkg / ".kernel_package" / f, "x\n");
  testing::write_file(pkg / "src/kernel.py", "x\n");
  auto repo = KernelRepo::init_from_catalog(dir / "catalog", dir / "repo");
  if (!repo) throw std::runtime_error(repo.error().message);
  package::PackageTree sub;
  sub.files.push_back({"src/kernel.py", ""});
  sub.files.push_back({"src/util.py", "HELP = 1\n"});
  int n = 0;
  for (auto _ : state) {
    sub.files[0].content = "def run(x): return x  # v" + std::to_string(++n) + "\n";
    auto r = repo->accept(id, sub, "cases: []\n", "bench accept", Person{"bench", ""});
    if (!r) state.SkipWithError(r.error().message.c_str());
  }
}
BENCHMARK(BM_GitAccept)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kzoo::store

BENCHMARK_MAIN();
