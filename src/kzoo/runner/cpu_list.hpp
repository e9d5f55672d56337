// Linux's CPU list format, "0-3,8,10-11": what sysfs writes in local_cpulist
// and thread_siblings_list, and what taskset -c and numactl take.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

// The kernel's own limit on CPU numbers (NR_CPUS at its largest).
inline constexpr int kMaxCpu = 8191;

// Ascending, each CPU once. A trailing newline (as sysfs writes) is allowed;
// an empty text is an empty list. Strides ("0-31:2") are not sysfs output and
// are refused, as is anything else that is not a list, naming the item.
Result<std::vector<int>> parse_cpu_list(std::string_view text);

// The shortest list for `cpus` (any order, duplicates ignored): "0-3,8".
std::string format_cpu_list(std::vector<int> cpus);

}  // namespace kzoo::runner
