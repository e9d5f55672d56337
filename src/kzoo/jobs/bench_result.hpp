// The server-owned .kernel_package/bench_result.yaml, computed for an accept
// (seed kernel_package_format: only the server writes it; a submitted copy
// is never used). Pure functions; the worker hands next_bench_result to
// KernelRepo::accept as its BenchResultUpdate, so a racing accept into the
// same kernel is folded in and metrics_best never goes backwards.
//
// Per case of the benchmark document that has metrics:
//   metrics_current = the case's metrics (numbers only; null values dropped);
//   metrics_best[m] = metrics_current[m] when absent or better by the metric's
//                     direction (from KERNEL_ZOO_TEST_CASE_METAS of the trusted
//                     benchmark.py; a metric the metas do not name counts as
//                     "higher" unless its name ends in _us/_ms/_ns/_s/time);
//   best_commit     = `evidence_commit` when any best value changed. It names
//                     the refs/jobs/<id> commit holding the benchmark output
//                     that measured it: the accepting commit on main cannot
//                     name itself (its id hashes this file), and it carries
//                     that evidence id in its `Kzoo-Evidence:` trailer;
//   updated_at      = `now`.
// Cases of the current file that the run did not measure stay as they are.
// The result is validated against schemas/bench_result.schema.json.
//
// Only figures of the kernel's own device class enter it: a document whose
// `device_class` is not the kernel's arch (the first segment of its ID; a
// CPU run is class "cpu") leaves the file as it is. Why: a CPU worker timing
// the `measure` shapes of an h200 kernel wrote "GB/s 1.01" under the graded
// case IDs, shown as if it were the H200 figure. Such results are kept in the
// job's evidence and the API, labelled with the class that produced them.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::jobs {

// test_case_id -> metric name -> "higher" | "lower".
using Directions = std::map<std::string, std::map<std::string, std::string>>;

Directions directions_from_metas(const nlohmann::json& metas);

// The device class that produced `document` ("" when it does not say).
std::string document_device_class(const nlohmann::json& document);

// Empty when `document` may enter `kernel_id`'s bench_result.yaml; otherwise
// why not, in one sentence naming both device classes.
std::string foreign_device_reason(const nlohmann::json& document, const std::string& kernel_id);

Result<std::string> next_bench_result(const std::string& current_yaml, const std::string& kernel_id,
                                      const nlohmann::json& document, const Directions& directions,
                                      const std::string& evidence_commit, const std::string& now_iso);

// "2026-01-31T12:00:00Z" for now.
std::string utc_now_iso();

}  // namespace kzoo::jobs
