// `kzoo validate PATH [--kernel-id ID] [--root R] [--json]`: one verb for
// everything a contributor hands kzoo. What PATH is decides the check:
//   a directory            -> a kernel package (inspect_tree)
//   *.tar.gz / *.tgz       -> a submission tarball (safe streaming read, then inspect_tree)
//   *.json                 -> a KBench task (strict JSON, schema "task"), or the board's
//                             rules (scienceslack.json, or a top-level "benchmark" block)
//   desc.yaml              -> a package description (schema "desc" + io names unique)
//   bench_result.yaml      -> a results file (schema "bench_result"; kernel_id == --kernel-id if given)
// Exit 0 valid, 1 invalid (every violation listed), 2 usage or I/O error.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"

namespace cmd_validate {  // per command: a unity build joins commands (CMakeLists.txt)

namespace fs = std::filesystem;
using kzoo::Violations;

struct Options {
  std::string path;
  std::optional<std::string> root;
  std::optional<std::string> kernel_id;
  bool json = false;
};

struct Outcome {
  std::string kind;
  std::optional<std::string> kernel_id;
  Violations violations;
};

constexpr std::size_t kMaxDocumentBytes = 8u << 20;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

kzoo::Result<Outcome> validate_package(const Options& o) {
  auto in = kzoo::cli::read_package_input(o.path, o.root, o.kernel_id);
  if (!in) return tl::unexpected(in.error());
  Outcome out{"package", in->kernel_id, in->violations};
  auto r = kzoo::package::inspect_tree(in->tree, in->kernel_id, o.path);
  out.violations.insert(out.violations.end(), r.violations.begin(), r.violations.end());
  return out;
}

kzoo::Result<Outcome> validate_tarball(const Options& o) {
  auto read = kzoo::package::read_package_tarball(o.path, o.kernel_id);
  if (!read) return tl::unexpected(read.error());
  Outcome out{"tarball", std::nullopt, read->violations};
  // Without a kernel ID the reader found no usable layout (or stopped at a
  // cap); inspecting an empty tree would only add noise to its verdict.
  if (!read->kernel_id.empty()) {
    out.kernel_id = read->kernel_id;
    auto r = kzoo::package::inspect_tree(read->tree, read->kernel_id, o.path + ":" + read->kernel_id);
    out.violations.insert(out.violations.end(), r.violations.begin(), r.violations.end());
  }
  return out;
}

kzoo::Result<Outcome> validate_task(const Options& o) {
  auto text = kzoo::cli::read_file(o.path, kMaxDocumentBytes);
  if (!text) return tl::unexpected(text.error());
  Outcome out{"task", std::nullopt, {}};
  auto doc = kzoo::format::parse_json(*text, o.path);
  if (!doc) {
    out.violations.push_back(doc.error());
  } else {
    // The board's rules (scienceslack.json, or any JSON with a top-level
    // "benchmark" block) against their schema; any other JSON is a task.
    if (fs::path(o.path).filename() == "scienceslack.json" || (doc->is_object() && doc->contains("benchmark")))
      out.kind = "scienceslack";
    out.violations = kzoo::format::SchemaSet::bundled().validate(*doc, out.kind, o.path);
  }
  return out;
}

kzoo::Result<Outcome> validate_metadata(const Options& o, bool desc) {
  auto text = kzoo::cli::read_file(o.path, kMaxDocumentBytes);
  if (!text) return tl::unexpected(text.error());
  if (desc) return Outcome{"desc", std::nullopt, kzoo::package::check_desc_text(*text, o.path)};
  std::string expected = o.kernel_id.value_or("");
  return Outcome{"bench_result", o.kernel_id, kzoo::package::check_bench_result_text(*text, o.path, expected)};
}

int run(const Options& o) {
  std::error_code ec;
  const std::string name = fs::path(o.path).filename().string();
  kzoo::Result<Outcome> outcome = kzoo::fail("");
  if (fs::is_directory(o.path, ec)) {
    outcome = validate_package(o);
  } else if (!fs::exists(o.path, ec)) {
    std::cerr << "kzoo validate: cannot read \"" << o.path << "\": no such file or directory\n";
    return kzoo::cli::kExitError;
  } else if (ends_with(name, ".tar.gz") || ends_with(name, ".tgz")) {
    outcome = validate_tarball(o);
  } else if (ends_with(name, ".json")) {
    outcome = validate_task(o);
  } else if (name == "desc.yaml" || name == "bench_result.yaml") {
    outcome = validate_metadata(o, name == "desc.yaml");
  } else {
    std::cerr << "kzoo validate: do not know how to validate \"" << o.path
              << "\"; understood are a package directory, a *.tar.gz/*.tgz submission, a task *.json, "
                 "desc.yaml and bench_result.yaml\n";
    return kzoo::cli::kExitError;
  }
  if (!outcome) {
    std::cerr << "kzoo validate: " << outcome.error().message << "\n";
    return kzoo::cli::kExitError;
  }
  const Outcome& out = *outcome;
  const bool valid = out.violations.empty();
  if (o.json) {
    nlohmann::json doc = {{"path", o.path}, {"kind", out.kind}, {"valid", valid}};
    if (out.kernel_id) doc["kernel_id"] = *out.kernel_id;
    doc["violations"] = kzoo::to_json(out.violations);
    kzoo::cli::print_json(std::cout, doc);
  } else {
    std::string what = out.kind + " " + o.path + (out.kernel_id ? " (" + *out.kernel_id + ")" : "");
    kzoo::cli::print_verdict(std::cout, what, out.violations);
  }
  return valid ? kzoo::cli::kExitOk : kzoo::cli::kExitInvalid;
}

const bool registered = kzoo::cli::register_command(
    "validate", "Validate a package directory, a submission tarball, a task JSON, desc.yaml or bench_result.yaml",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Options>();
      sub.add_option("path", o->path, "Package dir, *.tar.gz, task *.json, desc.yaml or bench_result.yaml")
          ->required();
      sub.add_option("--kernel-id", o->kernel_id,
                     "Expected kernel ID (must agree with the path / tarball top-level directory)");
      sub.add_option("--root", o->root, "kernel_data root (default: nearest ancestor holding .kernel_data)");
      sub.add_flag("--json", o->json, "Print exactly one JSON document on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
