#include "kzoo/task/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/format/json_edit.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/task/task.hpp"
#include "kzoo/util/process.hpp"
#include "kzoo/util/text_file.hpp"

extern char** environ;  // the environment the judge's Python inherits

namespace kzoo::task {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The probe: the judge's own pieces (task loading, inputs from the calibration
// seeds, the float reference, the comparator's measure), every variant at
// every shape and seed, one JSON document on stdout. The seeds are derived as
// kzoo_judge.calibrate derives them, so E and D stay reproducible.
constexpr const char* kProbe = R"PY(
import glob, hashlib, json, math, os, sys
import torch
from kzoo_judge import compare, inputs, reference
from kzoo_judge import task as taskmod
from kzoo_judge.calibrate import _load_fn, _run

task_dir, device, seeds, workload = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
task = taskmod.load(os.path.join(task_dir, "task.json"))
ref = reference.load(task)
variants = []
for role in ("independent", "drop"):
    for path in sorted(glob.glob(os.path.join(task_dir, role + "*.py"))):
        variants.append((role, os.path.basename(path), _load_fn(path, role)))
wname, w = task.workload(workload)
listed = [("correctness", i, s) for i, s in enumerate(w.get("correctness", []))]
timing = "graded" if device != "cpu" else "measure"
if w.get(timing):
    listed.append((timing, 0, w[timing][0]))
secret = inputs.Secret(hashlib.sha256(("kzoo-calibrate/" + task.name).encode()).digest())
specs = reference.expected_specs(task)
shapes = []
for si, (kind, index, raw) in enumerate(listed):
    dims = task.bind(w, raw)
    row = {"list": kind, "index": index, "shape": raw, "measures": {name: [] for _, name, _ in variants}}
    for k in range(seeds):
        x = inputs.make_inputs(task, dims, secret.derive("calibrate", si, k), device)
        exp = reference.run(ref, task, x)
        for role, name, fn in variants:
            m = float(compare.measure(_run(fn, task, x), exp, specs, task.comparator, task.row_pass))
            row["measures"][name].append(m if math.isfinite(m) else None)
    shapes.append(row)
json.dump({"workload": wname, "comparator": task.comparator, "device": device, "torch": torch.__version__,
           "seeds": seeds, "variants": [{"role": r, "file": n} for r, n, _ in variants], "shapes": shapes},
          sys.stdout)
)PY";

std::string judge_dir_of(const CalibrateOptions& o) {
  return o.judge_dir.empty() ? std::string(KZOO_SOURCE_DIR) + "/judge" : o.judge_dir;
}

// The current environment with PYTHONPATH led by the judge directory.
std::vector<std::string> child_env(const std::string& judge_dir) {
  std::vector<std::string> env;
  std::string pythonpath = judge_dir;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      std::string old = kv.substr(11);
      if (!old.empty()) pythonpath += ":" + old;
      continue;
    }
    env.push_back(std::move(kv));
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("PYTHONDONTWRITEBYTECODE=1");  // keep the source tree clean
  return env;
}

std::string shape_label(const json& row) {
  return fmt::format("{}[{}] {}", row.value("list", "?"), row.value("index", 0),
                     row.contains("shape") ? row["shape"].dump() : "?");
}

bool has_variant(const std::string& dir, const std::string& role) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file(ec) && n.rfind(role, 0) == 0 && n.ends_with(".py")) return true;
  }
  return false;
}

// Below this a drop is taken to reproduce the reference: its differences are
// rounding, not the task's feature.
constexpr double kAboutZero = 1e-12;

}  // namespace

std::vector<std::string> calibrate_argv(const CalibrateOptions& o) {
  return {o.python, "-c", kProbe, o.task_dir, o.device, std::to_string(o.seeds), o.workload};
}

