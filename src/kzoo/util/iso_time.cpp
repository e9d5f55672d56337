#include "kzoo/util/iso_time.hpp"

#include <ctime>

#include <fmt/format.h>

namespace kzoo {

std::string iso8601_utc(std::int64_t ms, bool millis) {
  // Floor division, so that -1 ms is 1969-12-31T23:59:59.999Z.
  std::int64_t s = ms / 1000, rest = ms % 1000;
  if (rest < 0) {
    s -= 1;
    rest += 1000;
  }
  std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return millis ? fmt::format("{}.{:03d}Z", buf, static_cast<int>(rest)) : fmt::format("{}Z", buf);
}

}  // namespace kzoo
