// Store latencies: claiming and completing jobs with 10k queued (the worker's
// hot path), and one git accept (the verdict's commit). Run:
//   ./build/kzoo_store_bench --benchmark_min_time=2
// Figures go to docs/STORE.md under "Measured".
//
// With KZOO_BENCH_PG_URL set to a PostgreSQL admin URL (database postgres, a
// user who may CREATE DATABASE; tests/lib/postgres.sh start prints one), the
// same on PostgreSQL 15, plus N concurrent claimers (threads, each its own
// connection, claim_job's FOR UPDATE SKIP LOCKED) claiming and completing.
// Without it those are skipped with a line on stderr. docs/PERF.md
// ("Sizing figures", "Claims per second through PostgreSQL 15") has the
// script line that starts a server, runs them and stops it.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/pg_state.hpp"
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

// One job's evidence commit on a new refs/jobs/<id> (the other repository
// write every job makes): six files of the sizes a CPU grade left
// (scripts/repo_growth.sh, docs/PERF.md), each job's numbers different.
void BM_GitEvidence(benchmark::State& state) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "catalog/.kernel_data", "");
  auto repo = KernelRepo::init_from_catalog(dir / "catalog", dir / "repo");
  if (!repo) throw std::runtime_error(repo.error().message);
  const std::pair<const char*, std::size_t> sizes[] = {{"benchmark_output.json", 5965}, {"verdict.json", 2025},
                                                       {"stderr.log", 1831}, {"check.json", 1503},
                                                       {"run.json", 358}, {"metrics.json", 215}};
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::map<std::string, std::string> files;
    ++n;
    for (auto [name, size] : sizes) {
      std::string body;
      while (body.size() < size) body += fmt::format("{{\"job\": {}, \"x\": {}}}\n", n, body.size() * 7919 % 10007);
      files[name] = body.substr(0, size);
    }
    state.ResumeTiming();
    auto r = repo->record_job_evidence(std::to_string(n), files, "evidence");
    if (!r) { state.SkipWithError(r.error().message.c_str()); break; }
  }
}
BENCHMARK(BM_GitEvidence)->Unit(benchmark::kMicrosecond);

// ---- PostgreSQL ------------------------------------------------------------

std::string pg_admin_url() {
  const char* u = std::getenv("KZOO_BENCH_PG_URL");
  return u && *u ? u : "";
}

// A new, empty database on the server; its URL.
std::string pg_fresh_database(const std::string& name) {
  const std::string admin = pg_admin_url();
  pqxx::connection c(admin);
  pqxx::nontransaction t(c);
  t.exec("DROP DATABASE IF EXISTS " + name);
  t.exec("CREATE DATABASE " + name);
  std::string url = admin;
  auto at = url.find("/postgres?");
  if (at == std::string::npos) throw std::runtime_error("KZOO_BENCH_PG_URL must name the database postgres: " + admin);
  url.replace(at, 10, "/" + name + "?");
  return url;
}

std::unique_ptr<StateDb> open_pg(const std::string& url) {
  auto db = open_pg_state_db(url);
  if (!db) throw std::runtime_error(db.error().message);
  return std::move(*db);
}

// Queues n more jobs in one statement: one submission made through the API
// is the template, copied n times with a queued job each (the bench only:
// the columns are those of sql_submissions.cpp and sql_core.cpp's INSERTs;
// thousands of API transactions would make the setup longer than the runs).
void pg_fill(const std::string& url, StateDb& db, int n) {
  auto s = db.create_submission({"cuda/softmax", "bench", "", "/uploads/x.tar.gz", std::string(64, 'b'), "", 0});
  if (!s || !db.enqueue(s->id)) throw std::runtime_error("fill failed");
  pqxx::connection c(url);
  pqxx::work t(c);
  t.exec(fmt::format(
      "WITH s AS (INSERT INTO submissions(kernel_id, submitter_id, summary, package_path, sha256, created_at, "
      "updated_at, state, token_id, package_bytes, route, kind, received_by) "
      "SELECT kernel_id, submitter_id, summary, package_path, sha256, created_at, updated_at, state, token_id, "
      "package_bytes, route, kind, received_by FROM submissions, generate_series(1, {}) WHERE id = {} "
      "RETURNING id, created_at) "
      "INSERT INTO jobs(submission_id, state, max_attempts, created_at, held, hold_reason) "
      "SELECT id, 'queued', 3, created_at, 0, '' FROM s",
      n - 1, s->id));
  t.commit();
  pqxx::nontransaction a(c);
  a.exec("ANALYZE");
}

