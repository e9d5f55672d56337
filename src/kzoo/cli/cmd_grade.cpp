// `kzoo grade PATH [--against INCUMBENT]`: grade a package (directory or
// .tar.gz) on this machine the way the service's worker grades a submission
// (local/local_grade.hpp): the trusted harness, the A/B against an incumbent,
// the board's rules and the worker's own decision; with --baseline, as the
// worker decides a `kind: baseline` check. Exit 0 accepted, 1
// rejected (violations, incorrect, gate, guardrail, not faster, timeout,
// forged result), 2 error or refused (a device the task's environment rules
// out).
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/local/local_grade.hpp"
#include "kzoo/package/kernel_id.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/worker/device_class.hpp"

namespace cmd_grade {  // per command: a unity build joins commands (CMakeLists.txt)

namespace fs = std::filesystem;
using kzoo::runner::GradeOutcome;
using nlohmann::json;

using kzoo::cli::env_or;

// The judge's stderr carries the submission's bytes: no terminal escapes.
std::string sanitise(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out.push_back((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c));
  return out;
}

std::string number(const json& v) {
  if (!v.is_number()) return "-";
  std::ostringstream ss;
  ss << std::setprecision(4) << v.get<double>();
  return ss.str();
}

void print_cases(const GradeOutcome& g) {
  if (!g.document.is_object()) return;
  const auto& d = g.document;
  std::cout << "  arch " << d.value("arch", "?") << ", runner " << d.value("runner_id", "?") << ", ran at "
            << d.value("ran_at", "?") << ", build " << (d["overall"].value("build_ok", false) ? "ok" : "FAILED") << "\n";
  for (const auto& c : d["cases"]) {
    std::cout << "  " << std::left << std::setw(24) << c.value("test_case_id", "?") << " " << std::setw(9)
              << c.value("status", "?");
    if (c.contains("metrics") && c["metrics"].is_object())
      for (auto& [k, v] : c["metrics"].items()) std::cout << " " << k << "=" << number(v);
    if (c.contains("spread") && c["spread"].is_number()) std::cout << " spread=" << number(c["spread"]);
    if (c.contains("error_rel") && c["error_rel"].is_number()) std::cout << " err_rel=" << number(c["error_rel"]);
    if (c.contains("speedup") && c["speedup"].is_object())
      std::cout << " speedup=" << number(c["speedup"].value("value", json())) << "x ("
                << c["speedup"].value("faster_pairs", json()).dump() << "/" << c["speedup"].value("pairs", json()).dump()
                << " pairs faster)";
    std::cout << "\n";
    if (c.contains("gates") && c["gates"].is_object())
      for (auto& [name, gate] : c["gates"].items()) {
        std::cout << "      gate " << name << ": ";
        const char* key = gate.is_object() && gate.contains("passed") ? "passed" : "pass";
        if (gate.is_object() && gate.contains(key))
          std::cout << (gate[key] == true ? "passed" : "FAILED") << " (value " << number(gate.value("value", json()))
                    << ", limit " << number(gate.value("limit", json())) << ")";
        else
          std::cout << sanitise(gate.dump());
        std::cout << "\n";
      }
    if (c.contains("message") && c["message"].is_string() && !c["message"].get<std::string>().empty())
      std::cout << "      " << sanitise(c["message"].get<std::string>()) << "\n";
  }
}

void print_grade(const kzoo::local::LocalGrade& g) {
  std::cout << "kzoo grade: " << (g.kernel_id.empty() ? "?" : g.kernel_id) << ": " << sanitise(g.summary) << "\n";
  for (const auto& v : g.graded.violations) std::cout << "  " << sanitise(kzoo::to_string(v)) << "\n";
  print_cases(g.graded);
  if (g.decision) {
    const auto& d = *g.decision;
    for (const auto& r : d.reasons) std::cout << "  reason: " << sanitise(r) << "\n";
    for (const auto& n : d.verdict.notes) std::cout << "  note: " << sanitise(n) << "\n";
    if (d.verdict.geomean_speedup)
      std::cout << fmt::format("  A/B: {:.4f}x over the incumbent (bar {:.4f}x), faster in {} of {} pairs, sign-test p "
                               "{:.4f}\n",
                               *d.verdict.geomean_speedup, *d.verdict.required_speedup, d.verdict.faster_pairs,
                               d.verdict.pairs, d.verdict.sign_test_p.value_or(1.0));
    std::cout << "  board check: " << (d.check_passed ? "passes" : "does not pass");
    for (const auto& n : d.board_notes) std::cout << "; " << n;
    std::cout << "\n";
  }
  for (const auto& n : g.notes) std::cout << "  note: " << n << "\n";
}

struct Args {
  kzoo::local::LocalGradeOptions o;
  std::string path, kernel_id, root, against, catalog, task, rules_file;
  bool json = false, verbose = false, no_rules = false;
  int timeout_s = 1800;
  int iterations = 0;
  double min_gain = -1, max_p = -1;
  std::vector<std::string> cases;
  std::string judge_options;  // JSON object of KZOO_OPTIONS keys (diagnostics)
  std::string warm = "auto";  // --warm-judge auto|on|off
};

// A package directory (its kernel ID from --root, its .kernel_data root, or
// --kernel-id) or a tarball (its top-level directory, which --kernel-id must match).
kzoo::Result<kzoo::local::PackageInput> read_input(const std::string& path, const Args& a) {
  kzoo::local::PackageInput in;
  in.display = path;
  std::optional<std::string> want = a.kernel_id.empty() ? std::nullopt : std::optional(a.kernel_id);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto r = kzoo::cli::read_package_input(path, a.root.empty() ? std::nullopt : std::optional(a.root), want);
    if (!r) return tl::unexpected(r.error());
    in.kernel_id = r->kernel_id;
    in.tree = std::move(r->tree);
    in.violations = std::move(r->violations);
    return in;
  }
  if (!fs::is_regular_file(path, ec)) return kzoo::fail(path + " is neither a package directory nor a .tar.gz file");
  auto r = kzoo::package::read_package_tarball(path, want);
  if (!r) return tl::unexpected(r.error());
  in.kernel_id = r->kernel_id;
  in.tree = std::move(r->tree);
  in.violations = std::move(r->violations);
  return in;
}

