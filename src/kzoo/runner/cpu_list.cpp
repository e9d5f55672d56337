#include "kzoo/runner/cpu_list.hpp"

#include <algorithm>
#include <charconv>

namespace kzoo::runner {
namespace {

Result<int> cpu_number(std::string_view s, std::string_view item) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxCpu)
    return fail("\"" + std::string(item) + "\" is not a CPU or a range of CPUs (0-" + std::to_string(kMaxCpu) +
                ", e.g. 0-3 or 8)");
  return v;
}

}  // namespace

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  std::vector<int> out;
  if (text.empty()) return out;
  std::vector<bool> seen(kMaxCpu + 1);  // bounded whatever the text repeats
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t dash = item.find('-');
    auto lo = cpu_number(item.substr(0, dash), item);
    if (!lo) return tl::unexpected(lo.error());
    int hi_v = *lo;
    if (dash != std::string_view::npos) {
      auto hi = cpu_number(item.substr(dash + 1), item);
      if (!hi) return tl::unexpected(hi.error());
      if (*hi < *lo) return fail("\"" + std::string(item) + "\" is a range that runs backwards: write it low-high");
      hi_v = *hi;
    }
    for (int c = *lo; c <= hi_v; ++c) seen[c] = true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (int c = 0; c <= kMaxCpu; ++c)
    if (seen[c]) out.push_back(c);
  return out;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace kzoo::runner
