// `kzoo task new | lint | calibrate | scaffold | table`: authoring KBench
// tasks and turning them into kernel packages. The work is in src/kzoo/task/;
// this file maps options to it and results to exit codes (0 ok, 1 invalid,
// 2 usage/I/O).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/task/calibrate.hpp"
#include "kzoo/task/catalog_table.hpp"
#include "kzoo/task/lint.hpp"
#include "kzoo/task/scaffold.hpp"
#include "kzoo/task/skeleton.hpp"
#include "kzoo/task/task.hpp"

namespace cmd_task {  // per command: a unity build joins commands (CMakeLists.txt)

using namespace kzoo;
using namespace kzoo::cli;
using nlohmann::json;
namespace fs = std::filesystem;

// Violations about the file as a whole that mean "could not read it" rather
// than "read it and it is wrong".
bool is_io_failure(const Violations& vs) { return vs.size() == 1 && vs[0].rule == "task.io"; }

// An error: one line on stderr, and with --json the same as a document.
int error(const std::string& verb, const std::string& message, bool as_json) {
  std::cerr << "kzoo task " << verb << ": " << message << "\n";
  if (as_json) print_json(std::cout, json{{"ok", false}, {"error", message}});
  return kExitError;
}

// The catalog a command works in by default: $KZOO_CATALOG, else ./catalog.
std::string default_catalog() {
  const char* env = std::getenv("KZOO_CATALOG");
  if (env && *env) {
    // kzoo serve's KZOO_CATALOG names the catalog's kernel_data root.
    fs::path p(env);
    if (fs::is_regular_file(p / ".kernel_data") && fs::is_directory(p.parent_path() / "tasks"))
      return p.parent_path().string();
    return env;
  }
  return "catalog";
}

const bool new_registered = register_command(
    "task new", "Write a task skeleton (task.json, independent.py, drop.py) into a catalog, ready to calibrate",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        std::string name, catalog = default_catalog();
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("NAME", o->name, "task name: lower-case words joined by dashes, e.g. fused-silu")->required();
      sub.add_option("--catalog", o->catalog, "catalog folder (tasks/, kernel_data/), created if absent (default "
                     "$KZOO_CATALOG or ./catalog)")->capture_default_str();
      sub.add_flag("--json", o->json, "print one JSON document on stdout");
      return [o] {
        auto w = task::write_task_skeleton(o->catalog, o->name);
        if (!w) return error("new", w.error().message, o->json);
        if (o->json) {
          print_json(std::cout, json{{"ok", true}, {"task_dir", w->task_dir}, {"files", w->files}});
        } else {
          for (const auto& f : w->files) std::cerr << "created " << f << "\n";
          std::cerr << fmt::format(
              "next: edit {0}/task.json (the reference, interface, workloads), independent.py and drop.py; then\n"
              "  kzoo task calibrate {0} --write\n  kzoo task lint {0}/task.json\n", w->task_dir);
          std::cout << w->task_dir << "\n";
        }
        return kExitOk;
      };
    });

const bool lint_registered = register_command(
    "task lint", "Check a KBench task: schema, expressions, rooflines, tolerance calibration, interface",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        std::string file;
        std::string device_class;
        std::string device_classes = task::default_device_classes_path();
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("TASK", o->file, "task JSON file")->required();
      sub.add_option("--device-class", o->device_class, "device class the rooflines are checked on (default: the "
                     "file's default, h200)");
      sub.add_option("--device-classes", o->device_classes, "device classes file")->capture_default_str();
      sub.add_flag("--json", o->json, "print one JSON document on stdout");
      return [o] {
        auto device = task::load_device_class(o->device_classes, o->device_class);
        if (!device) return error("lint", device.error().message, o->json);
        task::LintOptions options;
        options.device = *device;
        Violations vs = task::lint_task_file(o->file, options);
        if (o->json) {
          print_json(std::cout, json{{"file", o->file}, {"device_class", device->name}, {"ok", vs.empty()},
                                     {"violations", to_json(vs)}});
        } else {
          for (const auto& v : vs) std::cerr << to_string(v) << "\n";
          std::cerr << o->file << ": " << (vs.empty() ? "lint-clean" : std::to_string(vs.size()) + " violation(s)")
                    << " (device class " << device->name << ")\n";
        }
        if (is_io_failure(vs)) return kExitError;
        return vs.empty() ? kExitOk : kExitInvalid;
      };
    });