// --catalog; else the catalog of the package's kernel_data root; else
// $KZOO_CATALOG; else the source tree's.
std::string catalog_for(const Args& a) {
  if (!a.catalog.empty()) return a.catalog;
  std::string root = a.root;
  if (root.empty() && fs::is_directory(a.path))
    if (auto r = kzoo::package::find_kernel_data_root(a.path)) root = *r;
  if (!root.empty())
    if (auto c = kzoo::local::catalog_of_root(root)) return *c;
  return env_or("KZOO_CATALOG", std::string(KZOO_SOURCE_DIR) + "/catalog");
}

// The device class the results belong to, as a worker on this machine would name it.
std::string device_class_for(const kzoo::local::DeviceFacts& device, const std::string& catalog,
                             std::vector<std::string>& warnings) {
  if (const char* env = std::getenv("KZOO_DEVICE_CLASS"); env && *env) return env;
  if (device.device == "cpu") return "cpu";
  const std::string path = catalog + "/device_classes.json";
  auto text = kzoo::cli::read_file(path, 1u << 20);
  if (!text) {
    warnings.push_back(text.error().message + ": cannot tell this GPU's device class; set KZOO_DEVICE_CLASS");
    return "";
  }
  auto table = kzoo::format::parse_json(*text, path);
  if (!table) {
    warnings.push_back(kzoo::to_string(table.error()));
    return "";
  }
  auto dc = kzoo::worker::pick_device_class(device.device, "", kzoo::worker::GpuInfo{device.gpu_name, ""}, *table, path);
  if (!dc) {
    warnings.push_back(dc.error().message);
    return "";
  }
  return *dc;
}