Result<Calibration> summarise_calibration(const json& probe, const std::string& task_file, double tolerance,
                                          bool exact) {
  Calibration c;
  c.task_file = task_file;
  c.tolerance = tolerance;
  c.exact = exact;
  if (!probe.is_object() || !probe.contains("variants") || !probe["variants"].is_array() ||
      !probe.contains("shapes") || !probe["shapes"].is_array())
    return fail("the calibration probe printed no figures (expected {variants, shapes}); kzoo bug or a judge too old");
  c.workload = probe.value("workload", "");
  c.comparator = probe.value("comparator", "");
  c.device = probe.value("device", "");
  c.torch_version = probe.value("torch", "");
  c.seeds = probe.value("seeds", 0);
  for (const auto& v : probe["variants"])
    (v.value("role", "") == "independent" ? c.independents : c.drops).push_back(v.value("file", "?"));
  if (c.independents.empty() || c.drops.empty())
    return fail("calibration needs at least one independent*.py (defines independent(*inputs)) and one drop*.py "
                "(defines drop(*inputs)) beside task.json; see docs/TASKS.md, Calibration");
  if (probe["shapes"].empty())
    return fail(task_file + ": the workload " + c.workload + " has no correctness shape to calibrate at");
  c.E = 0;
  c.D = INFINITY;
  for (const auto& row : probe["shapes"]) {
    ShapeCalibration s;
    s.label = shape_label(row);
    s.D = INFINITY;
    const json measures = row.value("measures", json::object());
    for (const auto& [role, files] : {std::pair{"independent", &c.independents}, std::pair{"drop", &c.drops}})
      for (const auto& f : *files) {
        if (!measures.contains(f) || !measures[f].is_array() || measures[f].empty())
          return fail(fmt::format("the probe measured no {} at {}", f, s.label));
        for (const auto& m : measures[f]) {
          if (!m.is_number() || !std::isfinite(m.get<double>()))
            return fail(fmt::format("{} gives a non-finite error at {} ({}): check that it computes the task's "
                                    "outputs, in their order and shapes",
                                    f, s.label, m.dump()));
          const double x = m.get<double>();
          if (std::string(role) == "independent" && x >= s.E) {
            s.E = x;
            s.E_variant = f;
          } else if (std::string(role) == "drop" && x < s.D) {
            s.D = x;
            s.D_variant = f;
          }
        }
      }
    if (s.E_variant.empty()) s.E_variant = c.independents.front();
    if (s.E >= c.E) {
      c.E = s.E;
      c.E_shape = s.label;
      c.E_variant = s.E_variant;
    }
    if (s.D < c.D) {
      c.D = s.D;
      c.D_shape = s.label;
      c.D_variant = s.D_variant;
    }
    c.shapes.push_back(std::move(s));
  }
  c.range = tolerance_range(c.E, c.D);
  c.basis = fmt::format(
      "`kzoo task calibrate`: {} seeds x {} shapes of workload {} (correctness shapes + one {} shape), device {}, torch {}; E = largest {} "
      "measure of {} vs the reference, D = smallest of {} vs the reference",
      c.seeds, c.shapes.size(), c.workload, c.device == "cpu" ? "measure" : "graded", c.device, c.torch_version,
      c.comparator, fmt::join(c.independents, ", "), fmt::join(c.drops, ", "));
  return c;
}

std::vector<std::string> Calibration::refusals(const ToleranceRule& rule) const {
  std::vector<std::string> out;
  const ToleranceRange r = tolerance_range(E, D, rule);
  auto num = tolerance_number;
  // The exact comparator has no threshold to place, but a drop it cannot tell
  // from the reference still grades nothing.
  const bool broken = exact ? !(D > kAboutZero) : (r.empty() || !(D > kAboutZero));
  if (!broken) return out;
  // Each side is blamed where it fails against the other side at its best
  // (the smallest E, the largest D seen at any shape), so that a drop that
  // reproduces the reference is not mistaken for an independent that strays.
  double best_E = INFINITY, best_D = 0;
  for (const auto& s : shapes) {
    best_E = std::min(best_E, s.E);
    best_D = std::max(best_D, s.D);
  }
  std::vector<std::string> too_close, too_far;
  for (const auto& s : shapes) {
    if (!(s.D > kAboutZero) || (!exact && !(s.D / rule.drop_ratio > best_E * rule.floor_margin)))
      too_close.push_back(fmt::format("{} (D {} by {})", s.label, num(s.D), s.D_variant));
    if (!exact && !(s.E * rule.floor_margin < best_D / rule.drop_ratio))
      too_far.push_back(fmt::format("{} (E {} by {})", s.label, num(s.E), s.E_variant));
  }
  if (!too_close.empty())
    out.push_back(fmt::format(
        "{} reproduces the reference{}at {}: a drop must differ from the reference at every shape, or the task's "
        "feature is not graded there; change the drop, or remove the shapes where it coincides by construction "
        "(docs/TASKS.md, Calibration)",
        fmt::join(drops, ", "), exact ? " " : " too closely (D/" + num(rule.drop_ratio) + " is not above 2E) ",
        fmt::join(too_close, "; ")));
  if (!too_far.empty())
    out.push_back(fmt::format(
        "{} differs from the reference by as much as a drop at {}: an independent implementation must agree with "
        "the reference up to rounding; fix it, or the reference",
        fmt::join(independents, ", "), fmt::join(too_far, "; ")));
  if (out.empty())
    out.push_back(fmt::format("the allowed range ({}, {}) is empty (E {} at {}, D {} at {})", num(r.low), num(r.high),
                              num(E), E_shape, num(D), D_shape));
  return out;
}

json Calibration::to_json(const ToleranceRule& rule) const {
  json rows = json::array();
  for (const auto& s : shapes)
    rows.push_back({{"shape", s.label}, {"E", s.E}, {"E_variant", s.E_variant}, {"D", s.D}, {"D_variant", s.D_variant}});
  const ToleranceRange r = tolerance_range(E, D, rule);
  auto refused = refusals(rule);
  return json{{"task", task_file},
              {"workload", workload},
              {"comparator", comparator},
              {"device", device},
              {"independents", independents},
              {"drops", drops},
              {"shapes", rows},
              {"measured_floor_E", E},
              {"E_shape", E_shape},
              {"E_variant", E_variant},
              {"measured_drop_D", D},
              {"D_shape", D_shape},
              {"D_variant", D_variant},
              {"allowed", exact ? json() : json{{"above", r.low}, {"below", r.high}}},
              {"tolerance", tolerance},
              {"tolerance_ok", exact ? json() : json(r.contains(tolerance))},
              {"basis", basis},
              {"writable", refused.empty()},
              {"refusals", refused}};
}

