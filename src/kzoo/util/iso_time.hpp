// Times as people and the formats read them: ISO 8601 in UTC.
#pragma once

#include <cstdint>
#include <string>

namespace kzoo {

// "2026-12-01T04:03:52Z" for `ms` milliseconds since the Unix epoch; with
// `millis`, "2026-12-01T04:03:52.120Z". Negative times are before 1970.
std::string iso8601_utc(std::int64_t ms, bool millis = false);

}  // namespace kzoo
