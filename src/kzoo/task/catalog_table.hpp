// The catalog's table in docs/TASKS.md, generated from the catalog so that it
// cannot drift from the tasks it describes: one row per task (its metric and
// canonical work, comparator, tier, the roofline of its largest graded shape
// on a device class) and the eager packages in kernel_data that name it.
// `kzoo task table --check docs/TASKS.md` fails when the file's copy, between
// the two marker lines, is not what the catalog gives now.
#pragma once

#include <string>
#include <string_view>

#include "kzoo/task/lint.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::task {

inline constexpr std::string_view kTableBegin =
    "<!-- kzoo task table: generated from the catalog by `kzoo task table --update docs/TASKS.md`; do not edit -->";
inline constexpr std::string_view kTableEnd = "<!-- kzoo task table: end -->";

// The Markdown table (and the list of eager packages) for the catalog at
// `catalog_dir` (holding tasks/ and kernel_data/). Fails naming a task that
// does not load.
Result<std::string> render_catalog_table(const std::string& catalog_dir, const DeviceClass& device);

// `document` with the text between the marker lines replaced by `table`.
// Fails when the markers are missing or out of order.
Result<std::string> replace_catalog_table(std::string_view document, std::string_view table, const std::string& where);

}  // namespace kzoo::task