Result<Calibration> run_calibrate(const CalibrateOptions& o) {
  std::error_code ec;
  if (o.device != "cpu" && o.device != "cuda") {
    return fail("--device must be cpu or cuda, not \"" + o.device + "\"");
  }
  if (!fs::is_directory(o.task_dir, ec)) {
    return fail(o.task_dir + ": not a directory; give the task's folder (catalog/tasks/<name>)");
  }
  if (!fs::is_regular_file(fs::path(o.task_dir) / "task.json", ec))
    return fail(o.task_dir + ": task.json is missing; `kzoo task new NAME` writes a skeleton");
  for (const char* role : {"independent", "drop"}) {
    if (!has_variant(o.task_dir, role)) {
      return fail(o.task_dir + ": " + role + ".py is missing; calibration compares the reference with each "
                  "independent*.py (defines independent(*inputs)) and drop*.py (defines drop(*inputs)), see "
                  "docs/TASKS.md");
    }
  }
  const std::string task_file = (fs::path(o.task_dir) / "task.json").string();
  auto task = load_task(task_file);
  if (!task) return fail(to_string(task.error().front()) + (task.error().size() > 1 ? " (and more: kzoo task lint)" : ""));
  if (access(o.python.c_str(), X_OK) != 0) {
    return fail(o.python + " is not an executable Python; install Debian's python3 and python3-torch "
                "(scripts/install-deps.sh) or pass --python");
  }
  const std::string judge = judge_dir_of(o);
  if (!fs::is_regular_file(fs::path(judge) / "kzoo_judge" / "__init__.py", ec)) {
    return fail(judge + "/kzoo_judge is missing: the judge package is not there; pass --judge-dir");
  }
  ProcessOptions quiet;
  quiet.env = child_env(judge);
  quiet.capture_stdout = false;
  quiet.quiet_stderr = true;
  auto torch = run_process({o.python, "-c", "import torch"}, quiet);
  if (!torch) return tl::unexpected(torch.error());
  if (torch->status != 0) {
    return fail(o.python + " cannot import torch; install python3-torch (Debian) or pass --python pointing to an "
                "interpreter that has it");
  }
  auto judge_ok = run_process({o.python, "-c", "import kzoo_judge.calibrate"}, quiet);
  if (!judge_ok) return tl::unexpected(judge_ok.error());
  if (judge_ok->status != 0) {
    return fail(judge + "/kzoo_judge does not import with " + o.python + " (run `PYTHONPATH=" + judge + " " +
                o.python + " -c 'import kzoo_judge.calibrate'` to see why)");
  }
  ProcessOptions probe;
  probe.env = quiet.env;  // stderr stays the user's: a traceback names the task's file and line
  auto ran = run_process(calibrate_argv(o), probe);
  if (!ran) return tl::unexpected(ran.error());
  if (ran->status != 0)
    return fail(fmt::format("measuring {} failed (the probe exited with status {}); its traceback above names the "
                            "file and line (the reference, independent*.py or drop*.py)",
                            o.task_dir, ran->status));
  auto doc = format::parse_json(ran->out, "the calibration probe's output", {64u << 20, 64});
  if (!doc) return fail(to_string(doc.error()));
  return summarise_calibration(*doc, task_file, task->tolerance.value, task->tolerance.comparator == "exact");
}

Result<void> write_calibration(const std::string& task_file, const Calibration& c, const ToleranceRule& rule) {
  auto refused = c.refusals(rule);
  if (!refused.empty())
    return fail(fmt::format("{}: not written, the calibration leaves no sound tolerance: {}", task_file,
                            fmt::join(refused, "; ")));
  auto read = read_text_file(task_file, 8u << 20);
  if (!read) return tl::unexpected(read.error());
  std::string text = std::move(*read);
  for (const auto& [key, value] : {std::pair<std::string, json>{"measured_floor_E", c.E},
                                   {"measured_drop_D", c.D}, {"basis", c.basis}}) {
    auto edited = format::set_json_member(text, {"grading", "tolerance"}, key, value, task_file);
    if (!edited) return tl::unexpected(edited.error());
    text = std::move(*edited);
  }
  // A sibling file renamed over the task: a reader never sees half of it.
  const std::string tmp = task_file + ".kzoo-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return fail("cannot write " + tmp + " beside " + task_file);
    }
  }
  std::error_code ec;
  fs::rename(tmp, task_file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fail("cannot replace " + task_file + ": " + ec.message());
  }
  return ok();
}

}  // namespace kzoo::task
