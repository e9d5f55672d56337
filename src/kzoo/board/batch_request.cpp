// Settling sbatch's options against a partition (batch_request.hpp).
#include "kzoo/board/batch_request.hpp"

#include <regex>

#include <fmt/format.h>

namespace kzoo::board {

namespace {

bool whole(const std::string& s, long long max, long long& out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(s);
  return out <= max;
}

}  // namespace

Result<int> parse_slurm_time(const std::string& text) {
  static const std::regex kForm(R"((?:(\d{1,3})-)?(\d{1,6})(?::(\d{1,2}))?(?::(\d{1,2}))?)");
  std::smatch m;
  if (!std::regex_match(text, m, kForm))
    return fail(fmt::format("--time \"{}\" is not a Slurm time: give minutes, MM:SS, HH:MM:SS or D-HH:MM:SS "
                            "(e.g. --time=00:10:00)",
                            text.substr(0, 64)));
  auto n = [&](int i) { return m[i].matched ? std::stoll(m[i]) : 0LL; };
  long long s = 0;
  if (m[1].matched) {  // D-H, D-H:M, D-H:M:S
    s = n(1) * 86400 + n(2) * 3600 + n(3) * 60 + n(4);
  } else if (m[4].matched) {  // H:M:S
    s = n(2) * 3600 + n(3) * 60 + n(4);
  } else if (m[3].matched) {  // M:S
    s = n(2) * 60 + n(3);
  } else {  // M
    s = n(2) * 60;
  }
  if (s < 1 || s > 365LL * 86400)
    return fail(fmt::format("--time \"{}\" is {} s: give at least one second and at most a year", text, s));
  return static_cast<int>(s);
}

Result<long long> parse_slurm_mem(const std::string& text) {
  static const std::regex kForm(R"((\d{1,12})([KMGTkmgt]?)[Bb]?)");
  std::smatch m;
  if (!std::regex_match(text, m, kForm))
    return fail(fmt::format("--mem \"{}\" is not a Slurm memory size: give a whole number with K, M, G or T "
                            "(e.g. --mem=4G; no unit means M)",
                            text.substr(0, 64)));
  const long long v = std::stoll(m[1]);
  const char unit = m[2].matched && m[2].length() ? static_cast<char>(std::toupper(m[2].str()[0])) : 'M';
  long long mb = unit == 'K' ? (v + 1023) / 1024 : unit == 'G' ? v * 1024 : unit == 'T' ? v * 1024 * 1024 : v;
  if (mb < 1 || mb > (1LL << 32))
    return fail(fmt::format("--mem \"{}\" is {} MB: give at least 1 MB", text, mb));
  return mb;
}

std::string slurm_duration(long long s) {
  if (s < 0) s = 0;
  if (s >= 86400) return fmt::format("{}-{:02}:{:02}:{:02}", s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
  return fmt::format("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
}

Partition seed_partition() {
  Partition p;
  p.name = "main";
  p.time_limit_s = 3600;
  p.default_time_s = 600;
  p.cpus = 4;
  p.memory_mb = 8192;
  p.gpus = 0;
  return p;
}

tl::expected<BatchLimits, BatchRefusal> settle_batch(const BatchAsk& ask, const Partition& p) {
  auto refuse = [](std::string option, std::string message) {
    return tl::unexpected(BatchRefusal{std::move(option), std::move(message)});
  };
  BatchLimits out;
  out.time_s = p.default_time_s;
  if (!ask.time.empty()) {
    auto t = parse_slurm_time(ask.time);
    if (!t) return refuse("--time", t.error().message);
    if (*t > p.time_limit_s)
      return refuse("--time", fmt::format("--time={} ({}) is over partition {}'s time limit of {}: ask for {} or less "
                                          "(#SBATCH --time={}), or split the work into several jobs",
                                          ask.time, slurm_duration(*t), p.name, slurm_duration(p.time_limit_s),
                                          slurm_duration(p.time_limit_s), slurm_duration(p.time_limit_s)));
    out.time_s = *t;
  }
  const int max_cpus = p.cpus > 0 ? p.cpus : 1;
  if (!ask.cpus.empty()) {
    long long c = 0;
    if (!whole(ask.cpus, 100000, c) || c < 1)
      return refuse("--cpus-per-task", fmt::format("--cpus-per-task \"{}\" is not a whole number of CPUs from 1",
                                                   ask.cpus.substr(0, 64)));
    if (c > max_cpus)
      return refuse("--cpus-per-task", fmt::format("--cpus-per-task={} is over partition {}'s {} CPUs: ask for {} "
                                                   "or fewer (#SBATCH --cpus-per-task={})",
                                                   c, p.name, max_cpus, max_cpus, max_cpus));
    out.cpus = static_cast<int>(c);
  }
  out.memory_mb = p.memory_mb > 0 ? p.memory_mb : seed_partition().memory_mb;
  if (!ask.mem.empty()) {
    auto m = parse_slurm_mem(ask.mem);
    if (!m) return refuse("--mem", m.error().message);
    if (p.memory_mb > 0 && *m > p.memory_mb)
      return refuse("--mem", fmt::format("--mem={} ({} MB) is over partition {}'s {} MB: ask for {}M or less "
                                         "(#SBATCH --mem={}M)",
                                         ask.mem, *m, p.name, p.memory_mb, p.memory_mb, p.memory_mb));
    out.memory_mb = *m;
  }
  if (!ask.gpus.empty()) {
    long long g = 0;
    if (!whole(ask.gpus, 1024, g))
      return refuse("--gres", fmt::format("--gres=gpu:{} is not a whole number of GPUs", ask.gpus.substr(0, 64)));
    if (g > p.gpus)
      return refuse("--gres", fmt::format("--gres=gpu:{} is over partition {}'s {} GPUs: {}", g, p.name, p.gpus,
                                          p.gpus == 0 ? "leave --gres out (this partition has no GPUs)"
                                                      : fmt::format("ask for gpu:{} or fewer", p.gpus)));
    out.gpus = static_cast<int>(g);
  }
  return out;
}

}  // namespace kzoo::board
