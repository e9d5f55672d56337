#include "kzoo/local/local_grade.hpp"

#include <cstdlib>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/util/temp_dir.hpp"
#include "kzoo/util/text_file.hpp"

namespace kzoo::local {

namespace fs = std::filesystem;
using nlohmann::json;
using runner::GradeStatus;

namespace {

// The task a desc.yaml names ({kind: task, ref: NAME}) in the catalog.
Result<std::string> named_task(const json& desc, const std::string& catalog, const std::string& desc_path) {
  static const std::regex kName("^[a-z0-9]+(-[a-z0-9]+)*$");
  if (desc.is_object() && desc.contains("reference_sources") && desc["reference_sources"].is_array())
    for (const auto& s : desc["reference_sources"]) {
      if (!s.is_object() || s.value("kind", "") != "task" || !s.contains("ref") || !s["ref"].is_string()) continue;
      const std::string ref = s["ref"];
      if (!std::regex_match(ref, kName))
        return fail(fmt::format("{} names the task \"{}\", which is not a task name", desc_path, ref));
      const std::string p = catalog + "/tasks/" + ref + "/task.json";
      if (!fs::is_regular_file(p))
        return fail(fmt::format("{} names the task \"{}\", but {} does not exist: pass --catalog DIR (the catalog "
                                "holding tasks/) or --task FILE",
                                desc_path, ref, p));
      return p;
    }
  return fail(desc_path + " names no task (reference_sources: [{kind: task, ref: NAME}]): add one or pass --task FILE");
}

package::PackageTree src_of(const package::PackageTree& tree) {
  package::PackageTree out;
  for (const auto& f : tree.files)
    if (f.path.rfind("src/", 0) == 0) out.files.push_back(f);
  for (const auto& d : tree.dirs)
    if (d == "src" || d.rfind("src/", 0) == 0) out.dirs.push_back(d);
  return out;
}

LocalGrade ended(LocalGrade g, GradeStatus s, std::string why) {
  g.status = s;
  g.graded.status = s;
  g.graded.reason = why;
  g.summary = std::string(runner::to_string(s)) + ": " + why;
  return g;
}

}  // namespace

std::optional<std::string> catalog_of_root(const std::string& root) {
  std::error_code ec;
  fs::path parent = fs::absolute(root, ec).lexically_normal();
  if (!parent.has_filename()) parent = parent.parent_path();  // a trailing slash
  parent = parent.parent_path();
  if (fs::is_directory(parent / "tasks", ec)) return parent.string();
  return std::nullopt;
}

Result<board::Rules> default_rules(const std::string& catalog_dir, const std::string& kernel_id,
                                   const std::string& device_class) {
  const std::string own = catalog_dir + "/kernel_data/" + board::kRulesFile;
  if (fs::is_regular_file(own)) {
    auto text = read_text_file(own, 1u << 20);
    if (!text) return tl::unexpected(text.error());
    return board::parse_rules(*text, own);
  }
  auto r = board::parse_rules(board::demo_rules({kernel_id}, device_class).dump(), "the rules kzoo init writes");
  if (!r) return fail("kzoo bug: " + r.error().message);
  return r;
}

LocalGrade grade_locally(const PackageInput& pkg, const std::optional<PackageInput>& incumbent,
                         const LocalGradeOptions& o) {
  LocalGrade g;
  g.kernel_id = pkg.kernel_id;
  g.graded.kernel_id = pkg.kernel_id;
  auto say = [&](const std::string& line) {
    if (o.grade.progress) o.grade.progress(line);
  };
  // Started first, so that its interpreter, torch and CUDA context come up while the
  // package is read, inspected and laid out, and its build step runs.
  std::unique_ptr<runner::WarmJudge> warm;
  if (runner::warm_wanted(o.warm, o.grade.device) && !o.grade.keep_workdir) {
    if (auto started = runner::WarmJudge::start(o.grade, incumbent.has_value()))
      warm = std::move(*started);
    else
      say("cannot start the judge ahead (" + started.error().message + "): benchmark.py starts cold");
  }

  auto inspection = package::inspect_tree(pkg.tree, pkg.kernel_id, pkg.display);
  Violations bad = pkg.violations;
  bad.insert(bad.end(), inspection.violations.begin(), inspection.violations.end());
  if (!bad.empty()) {
    g.graded.violations = bad;
    return ended(std::move(g), GradeStatus::rejected,
                 fmt::format("the package breaks {} rule(s); first: {}", bad.size(), to_string(bad.front())));
  }

  // The trusted harness: the catalog's package of this kernel, as the server
  // uses the repository's; the package's own only for a kernel it lacks.
  const package::PackageTree* harness = &pkg.tree;
  std::optional<package::LoadedTree> trusted;
  const std::string trusted_dir = o.catalog_dir + "/kernel_data/" + pkg.kernel_id;
  if (!o.catalog_dir.empty() && fs::is_directory(trusted_dir + "/.kernel_package")) {
    auto t = package::read_package_dir(trusted_dir);
    if (!t) return ended(std::move(g), GradeStatus::error, "cannot read the trusted package " + trusted_dir + ": " + t.error().message);
    trusted = std::move(*t);
    harness = &trusted->tree;
    g.trusted_harness = true;
    g.harness = trusted_dir;
    for (const char* f : package::kRequiredFiles) {
      auto* mine = pkg.tree.find(f);
      auto* theirs = harness->find(f);
      if (mine && theirs && mine->content != theirs->content && std::string(f) != ".kernel_package/bench_result.yaml")
        g.graded.warnings.push_back(fmt::format("the package's {} differs from the catalog's ({}); the catalog's is "
                                                "used, as the server uses the repository's",
                                                f, trusted_dir));
    }
  } else {
    g.harness = pkg.display;
    g.graded.warnings.push_back(fmt::format(
        "untrusted harness: the catalog {} has no package {}, so the package's own .kernel_package files run; the "
        "server runs the repository's",
        o.catalog_dir.empty() ? "(none)" : o.catalog_dir, pkg.kernel_id));
  }
  auto trusted_insp = package::inspect_tree(*harness, pkg.kernel_id, g.harness);

  // The task, from the catalog, named by the trusted desc.yaml.
  auto tpath = o.task_file ? Result<std::string>(*o.task_file)
                           : named_task(trusted_insp.desc, o.catalog_dir, g.harness + "/.kernel_package/desc.yaml");
  if (!tpath) return ended(std::move(g), GradeStatus::error, tpath.error().message);
  auto task_text = read_text_file(*tpath, 8u << 20);
  if (!task_text) return ended(std::move(g), GradeStatus::error, task_text.error().message);
  auto task = format::parse_json(*task_text, *tpath);
  if (!task) return ended(std::move(g), GradeStatus::error, "the task is not valid JSON: " + to_string(task.error()));

  auto env = check_task_environment(*task, *tpath, o.device);
  g.notes = env.notes;
  if (!env.refusals.empty()) {
    std::string why = env.refusals.front();
    for (std::size_t i = 1; i < env.refusals.size(); ++i) why += "; " + env.refusals[i];
    return ended(std::move(g), GradeStatus::error, "refused before running: " + why);
  }

  package::PackageTree inc_src;
  if (incumbent && o.baseline)
    return ended(std::move(g), GradeStatus::error,
                 "a baseline is measured, not compared: grade it without an incumbent (--baseline takes no --against)");
  if (incumbent) {
    if (incumbent->kernel_id != pkg.kernel_id)
      return ended(std::move(g), GradeStatus::error,
                   fmt::format("the incumbent {} is kernel {}, the package is {}: an A/B compares two sources of one "
                               "kernel (pass --kernel-id to both, or the right incumbent)",
                               incumbent->display, incumbent->kernel_id, pkg.kernel_id));
    if (!incumbent->violations.empty())
      return ended(std::move(g), GradeStatus::error,
                   fmt::format("cannot read the incumbent {}: {}", incumbent->display, to_string(incumbent->violations.front())));
    inc_src = src_of(incumbent->tree);
    if (inc_src.files.empty())
      return ended(std::move(g), GradeStatus::error, "the incumbent " + incumbent->display + " has no src/ file to compare with");
    g.had_incumbent = true;
  }

  auto tmp = TempDirectory::make("kzoo-grade-");
  if (!tmp) return ended(std::move(g), GradeStatus::error, tmp.error().message);
  if (o.grade.keep_workdir) tmp->keep();
  auto w = runner::lay_out_run(warm.get(), tmp->path() + "/w", *harness, pkg.tree, *task_text);
  if (!w) return ended(std::move(g), GradeStatus::error, w.error().message);

  runner::GradeOptions run = o.grade;
  const board::Rules* rules = o.rules ? &*o.rules : nullptr;
  const int timed_runs = board::timed_runs_for(rules, o.grade.iterations);
  run.judge_options = board::judge_options_for(run.judge_options, rules, o.grade.iterations);
  if (g.had_incumbent) {
    // Where the worker puts the source at HEAD, read-only as there.
    if (auto r = runner::add_incumbent(*w, inc_src, run); !r)
      return ended(std::move(g), GradeStatus::error, r.error().message);
  }
  if (!o.device_class.empty()) ::setenv("KZOO_DEVICE_CLASS", o.device_class.c_str(), 1);
  say(fmt::format("grading {} ({}, {}, {} timed runs{})", pkg.kernel_id,
                  o.baseline        ? "as its eager baseline"
                  : g.had_incumbent ? "A/B against " + incumbent->display
                                    : "no incumbent",
                  o.grade.device, timed_runs,
                  rules ? "" : ", no board rules"));
  std::vector<std::string> warnings = std::move(g.graded.warnings);
  g.graded = runner::grade_workdir(*w, pkg.kernel_id, run, warm.get());
  g.graded.kernel_id = pkg.kernel_id;
  g.graded.warnings.insert(g.graded.warnings.begin(), warnings.begin(), warnings.end());
  if (o.grade.keep_workdir) g.graded.workdir = w->root;
  if (g.graded.document.is_object() && !g.graded.document.contains("device_class") && !o.device_class.empty())
    g.graded.document["device_class"] = o.device_class;

  if (g.graded.document.is_object())
    g.decision = board::decide_run(
        {g.graded.document, trusted_insp.metas, g.had_incumbent, rules, timed_runs, o.baseline}, o.policy);
  if (g.graded.status == GradeStatus::error) {
    g.status = GradeStatus::error;
    g.summary = "error: " + g.graded.reason;
  } else if (!g.decision) {
    g.status = GradeStatus::rejected;
    g.summary = "rejected: " + g.graded.reason;
  } else {
    const auto& d = *g.decision;
    g.status = d.accepted ? GradeStatus::accepted : GradeStatus::rejected;
    // A baseline's check decides it, not the policy's verdict (which may refuse a gate a
    // baseline is allowed); a failed baseline check names no reason when a case is not correct.
    if (d.accepted)
      g.summary = o.baseline ? "the baseline's check passes: correct, within the board's guardrails" : d.verdict.summary;
    else
      g.summary = "rejected: " + (!d.reasons.empty() ? d.reasons.front()
                                  : "a case is not correct: " + (g.graded.reason.empty() ? d.verdict.summary : g.graded.reason));
  }
  return g;
}

json LocalGrade::to_json() const {
  json j{{"status", runner::to_string(status)},
         {"summary", summary},
         {"kernel_id", kernel_id},
         {"harness", harness},
         {"trusted_harness", trusted_harness},
         {"had_incumbent", had_incumbent},
         {"reason", graded.reason},
         {"warnings", graded.warnings},
         {"notes", notes},
         {"violations", kzoo::to_json(graded.violations)},
         {"decision", decision ? decision->to_json() : json()},
         {"benchmark_output", graded.document}};
  if (!graded.workdir.empty()) j["workdir"] = graded.workdir;
  return j;
}

}  // namespace kzoo::local