int pg_queued(const std::string& url) {
  pqxx::connection c(url);
  pqxx::nontransaction t(c);
  return t.exec1("SELECT count(*) FROM jobs WHERE state = 'queued'")[0].as<int>();
}

const Completion kRejected{Outcome::rejected, {{"cases", 3}}, nullptr, {"bench"}, ""};

// One connection: the claim alone (completing untimed), as BM_ClaimJob.
void BM_PgClaimJob(benchmark::State& state) {
  const std::string url = pg_fresh_database("kzoo_bench_claim");
  auto db = open_pg(url);
  pg_fill(url, *db, kQueued);
  int queued = kQueued;
  for (auto _ : state) {
    auto j = db->claim_job("bench-worker", 300);
    if (!j || !*j) { state.SkipWithError("claim failed"); break; }
    state.PauseTiming();
    db->complete((**j).id, "bench-worker", kRejected);
    if (--queued < kQueued / 2) {
      pg_fill(url, *db, kQueued);
      queued += kQueued;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations());
}

// One connection: claim + complete, as BM_ClaimAndComplete.
void BM_PgClaimAndComplete(benchmark::State& state) {
  const std::string url = pg_fresh_database("kzoo_bench_cycle");
  auto db = open_pg(url);
  pg_fill(url, *db, kQueued);
  int queued = kQueued;
  for (auto _ : state) {
    auto j = db->claim_job("bench-worker", 300);
    if (!j || !*j) { state.SkipWithError("claim failed"); break; }
    if (!db->complete((**j).id, "bench-worker", kRejected)) { state.SkipWithError("complete failed"); break; }
    if (--queued < kQueued / 2) {
      state.PauseTiming();
      pg_fill(url, *db, kQueued);
      queued += kQueued;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// N claimers at once, each its own connection (a worker each), claiming and
// completing; items_per_second is the total of claim+complete cycles a second.
// Fixed iterations per thread: thread 0 tops the queue up before the start
// barrier so that it never runs below kQueued.
constexpr int kClaimerIterations = 1000;
std::string g_claimers_url;

void BM_PgClaimers(benchmark::State& state) {
  auto db = open_pg(g_claimers_url);
  if (state.thread_index() == 0) {
    int need = kQueued + kClaimerIterations * state.threads() - pg_queued(g_claimers_url);
    if (need > 0) pg_fill(g_claimers_url, *db, need);
  }
  const std::string worker = fmt::format("bench-worker-{}", state.thread_index());
  for (auto _ : state) {
    auto j = db->claim_job(worker, 300);
    if (!j || !*j) { state.SkipWithError(j ? "the queue ran dry" : j.error().message.c_str()); break; }
    if (!db->complete((**j).id, worker, kRejected)) { state.SkipWithError("complete failed"); break; }
  }
  state.SetItemsProcessed(state.iterations());
}

void register_pg() {
  if (pg_admin_url().empty()) {
    std::fprintf(stderr,
                 "PostgreSQL benchmarks skipped: KZOO_BENCH_PG_URL is not set "
                 "(docs/PERF.md, \"Sizing figures\")\n");
    return;
  }
  g_claimers_url = pg_fresh_database("kzoo_bench_claimers");
  benchmark::RegisterBenchmark("BM_PgClaimJob", BM_PgClaimJob)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PgClaimAndComplete", BM_PgClaimAndComplete)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PgClaimers", BM_PgClaimers)
      ->Threads(1)->Threads(2)->Threads(4)->Threads(8)->Threads(16)
      ->Iterations(kClaimerIterations)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace kzoo::store

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kzoo::store::register_pg();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
