// How fast submission tarballs are read, and what a 10 GB bomb costs.
//
//   ./build/kzoo_tarball_bench --benchmark_repetitions=3
//
// (a) a typical 50 KB package (a dozen source files), read from memory and
//     from a file: tarballs per second (items_per_second);
// (b) a bomb of 10 GiB of zeros (10240 members of 1 MiB, about 11 MB on
//     disk, written once to /tmp): time to refuse it and the peak RSS of the
//     read (peak_rss_MB: VmHWM after resetting it through /proc/self/clear_refs,
//     so earlier benchmarks do not count; maxrss_MB: getrusage, whole process).
#include <archive.h>
#include <archive_entry.h>
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

#include "kzoo/package/tarball.hpp"

namespace kzoo::package {
namespace {

constexpr std::size_t kBombMember = 1u << 20;  // bytes of zeros per tar member
constexpr std::size_t kBombMembers = 10240;    // 10 GiB in all
const char* const kBombPath = "/tmp/kzoo_bench_bomb_10g.tar.gz";
const char* const kTypicalPath = "/tmp/kzoo_bench_typical.tar.gz";

// One source file of realistic text: Python/Triton-like functions whose
// names, comments and constants are drawn from a seeded generator, so the
// file compresses about as well as real code (4-5x), not like a repeated line.
std::string source_file(unsigned seed, std::size_t bytes) {
  static const char* words[] = {"row", "col", "block", "tile", "scale", "bias", "mask", "acc", "max", "sum",
                                "exp", "norm", "eps", "grad", "stride", "offset", "shape", "dtype", "warp",
                                "lane", "chunk", "pivot", "carry", "state", "input", "output", "weight",
                                "cache", "index", "limit", "count", "ratio", "delta", "gamma", "beta", "phase"};
  static const char* verbs[] = {"load", "store", "reduce", "broadcast", "clamp", "normalise", "accumulate",
                                "rescale", "permute", "gather", "scatter", "split", "merge", "check"};
  std::mt19937 rng(seed);
  const auto w = [&] { return std::string(words[rng() % std::size(words)]); };
  const auto v = [&] { return std::string(verbs[rng() % std::size(verbs)]); };
  std::ostringstream s;
  s << "# Kernel module " << seed << ": fused softmax over the last dimension.\n"
    << "import torch\nimport triton\nimport triton.language as tl\n\n";
  while (static_cast<std::size_t>(s.tellp()) < bytes) {
    const std::string a = w(), b = w(), c = w();
    s << "@triton.jit\ndef " << v() << "_" << a << "_" << b << "(" << a << "_ptr, " << b << "_ptr, n_" << c
      << ", BLOCK_" << rng() % 9 << ": tl.constexpr):\n"
      << "    \"\"\"" << v() << " the " << a << " of each " << b << " before we " << v() << " the " << c
      << ".\"\"\"\n";
    for (unsigned k = 0, n = 3 + rng() % 5; k < n; ++k) {
      const std::string x = w() + "_" + std::to_string(rng() % 64);
      switch (rng() % 4) {
        case 0: s << "    " << x << " = tl." << v() << "(" << a << "_ptr + " << w() << " * " << rng() % 4096 << ")\n"; break;
        case 1: s << "    " << x << " = " << w() << " * " << (rng() % 1000) / 997.0 << " + " << w() << "\n"; break;
        case 2: s << "    if " << w() << " < " << w() << ":  # " << v() << " " << w() << " first\n        " << x
                  << " = tl.where(" << w() << ", " << w() << ", 0.0)\n"; break;
        default: s << "    tl.store(" << b << "_ptr + " << w() << ", " << x << ", mask=" << w() << " < n_" << c << ")\n";
      }
    }
    s << "\n";
  }
  return s.str();
}

PackageTree typical_package() {
  PackageTree t;
  t.files.push_back({".kernel_package/desc.yaml", "name: softmax\nreference_sources:\n  - {kind: task, ref: softmax}\n"});
  t.files.push_back({".kernel_package/bench_result.yaml", "status: seed\n"});
  t.files.push_back({".kernel_package/build_test_env.py", source_file(0, 600), true});
  t.files.push_back({".kernel_package/benchmark.py", source_file(1, 900)});
  for (int i = 0; i < 8; ++i) t.files.push_back({"src/softmax_" + std::to_string(i) + ".py", source_file(i + 2, 5800)});
  return t;
}

const std::string& typical_tarball() {
  static const std::string bytes = [] {
    auto b = package_tarball_bytes(typical_package(), "hopper/norm/softmax/bf16/eager");
    if (!b) throw std::runtime_error(b.error().message);
    std::ofstream(kTypicalPath, std::ios::binary) << *b;
    return *b;
  }();
  return bytes;
}

la_ssize_t append(archive*, void* out, const void* buf, size_t len) {
  auto* sink = static_cast<std::pair<std::string, bool>*>(out);
  if (sink->second) return -1;
  sink->first.append(static_cast<const char*>(buf), len);
  return static_cast<la_ssize_t>(len);
}

// One gzip member holding `data` (libarchive's raw format + gzip filter).
std::string gzip_member(const std::string& data) {
  std::pair<std::string, bool> sink;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  archive_write_set_format_raw(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_filter_option(a.get(), "gzip", "compression-level", "9");
  archive_write_set_bytes_in_last_block(a.get(), 1);
  archive_write_open(a.get(), &sink, nullptr, append, nullptr);
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(e.get(), "raw");
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
  archive_write_header(a.get(), e.get());
  archive_write_data(a.get(), data.data(), data.size());
  archive_write_close(a.get());
  return sink.first;
}

// The ustar header of a member claiming `size` bytes, without its data.
std::string tar_header(const std::string& name, std::size_t size) {
  std::pair<std::string, bool> sink;
  archive* a = archive_write_new();
  archive_write_set_format_ustar(a);
  archive_write_set_bytes_per_block(a, 0);
  archive_write_open(a, &sink, nullptr, append, nullptr);
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, static_cast<la_int64_t>(size));
  archive_write_header(a, e);
  archive_entry_free(e);
  std::string header = sink.first;
  sink.second = true;  // refuse the padding the writer would add for the missing data
  archive_write_free(a);
  return header;
}

// Writes the bomb once: the same two gzip members (a header, 1 MiB of
// zeros) repeated; gzip readers decode concatenated members as one stream.
void ensure_bomb() {
  static const bool done = [] {
    const std::string header = gzip_member(tar_header("hopper/norm/softmax/.kernel_package/z", kBombMember));
    const std::string zeros = gzip_member(std::string(kBombMember, '\0'));
    std::ofstream out(kBombPath, std::ios::binary | std::ios::trunc);
    for (std::size_t i = 0; i < kBombMembers; ++i) out << header << zeros;
    out << gzip_member(std::string(1024, '\0'));  // end of archive
    return true;
  }();
  (void)done;
}

double vm_hwm_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return -1;
}

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

double maxrss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kB on Linux
}