void print_calibration(const task::Calibration& c, bool wrote) {
  const auto& n = task::tolerance_number;
  std::cout << fmt::format("{}: workload {}, comparator {}, device {}, torch {}, {} seed(s) per shape\n", c.task_file,
                           c.workload, c.comparator, c.device, c.torch_version, c.seeds);
  std::cout << fmt::format("  independent: {}   drop: {}\n", fmt::join(c.independents, ", "), fmt::join(c.drops, ", "));
  std::size_t width = 5;
  for (const auto& s : c.shapes) width = std::max(width, s.label.size());
  std::cout << fmt::format("  {:<{}}  {:>11}  {:<22}  {:>11}  {}\n", "shape", width, "E", "(worst of)", "D", "(best of)");
  for (const auto& s : c.shapes)
    std::cout << fmt::format("  {:<{}}  {:>11}  {:<22}  {:>11}  {}\n", s.label, width, n(s.E), s.E_variant, n(s.D),
                             s.D_variant);
  std::cout << fmt::format("  E = {} (largest; set by {} at {})\n", n(c.E), c.E_variant, c.E_shape);
  std::cout << fmt::format("  D = {} (smallest; set by {} at {})\n", n(c.D), c.D_variant, c.D_shape);
  if (c.exact) {
    std::cout << "  the exact comparator places no threshold: E and D are recorded, lint does not bound the value\n";
  } else {
    std::cout << fmt::format("  allowed tolerance: above 2E = {} (set at {}), below D/10 = {} (set at {}){}\n",
                             n(c.range.low), c.E_shape, n(c.range.high), c.D_shape, c.range.empty() ? ": EMPTY" : "");
    auto findings = task::check_tolerance(c.tolerance, c.E, c.D);
    if (findings.empty())
      std::cout << fmt::format("  the task's tolerance {} is inside the range\n", n(c.tolerance));
    for (const auto& f : findings) std::cout << fmt::format("  task.{}: {}\n", f.rule, f.detail);
  }
  for (const auto& r : c.refusals()) std::cout << "  refused: " << r << "\n";
  if (wrote) std::cout << fmt::format("  wrote measured_floor_E, measured_drop_D and basis into {}\n", c.task_file);
}

const bool calibrate_registered = register_command(
    "task calibrate",
    "Measure a task's error floor E and drop error D per shape (Python, torch) and the tolerance range they allow",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        task::CalibrateOptions c;
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("TASK_DIR", o->c.task_dir, "task folder: task.json, independent*.py, drop*.py")->required();
      sub.add_option("--device", o->c.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
      sub.add_flag("--write", o->c.write, "store E, D and the basis into TASK_DIR/task.json, in place (refused when "
                   "they leave no sound tolerance)");
      sub.add_option("--seeds", o->c.seeds, "inputs per shape and variant")->check(CLI::Range(1, 64))->capture_default_str();
      sub.add_option("--workload", o->c.workload, "workload to calibrate (default: synthetic, else the first)");
      sub.add_option("--python", o->c.python, "Python interpreter with torch")->capture_default_str();
      sub.add_option("--judge-dir", o->c.judge_dir, "folder holding kzoo_judge/ (default: the source tree's judge/)");
      sub.add_flag("--json", o->json, "print one JSON document on stdout");
      return [o] {
        auto c = task::run_calibrate(o->c);
        if (!c) return error("calibrate", c.error().message, o->json);
        const auto refused = c->refusals();
        bool wrote = false;
        std::string write_error;
        if (o->c.write && refused.empty()) {
          auto w = task::write_calibration(c->task_file, *c);
          if (w) wrote = true;
          else write_error = w.error().message;
        }
        if (o->json) {
          json j = c->to_json();
          j["written"] = wrote;
          if (!write_error.empty()) j["error"] = write_error;
          print_json(std::cout, j);
        } else {
          print_calibration(*c, wrote);
        }
        if (!write_error.empty()) {
          std::cerr << "kzoo task calibrate: " << write_error << "\n";
          return kExitError;
        }
        if (!refused.empty()) {
          if (o->c.write) std::cerr << "kzoo task calibrate: nothing written to " << c->task_file << "\n";
          return kExitInvalid;
        }
        return kExitOk;
      };
    });

// A task at CATALOG/tasks/NAME/task.json packages into CATALOG/kernel_data.
std::string root_beside(const std::string& task_file) {
  fs::path catalog = fs::absolute(task_file).lexically_normal().parent_path().parent_path().parent_path();
  if (fs::is_regular_file(catalog / "kernel_data" / ".kernel_data")) return (catalog / "kernel_data").string();
  return "";
}

