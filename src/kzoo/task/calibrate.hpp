// `kzoo task calibrate`: measures a task's error floor E (the reference
// against each independent*.py) and drop error D (against each drop*.py),
// shape by shape, and says where the tolerance may sit.
//
// The measurement is Python's (torch, the judge's own inputs, reference and
// comparator): kzoo runs a short probe with the judge on PYTHONPATH that
// prints, for every variant, its comparator measure at every shape and seed
// (correctness shapes plus one measure shape on the CPU, one graded shape on
// a GPU; the judge's calibration seeds, so figures are reproducible). The
// rest is here: E is the largest measure of any independent variant, D the
// smallest of any drop variant; the allowed range is tolerance.hpp's rule,
// the one lint enforces; and --write stores E, D and the basis into
// task.json in place (format/json_edit.hpp), refusing when the range is
// empty -- a drop that matches the reference, or an independent variant that
// does not -- and naming the shapes that emptied it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/task/tolerance.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::task {

struct CalibrateOptions {
  std::string task_dir;
  std::string device = "cpu";  // cpu | cuda
  bool write = false;
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch (LIBNOTES)
  std::string judge_dir;                    // holds kzoo_judge/; empty = <source>/judge
  int seeds = 4;
  std::string workload;  // empty: the judge's default (synthetic, else the first by name)
};

// One shape's figures: the worst of the independent variants and the best of
// the drop variants there, over the seeds.
struct ShapeCalibration {
  std::string label;        // "correctness[2] [1000, 4097]"
  double E = 0;
  std::string E_variant;    // "independent.py"
  double D = 0;
  std::string D_variant;    // "drop.py"
};

struct Calibration {
  std::string task_file;
  std::string workload, comparator, device, torch_version;
  int seeds = 0;
  std::vector<std::string> independents, drops;  // the variant files measured
  std::vector<ShapeCalibration> shapes;
  double E = 0, D = 0;
  std::string E_shape, D_shape;  // the shape that set each bound
  std::string E_variant, D_variant;
  double tolerance = 0;          // the task's grading.tolerance.value
  bool exact = false;            // the exact comparator: E and D bound no threshold (lint's rule too)
  ToleranceRange range;
  std::string basis;             // what task.json's tolerance.basis records

  // Why a --write is refused (empty: it may be written): the range is empty,
  // naming the shapes whose drop measure alone would empty it.
  std::vector<std::string> refusals(const ToleranceRule& rule = {}) const;
  nlohmann::json to_json(const ToleranceRule& rule = {}) const;
};

// The command line of the probe (argv[0] = python, the probe's source after -c).
std::vector<std::string> calibrate_argv(const CalibrateOptions& options);

// Checks the prerequisites (the task folder with task.json, at least one
// independent*.py and one drop*.py; the interpreter; the judge package; torch
// importable), runs the probe and summarises what it printed. An error says
// which prerequisite is missing and how to get it, or why the probe failed.
Result<Calibration> run_calibrate(const CalibrateOptions& options);

// The summary of the probe's document (pure: tests feed it crafted figures).
// Fails on a document that lacks figures or holds a non-finite measure,
// naming the variant and shape.
Result<Calibration> summarise_calibration(const nlohmann::json& probe, const std::string& task_file,
                                          double tolerance, bool exact);

// Stores E, D and the basis into `task_file`'s grading.tolerance, editing only
// those values. Refuses (and writes nothing) when calibration.refusals() is
// not empty, or the file cannot be read or written.
Result<void> write_calibration(const std::string& task_file, const Calibration& calibration,
                               const ToleranceRule& rule = {});

}  // namespace kzoo::task
