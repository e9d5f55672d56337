// `kzoo task new NAME`: a task to start from, written into a catalog.
//
// The skeleton is a complete, small task (a float32 SiLU, y = x * sigmoid(x))
// rather than blanks to fill: it passes the schema, calibrates, lints clean
// once calibrated, scaffolds and grades, so a maintainer replaces working
// parts one at a time and sees at each step what broke. It writes
//   CATALOG/tasks/NAME/task.json       the reference stub, interface, workloads, metric, tolerance
//   CATALOG/tasks/NAME/independent.py  independent(*inputs): another correct way (float64)
//   CATALOG/tasks/NAME/drop.py         drop(*inputs): a variant that skips the point
// and, in a CATALOG that does not exist yet, the rest of a catalog's layout:
// tasks/, kernel_data/ with its .kernel_data marker, and device_classes.json
// (a copy of the source tree's), so `kzoo task scaffold` and `kzoo grade`
// find what they need there.
#pragma once

#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::task {

struct SkeletonWritten {
  std::string task_dir;            // CATALOG/tasks/NAME
  std::vector<std::string> files;  // every file written, catalog layout included
};

// The Python function name a task NAME gets (dashes become underscores; a
// leading digit gets the prefix "op_").
std::string entry_point_for(const std::string& name);

// The three files' text, for NAME.
std::string skeleton_task_json(const std::string& name);
std::string skeleton_independent_py(const std::string& name);
std::string skeleton_drop_py(const std::string& name);

// Writes the skeleton. Refuses, writing nothing, a NAME the schema refuses
// (^[a-z0-9]+(-[a-z0-9]+)*$) and a task folder that exists already.
Result<SkeletonWritten> write_task_skeleton(const std::string& catalog_dir, const std::string& name);

}  // namespace kzoo::task