const bool scaffold_registered = register_command(
    "task scaffold", "Create a kernel package (eager PyTorch baseline) from a KBench task",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        std::string file;
        task::ScaffoldOptions scaffold;
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("TASK", o->file, "task JSON file")->required();
      sub.add_option("--root", o->scaffold.root, "kernel_data root (holds .kernel_data); default: the kernel_data/ "
                     "of the task's catalog");
      sub.add_option("--kernel-id", o->scaffold.kernel_id, "arch/op_class/sub_class/quant/name")->required();
      sub.add_option("--workload", o->scaffold.workload, "workload whose graded shapes become test cases")
          ->capture_default_str();
      sub.add_flag("--json", o->json, "print one JSON document on stdout");
      return [o] {
        auto t = task::load_task(o->file);
        if (!t) {
          for (const auto& v : t.error()) std::cerr << to_string(v) << "\n";
          if (o->json) print_json(std::cout, json{{"ok", false}, {"violations", to_json(t.error())}});
          return is_io_failure(t.error()) ? kExitError : kExitInvalid;
        }
        if (o->scaffold.root.empty()) o->scaffold.root = root_beside(o->file);
        if (o->scaffold.root.empty())
          return error("scaffold", o->file + " is not in a catalog with a kernel_data/ root (CATALOG/tasks/NAME/"
                       "task.json beside CATALOG/kernel_data/.kernel_data): pass --root DIR", o->json);
        auto dir = task::scaffold_package(*t, o->scaffold);
        if (!dir) return error("scaffold", dir.error().message, o->json);
        if (o->json) {
          print_json(std::cout, json{{"ok", true}, {"package", *dir}, {"kernel_id", o->scaffold.kernel_id}});
        } else {
          std::cerr << "created " << *dir << "\n";
          std::cout << *dir << "\n";
        }
        return kExitOk;
      };
    });

Result<std::string> read_text(const std::string& path) { return read_file(path, 8u << 20); }

const bool table_registered = register_command(
    "task table", "The catalog's table of tasks (docs/TASKS.md), generated from the catalog",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        std::string catalog = default_catalog(), update, check, device_class = "h200";
        std::string device_classes = task::default_device_classes_path();
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("--catalog", o->catalog, "catalog folder (default $KZOO_CATALOG or ./catalog)")->capture_default_str();
      auto* update = sub.add_option("--update", o->update, "rewrite the table between the markers of this file");
      sub.add_option("--check", o->check, "exit 1 when this file's table is not the catalog's")->excludes(update);
      sub.add_option("--device-class", o->device_class, "device class of the roofline column")->capture_default_str();
      sub.add_option("--device-classes", o->device_classes, "device classes file")->capture_default_str();
      sub.add_flag("--json", o->json, "print one JSON document on stdout");
      return [o] {
        auto device = task::load_device_class(o->device_classes, o->device_class);
        if (!device) return error("table", device.error().message, o->json);
        auto table = task::render_catalog_table(o->catalog, *device);
        if (!table) return error("table", table.error().message, o->json);
        const std::string file = !o->update.empty() ? o->update : o->check;
        if (file.empty()) {
          if (o->json) print_json(std::cout, json{{"ok", true}, {"table", *table}});
          else std::cout << *table;
          return kExitOk;
        }
        auto text = read_text(file);
        if (!text) return error("table", text.error().message, o->json);
        auto fresh = task::replace_catalog_table(*text, *table, file);
        if (!fresh) return error("table", fresh.error().message, o->json);
        const bool current = *fresh == *text;
        if (!o->check.empty()) {
          if (o->json) print_json(std::cout, json{{"ok", current}, {"file", file}, {"current", current}});
          if (!current)
            std::cerr << "kzoo task table: " << file << "'s catalog table is stale: run `kzoo task table --update "
                      << file << "`\n";
          return current ? kExitOk : kExitInvalid;
        }
        if (!current) {
          std::ofstream out(file, std::ios::binary | std::ios::trunc);
          out << *fresh;
          if (!out) return error("table", "cannot write " + file, o->json);
        }
        if (o->json) print_json(std::cout, json{{"ok", true}, {"file", file}, {"changed", !current}});
        else std::cerr << "kzoo task table: " << file << (current ? " was current" : " updated") << "\n";
        return kExitOk;
      };
    });

}  // namespace