const bool registered = kzoo::cli::register_command(
    "grade",
    "Grade a kernel package (directory or .tar.gz) locally, as the service's worker does: sandboxed, with the "
    "trusted harness, the board's rules and, with --against, the A/B against an incumbent",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto a = std::make_shared<Args>();
      auto& g = a->o.grade;
      g.judge_dir = env_or("KZOO_JUDGE_DIR", std::string(KZOO_SOURCE_DIR) + "/judge");
      g.python = env_or("KZOO_PYTHON", "/usr/bin/python3");
      sub.add_option("PATH", a->path, "package directory or .tar.gz")->required();
      sub.add_option("--against", a->against, "the incumbent (a package directory or .tar.gz of the same kernel): "
                     "time both, A/B, and decide as the server does against its source at HEAD");
      sub.add_flag("--baseline", a->o.baseline, "grade the package as its kernel's eager baseline, as the worker "
                   "grades a `kind: baseline` submission: its check passes when it is correct within the board's "
                   "guardrails; the gates on vendor-library calls and the A/B do not decide it")
          ->excludes(sub.get_option("--against"));
      sub.add_option("--kernel-id", a->kernel_id, "the package's kernel ID, for a copy outside any kernel_data root");
      sub.add_option("--root", a->root, "the kernel_data root the package's kernel ID is relative to");
      sub.add_option("--device", g.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      sub.add_flag("--json", a->json, "print exactly one JSON document on stdout");
      sub.add_flag("--no-sandbox", [a](std::int64_t) { a->o.grade.sandboxed = false; },
                   "run without bubblewrap (trusted local code only; limits still apply)");
      sub.add_option("--catalog", a->catalog, "catalog directory (tasks/, kernel_data/); default: the one holding "
                     "the package's kernel_data root, else $KZOO_CATALOG or the source tree's");
      sub.add_option("--task", a->task, "task JSON to use instead of desc.yaml's reference");
      auto* rules = sub.add_option("--rules", a->rules_file, "the board's rules (a scienceslack.json) to hold the "
                                   "run to; default: the catalog's kernel_data/scienceslack.json, else kzoo init's");
      sub.add_flag("--no-rules", a->no_rules, "hold the run to no board rules (a project that declares none)")->excludes(rules);
      sub.add_option("--min-gain", a->min_gain, "smallest speed-up over the incumbent worth a commit (the worker's; "
                     "default 0.01)")->check(CLI::Range(0.0, 10.0));
      sub.add_option("--max-p", a->max_p, "largest sign-test probability that noise alone explains the A/B wins (the "
                     "worker's; default 0.01)")->check(CLI::Range(0.0, 1.0));
      sub.add_option("--timeout", a->timeout_s, "benchmark.py wall-clock limit in seconds")->check(CLI::Range(1, 86400));
      sub.add_option("--iterations", a->iterations, "timed iterations per batch, instead of the rules' (the check "
                     "then would not count on the board)")->check(CLI::Range(1, 1000000));
      sub.add_option("--cases", a->cases, "grade only these test case IDs (comma-separated; KZOO_OPTIONS)")->delimiter(',');
      sub.add_option("--judge-options", a->judge_options, "more KZOO_OPTIONS keys for the judge, as one JSON object "
                     "(docs/JUDGE.md lists them), e.g. '{\"trace\": true}' to log every timed call's figures: a "
                     "diagnostic; --cases and --iterations win over the same keys here");
      sub.add_flag("--keep-workdir", g.keep_workdir, "keep the workdir and print its path");
      sub.add_option("--warm-judge", a->warm, "start the judge (its interpreter, torch, CUDA context) while the "
                     "package is read and laid out: auto (default) on cuda, on, off")
          ->check(CLI::IsMember({"auto", "on", "off"}));
      sub.add_option("--python", g.python, "python interpreter inside the sandbox (default $KZOO_PYTHON or /usr/bin/python3)");
      sub.add_option("--judge-dir", g.judge_dir, "directory holding kzoo_judge/ (default $KZOO_JUDGE_DIR or the source tree's)");
      sub.add_flag("-v,--verbose", a->verbose, "stream the judge's stderr (sanitised) while it runs");
      return [a] {
        auto& o = a->o;
        auto& g = o.grade;
        o.warm = *kzoo::runner::parse_warm_mode(a->warm);  // CLI11 checked it
        auto fail = [&](const std::string& msg) {
          std::cerr << "kzoo grade: " << msg << "\n";
          if (a->json) kzoo::cli::print_json(std::cout, json{{"status", "error"}, {"reason", msg}});
          return kzoo::cli::kExitError;
        };
        g.timeout = std::chrono::seconds(a->timeout_s);
        if (!a->judge_options.empty()) {
          auto opts = kzoo::format::parse_json(a->judge_options, "--judge-options");
          if (!opts) return fail(kzoo::to_string(opts.error()) + " (pass one JSON object, e.g. '{\"trace\": true}')");
          if (!opts->is_object())
            return fail("--judge-options must be one JSON object of KZOO_OPTIONS keys (docs/JUDGE.md), e.g. "
                        "'{\"trace\": true}'; got " + opts->dump());
          g.judge_options = *opts;
        }
        if (a->iterations > 0) g.iterations = a->iterations;
        if (!a->cases.empty()) {
          if (!g.judge_options.is_object()) g.judge_options = json::object();
          g.judge_options["cases"] = a->cases;
        }
        if (a->min_gain >= 0) o.policy.min_gain = a->min_gain;
        if (a->max_p >= 0) o.policy.max_p = a->max_p;
        if (!a->task.empty()) o.task_file = a->task;
        o.catalog_dir = catalog_for(*a);
        g.catalog_dir = o.catalog_dir;
        g.progress = [](std::string_view line) { std::cerr << "kzoo grade: " << line << "\n"; };
        if (a->verbose) g.on_stderr = [](std::string_view s) { std::cerr << sanitise(s); };

        auto pkg = read_input(a->path, *a);
        if (!pkg) return fail(pkg.error().message);
        std::optional<kzoo::local::PackageInput> incumbent;
        if (!a->against.empty()) {
          Args inc = *a;
          inc.path = a->against;
          inc.root.clear();
          // An incumbent outside any kernel_data root is taken as the package's kernel.
          if (inc.kernel_id.empty() && !kzoo::package::find_kernel_data_root(a->against) &&
              !fs::is_regular_file(a->against))
            inc.kernel_id = pkg->kernel_id;
          auto r = read_input(a->against, inc);
          if (!r) return fail("the incumbent: " + r.error().message);
          incumbent = std::move(*r);
        }
        auto facts = kzoo::local::probe_device(g.device);
        if (!facts) return fail(facts.error().message);
        o.device = *facts;
        std::vector<std::string> warnings;
        o.device_class = device_class_for(*facts, o.catalog_dir, warnings);
        if (!a->no_rules) {
          auto rules = a->rules_file.empty()
                           ? kzoo::local::default_rules(o.catalog_dir, pkg->kernel_id, o.device_class.empty() ? "cpu" : o.device_class)
                           : [&]() -> kzoo::Result<kzoo::board::Rules> {
                               auto text = kzoo::cli::read_file(a->rules_file, 1u << 20);
                               if (!text) return tl::unexpected(text.error());
                               return kzoo::board::parse_rules(*text, a->rules_file);
                             }();
          if (!rules) return fail(rules.error().message);
          o.rules = std::move(*rules);
        }

        auto result = kzoo::local::grade_locally(*pkg, incumbent, o);
        result.graded.warnings.insert(result.graded.warnings.begin(), warnings.begin(), warnings.end());
        for (const auto& w : result.graded.warnings) std::cerr << "kzoo grade: warning: " << sanitise(w) << "\n";
        if (!result.graded.workdir.empty()) std::cerr << "kzoo grade: workdir kept at " << result.graded.workdir << "\n";
        if (result.status != kzoo::runner::GradeStatus::accepted && !result.graded.stderr_tail.empty() && !a->verbose &&
            result.graded.reason.find(result.graded.stderr_tail) == std::string::npos)
          std::cerr << "kzoo grade: the run's stderr ends:\n" << sanitise(result.graded.stderr_tail) << "\n";
        if (a->json) {
          // The judge's document stays the top level (scripts read its cases and overall), with what
          // kzoo decided from it beside; without one, the decision's own document.
          json j = result.to_json();
          if (result.graded.document.is_object()) {
            json doc = result.graded.document;
            j.erase("benchmark_output");
            doc["kzoo_grade"] = std::move(j);
            kzoo::cli::print_json(std::cout, doc);
          } else {
            kzoo::cli::print_json(std::cout, j);
          }
        } else {
          print_grade(result);
        }
        return kzoo::runner::exit_code(result.status);
      };
    });

}  // namespace
