// `kzoo grade PATH`: grade a package (directory or .tar.gz) on this machine,
// sandboxed, with the catalog's trusted harness and the judge. Exit 0
// accepted, 1 rejected (violations, incorrect, gate, timeout, forged result),
// 2 error.
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include "kzoo/cli/command.hpp"
#include "kzoo/runner/grade.hpp"

namespace {

using kzoo::runner::GradeOptions;
using kzoo::runner::GradeOutcome;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The judge's stderr carries the submission's bytes: no terminal escapes.
std::string sanitise(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out.push_back((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c));
  return out;
}

std::string number(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  std::ostringstream ss;
  ss << std::setprecision(4) << v.get<double>();
  return ss.str();
}

void print_summary(const GradeOutcome& g) {
  std::cout << "kzoo grade: " << (g.kernel_id.empty() ? "?" : g.kernel_id) << ": " << to_string(g.status);
  if (!g.reason.empty()) std::cout << " — " << sanitise(g.reason);
  std::cout << "\n";
  for (const auto& v : g.violations) std::cout << "  " << sanitise(kzoo::to_string(v)) << "\n";
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
    std::cout << "\n";
    if (c.contains("gates") && c["gates"].is_object())
      for (auto& [name, gate] : c["gates"].items()) {
        std::cout << "      gate " << name << ": ";
        const char* key = gate.is_object() && gate.contains("passed") ? "passed" : "pass";
        if (gate.is_object() && gate.contains(key))
          std::cout << (gate[key] == true ? "passed" : "FAILED") << " (value " << number(gate.value("value", nlohmann::json()))
                    << ", limit " << number(gate.value("limit", nlohmann::json())) << ")";
        else
          std::cout << sanitise(gate.dump());
        std::cout << "\n";
      }
    if (c.contains("message") && c["message"].is_string() && !c["message"].get<std::string>().empty())
      std::cout << "      " << sanitise(c["message"].get<std::string>()) << "\n";
  }
}

struct Args {
  GradeOptions o;
  bool json = false;
  bool verbose = false;
  int timeout_s = 1800;
  int iterations = 0;
  std::vector<std::string> cases;
  std::string task;
};

const bool registered = kzoo::cli::register_command(
    "grade", "Grade a kernel package (directory or .tar.gz) locally: sandboxed run of the trusted harness and the judge",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto a = std::make_shared<Args>();
      a->o.catalog_dir = env_or("KZOO_CATALOG", std::string(KZOO_SOURCE_DIR) + "/catalog");
      a->o.judge_dir = env_or("KZOO_JUDGE_DIR", std::string(KZOO_SOURCE_DIR) + "/judge");
      a->o.python = env_or("KZOO_PYTHON", "/usr/bin/python3");
      sub.add_option("PATH", a->o.package_path, "package directory or .tar.gz")->required();
      sub.add_option("--device", a->o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      sub.add_flag("--json", a->json, "print exactly one JSON document on stdout");
      sub.add_flag("--no-sandbox", [a](std::int64_t) { a->o.sandboxed = false; },
                   "run without bubblewrap (trusted local code only; limits still apply)");
      sub.add_option("--catalog", a->o.catalog_dir, "catalog directory (tasks/, kernel_data/); default $KZOO_CATALOG or the source tree's");
      sub.add_option("--task", a->task, "task JSON to use instead of desc.yaml's reference");
      sub.add_option("--timeout", a->timeout_s, "benchmark.py wall-clock limit in seconds")->check(CLI::Range(1, 86400));
      sub.add_option("--iterations", a->iterations, "timed iterations per batch (KZOO_OPTIONS)")->check(CLI::Range(1, 1000000));
      sub.add_option("--cases", a->cases, "grade only these test case IDs (comma-separated; KZOO_OPTIONS)")
          ->delimiter(',');
      sub.add_flag("--keep-workdir", a->o.keep_workdir, "keep the workdir and print its path");
      sub.add_option("--python", a->o.python, "python interpreter inside the sandbox (default $KZOO_PYTHON or /usr/bin/python3)");
      sub.add_option("--judge-dir", a->o.judge_dir, "directory holding kzoo_judge/ (default $KZOO_JUDGE_DIR or the source tree's)");
      sub.add_flag("-v,--verbose", a->verbose, "stream the judge's stderr (sanitised) while it runs");
      return [a] {
        GradeOptions& o = a->o;
        o.timeout = std::chrono::seconds(a->timeout_s);
        if (a->iterations > 0) o.iterations = a->iterations;
        if (!a->cases.empty()) {
          if (!o.judge_options.is_object()) o.judge_options = nlohmann::json::object();
          o.judge_options["cases"] = a->cases;
        }
        if (!a->task.empty()) o.task_file = a->task;
        o.progress = [](std::string_view line) { std::cerr << "kzoo grade: " << line << "\n"; };
        if (a->verbose) o.on_stderr = [](std::string_view s) { std::cerr << sanitise(s); };
        auto g = kzoo::runner::grade(o);
        for (const auto& w : g.warnings) std::cerr << "kzoo grade: warning: " << sanitise(w) << "\n";
        if (!g.workdir.empty()) std::cerr << "kzoo grade: workdir kept at " << g.workdir << "\n";
        if (g.status != kzoo::runner::GradeStatus::accepted && !g.stderr_tail.empty() && !a->verbose &&
            g.reason.find(g.stderr_tail) == std::string::npos)
          std::cerr << "kzoo grade: the run's stderr ends:\n" << sanitise(g.stderr_tail) << "\n";
        if (a->json) {
          if (g.document.is_object()) {
            std::cout << g.document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
          } else {
            nlohmann::json j{{"status", to_string(g.status)}, {"reason", g.reason}, {"kernel_id", g.kernel_id},
                             {"violations", kzoo::to_json(g.violations)}};
            std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
          }
        } else {
          print_summary(g);
        }
        return kzoo::runner::exit_code(g.status);
      };
    });

}  // namespace
