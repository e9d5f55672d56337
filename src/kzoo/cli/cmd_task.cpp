// `kzoo task lint | calibrate | scaffold`: authoring KBench tasks and turning
// them into kernel packages. The work is in src/kzoo/task/; this file maps
// options to it and results to exit codes (0 ok, 1 invalid, 2 usage/I/O).
#include <iostream>
#include <memory>

#include "kzoo/cli/command.hpp"
#include "kzoo/task/calibrate.hpp"
#include "kzoo/task/lint.hpp"
#include "kzoo/task/scaffold.hpp"
#include "kzoo/task/task.hpp"

namespace {

using namespace kzoo;
using namespace kzoo::cli;

// Violations about the file as a whole that mean "could not read it" rather
// than "read it and it is wrong".
bool is_io_failure(const Violations& vs) { return vs.size() == 1 && vs[0].rule == "task.io"; }

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
        if (!device) {
          std::cerr << "kzoo task lint: " << device.error().message << "\n";
          return kExitError;
        }
        task::LintOptions options;
        options.device = *device;
        Violations vs = task::lint_task_file(o->file, options);
        if (o->json) {
          nlohmann::json out = {{"file", o->file}, {"device_class", device->name}, {"ok", vs.empty()},
                                {"violations", to_json(vs)}};
          std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        } else {
          for (const auto& v : vs) std::cerr << to_string(v) << "\n";
          std::cerr << o->file << ": " << (vs.empty() ? "lint-clean" : std::to_string(vs.size()) + " violation(s)")
                    << " (device class " << device->name << ")\n";
        }
        if (is_io_failure(vs)) return kExitError;
        return vs.empty() ? kExitOk : kExitInvalid;
      };
    });

const bool calibrate_registered = register_command(
    "task calibrate", "Measure a task's error floor E and drop error D with the judge (Python, torch)",
    [](CLI::App& sub) -> Runner {
      auto o = std::make_shared<task::CalibrateOptions>();
      sub.add_option("TASK_DIR", o->task_dir, "task folder: task.json, independent.py, drop.py")->required();
      sub.add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
      sub.add_flag("--write", o->write, "store E, D and the basis into TASK_DIR/task.json");
      sub.add_option("--python", o->python, "Python interpreter with torch")->capture_default_str();
      sub.add_option("--judge-dir", o->judge_dir, "folder holding kzoo_judge/ (default: the source tree's judge/)");
      return [o] {
        auto rc = task::run_calibrate(*o);
        if (!rc) {
          std::cerr << "kzoo task calibrate: " << rc.error().message << "\n";
          return kExitError;
        }
        // The judge's own status: 0 measured, 1 the task fails calibration, 2 error.
        return *rc <= 2 ? *rc : kExitError;
      };
    });

const bool scaffold_registered = register_command(
    "task scaffold", "Create a kernel package (eager PyTorch baseline) from a KBench task",
    [](CLI::App& sub) -> Runner {
      struct Opts {
        std::string file;
        task::ScaffoldOptions scaffold;
      };
      auto o = std::make_shared<Opts>();
      sub.add_option("TASK", o->file, "task JSON file")->required();
      sub.add_option("--root", o->scaffold.root, "kernel_data root (holds .kernel_data)")->required();
      sub.add_option("--kernel-id", o->scaffold.kernel_id, "arch/op_class/sub_class/quant/name")->required();
      sub.add_option("--workload", o->scaffold.workload, "workload whose graded shapes become test cases")
          ->capture_default_str();
      return [o] {
        auto t = task::load_task(o->file);
        if (!t) {
          for (const auto& v : t.error()) std::cerr << to_string(v) << "\n";
          return is_io_failure(t.error()) ? kExitError : kExitInvalid;
        }
        auto dir = task::scaffold_package(*t, o->scaffold);
        if (!dir) {
          std::cerr << "kzoo task scaffold: " << dir.error().message << "\n";
          return kExitError;
        }
        std::cerr << "created " << *dir << "\n";
        std::cout << *dir << "\n";
        return kExitOk;
      };
    });

}  // namespace