void BM_ReadTypicalFromMemory(benchmark::State& state) {
  const std::string& bytes = typical_tarball();
  for (auto _ : state) {
    TarballRead r = read_package_tarball_bytes(bytes, "hopper/norm/softmax/bf16/eager");
    if (!r.violations.empty()) state.SkipWithError(to_string(r.violations[0]).c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tarball_bytes"] = static_cast<double>(bytes.size());
  state.counters["unpacked_bytes"] = static_cast<double>(typical_package().total_bytes());
}
BENCHMARK(BM_ReadTypicalFromMemory);

void BM_ReadTypicalFromFile(benchmark::State& state) {
  typical_tarball();
  for (auto _ : state) {
    auto r = read_package_tarball(kTypicalPath, "hopper/norm/softmax/bf16/eager");
    if (!r || !r->violations.empty()) state.SkipWithError("the typical package did not read cleanly");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReadTypicalFromFile);

void BM_PackTypical(benchmark::State& state) {
  const PackageTree tree = typical_package();
  for (auto _ : state) benchmark::DoNotOptimize(package_tarball_bytes(tree, "hopper/norm/softmax/bf16/eager"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PackTypical);

// Arg 0: default limits (stops at tar.ratio); arg 1: no ratio cap, so the
// read runs until max_total_bytes (16 MiB) is kept in memory: the worst case.
void BM_ReadTenGigabyteBomb(benchmark::State& state) {
  ensure_bomb();
  TreeLimits limits;
  if (state.range(0) == 1) limits.max_ratio = 1e12;
  reset_peak_rss();
  std::string rule;
  for (auto _ : state) {
    auto r = read_package_tarball(kBombPath, {}, limits);
    if (!r || r->violations.empty()) state.SkipWithError("the bomb was not refused");
    else rule = r->violations.back().rule;
  }
  state.SetLabel(rule);
  state.counters["peak_rss_MB"] = vm_hwm_mb();
  state.counters["maxrss_MB"] = maxrss_mb();
}
BENCHMARK(BM_ReadTenGigabyteBomb)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kzoo::package

BENCHMARK_MAIN();
