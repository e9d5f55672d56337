#include "kzoo/board/partition.hpp"

#include <algorithm>
#include <cmath>
#include <regex>

#include <fmt/format.h>

namespace kzoo::board {

using nlohmann::json;

Result<int> parse_duration(const std::string& text, const std::string& what) {
  static const std::regex kForm("^([0-9]{1,3}):([0-5][0-9]):([0-5][0-9])$");
  std::smatch m;
  if (!std::regex_match(text, m, kForm))
    return fail(fmt::format("{} \"{}\" is not a duration H:MM:SS (e.g. 00:10:00)", what, text));
  return std::stoi(m[1]) * 3600 + std::stoi(m[2]) * 60 + std::stoi(m[3]);
}

namespace {
// One entry of scienceslack.json `partitions`.
Result<Partition> partition_of(const json& p) {
  Partition out;
  out.name = p.value("name", "");
  const std::string where = "scienceslack.json partition " + out.name;
  auto limit = parse_duration(p.value("time_limit", ""), where + " time_limit");
  if (!limit) return tl::unexpected(limit.error());
  out.time_limit_s = *limit;
  out.default_time_s = *limit;
  if (p.contains("default_time")) {
    auto d = parse_duration(p.value("default_time", ""), where + " default_time");
    if (!d) return tl::unexpected(d.error());
    if (*d > *limit)
      return fail(fmt::format("{}: default_time {} is over time_limit {}: lower it", where, p["default_time"].dump(),
                              p["time_limit"].dump()));
    out.default_time_s = *d;
  }
  out.cpus = p.value("cpus", 0);
  out.memory_mb = static_cast<long long>(std::ceil(p.value("memory_mb", 0.0)));
  out.gpus = p.value("gpus", 0);
  return out;
}

}  // namespace

Result<std::optional<Partition>> checks_partition(const json& benchmark) {
  const json& parts = benchmark.value("partitions", json::array());
  if (!parts.is_array() || parts.empty()) return std::optional<Partition>();
  std::string wanted;
  const json& checks = benchmark.value("checks", json::array());
  if (checks.is_array() && !checks.empty() && checks[0].is_object()) wanted = checks[0].value("partition", "");
  const json* found = wanted.empty() ? &parts[0] : nullptr;
  for (const auto& p : parts)
    if (!found && p.is_object() && p.value("name", "") == wanted) found = &p;
  if (!found)
    return fail(fmt::format("scienceslack.json: the check runs on partition \"{}\", which `partitions` does not "
                            "declare: add it, or name one of the declared partitions",
                            wanted));
  auto out = partition_of(*found);
  if (!out) return tl::unexpected(out.error());
  return std::optional<Partition>(*out);
}

Result<std::optional<Partition>> named_partition(const json& benchmark, const std::string& name) {
  if (name.empty()) return checks_partition(benchmark);
  const json& parts = benchmark.value("partitions", json::array());
  if (!parts.is_array() || parts.empty()) return std::optional<Partition>();
  std::string names;
  for (const auto& p : parts) {
    if (!p.is_object()) continue;
    if (p.value("name", "") == name) {
      auto out = partition_of(p);
      if (!out) return tl::unexpected(out.error());
      return std::optional<Partition>(*out);
    }
    names += (names.empty() ? "" : ", ") + p.value("name", "");
  }
  return fail(fmt::format("partition \"{}\" does not exist: the project's partitions are {} (scienceslack.json "
                          "`partitions`); ask for one of them with --partition",
                          name, names));
}

json CheckLimits::to_json() const {
  return {{"timeout_s", timeout.count()},
          {"memory_bytes", memory_bytes ? json(memory_bytes) : json()},
          {"cpus", cpus ? json(cpus) : json()}};
}

CheckLimits check_limits(const std::optional<Partition>& p, std::chrono::seconds runner_timeout,
                         std::uint64_t runner_memory_bytes) {
  CheckLimits l{runner_timeout, runner_memory_bytes, 0};
  if (!p) return l;
  if (p->default_time_s > 0) l.timeout = std::min(runner_timeout, std::chrono::seconds(p->default_time_s));
  if (p->memory_mb > 0) {
    const std::uint64_t mine = static_cast<std::uint64_t>(p->memory_mb) << 20;
    l.memory_bytes = runner_memory_bytes ? std::min(runner_memory_bytes, mine) : mine;
  }
  l.cpus = std::max(0, p->cpus);
  return l;
}

}  // namespace kzoo::board
