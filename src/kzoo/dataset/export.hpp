// The graded results as a dataset (issue 24 item 7, `kzoo export -o DIR`):
//
//   DIR/tasks.jsonl    one KBench task document (schemas/task.schema.json) a line,
//                      every task of the catalog, by name
//   DIR/results.jsonl  one record a line (schemas/export_result.schema.json) per
//                      case of every graded job (accepted or rejected by the
//                      judge's verdict), oldest job first
//
// Every figure is carried from what the service stored when it graded -- the
// judge's benchmark output and the verdict on the job and its submission, the
// board's check -- never measured or recomputed here, so a dataset says
// exactly what the board and the submitter were told. JSON Lines, and not
// Parquet: Debian 12's Apache Arrow C++ is not packaged in a form worth
// carrying for one writer (docs/formats.md, "Export"); any Parquet tool reads
// JSON Lines.
//
// Files are written beside their final names and renamed into place, so a
// reader never sees half a dataset; an existing DIR's other files are left alone.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::dataset {

inline constexpr const char* kResultSchemaVersion = "1";

struct ExportCounts {
  int tasks = 0;
  int jobs = 0;     // graded jobs exported
  int results = 0;  // case records written
};

// The records of one graded job: one per case of its benchmark output (none
// when it has none: an intake rejection, an infrastructure failure). `task`
// is the task the kernel names in its desc.yaml (empty: unknown).
std::vector<nlohmann::json> result_records(const store::Submission& sub, const store::Job& job,
                                           const std::string& task);

// The task a package names (desc.yaml reference_sources, kind task) at the
// repository's HEAD; empty when it names none or cannot be read.
std::string task_of(const store::KernelRepo& repo, const std::string& kernel_id);

// Writes DIR/tasks.jsonl (from `catalog_tasks_dir`/<name>/task.json; none when
// the directory is empty or absent) and DIR/results.jsonl.
Result<ExportCounts> export_dataset(store::StateDb& db, const store::KernelRepo& repo,
                                    const std::string& catalog_tasks_dir, const std::string& out_dir);

}  // namespace kzoo::dataset
