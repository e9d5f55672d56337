#include "kzoo/util/ascii.hpp"
#include "kzoo/package/inspect.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/py_literal.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/package/evidence.hpp"
#include "kzoo/package/kernel_id.hpp"

namespace kzoo::package {
namespace {

using nlohmann::json;

constexpr std::string_view kDotDir = ".kernel_package";
constexpr std::string_view kMetasName = "KERNEL_ZOO_TEST_CASE_METAS";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }


// Top-level files a package may carry beside .kernel_package/ and src/:
// project documentation and the usual build entry points. Everything else at
// the top level is refused, because only src/ is taken into the repository
// on accept and a stray top-level directory is where evidence tends to hide.
bool allowed_top_level_file(std::string_view name) {
  std::string l = util::ascii_lower(name);
  for (std::string_view doc : {"readme", "license", "licence", "copying", "notice", "authors", "changelog",
                               "contributing"}) {
    if (starts_with(l, doc)) return true;
  }
  static const std::set<std::string> exact = {".gitignore", ".gitattributes", "cmakelists.txt", "makefile",
                                              "setup.py"};
  return exact.count(l) > 0;
}

const PackageFile* find_file(const PackageTree& tree, std::string_view path) {
  // PackageTree::find is the contract; files are sorted, so this is a lookup.
  return tree.find(path);
}

// The first string of `items[i][key]` seen twice, with both indices.
struct Duplicate {
  std::string value;
  std::size_t first, second;
};

std::vector<Duplicate> duplicates(const json& items, const char* key) {
  std::vector<Duplicate> out;
  std::map<std::string, std::size_t> seen;
  if (!items.is_array()) return out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const json& it = items[i];
    if (!it.is_object() || !it.contains(key) || !it[key].is_string()) continue;
    auto [pos, fresh] = seen.emplace(it[key].get<std::string>(), i);
    if (!fresh) out.push_back({pos->first, pos->second, i});
  }
  return out;
}

// desc.yaml: parse, schema, io_signature names unique. Returns the document
// (null when it does not parse).
json check_desc_into(std::string_view text, const std::string& file, Violations& vs) {
  auto doc = format::parse_yaml(text, file);
  if (!doc) {
    vs.push_back(doc.error());
    return nullptr;
  }
  Violations schema = format::SchemaSet::bundled().validate(*doc, "desc", file);
  vs.insert(vs.end(), schema.begin(), schema.end());
  if (doc->is_object() && doc->contains("io_signature")) {
    for (const Duplicate& d : duplicates((*doc)["io_signature"], "name")) {
      vs.push_back(Violation{file, "/io_signature/" + std::to_string(d.second) + "/name", "package.duplicate-io-name",
                             "io_signature name \"" + d.value + "\" is used by items " + std::to_string(d.first) +
                                 " and " + std::to_string(d.second) + "; every input and output needs its own name"});
    }
  }
  return *doc;
}

// bench_result.yaml: parse, schema, kernel_id == `kernel_id` (when known).
json check_bench_result_into(std::string_view text, const std::string& file, const std::string& kernel_id,
                             Violations& vs) {
  auto doc = format::parse_yaml(text, file);
  if (!doc) {
    vs.push_back(doc.error());
    return nullptr;
  }
  Violations schema = format::SchemaSet::bundled().validate(*doc, "bench_result", file);
  vs.insert(vs.end(), schema.begin(), schema.end());
  if (doc->is_object() && doc->contains("kernel_id") && (*doc)["kernel_id"].is_string() && !kernel_id.empty()) {
    const std::string id = (*doc)["kernel_id"].get<std::string>();
    if (id != kernel_id) {
      vs.push_back(Violation{file, "/kernel_id", "package.bench-result-mismatch",
                             "kernel_id is \"" + id + "\" but this package's kernel ID is \"" + kernel_id +
                                 "\"; bench_result.yaml belongs to the package at that path (fix kernel_id, or "
                                 "move the package)"});
    }
  }
  return *doc;
}

class Inspector {
 public:
  Inspector(const PackageTree& tree, const std::string& kernel_id, const std::string& display_path)
      : tree_(tree), kernel_id_(kernel_id), display_(display_path) {}

  Inspection run() {
    Inspection r;
    r.kernel_id = kernel_id_;
    append(check_kernel_id(kernel_id_, display_));
    check_layout(r);
    r.desc = check_desc();
    r.metas = check_metas();
    check_bench_result(r.metas);
    for (const PackageFile& f : tree_.files) append(scan_file_for_evidence(f, where(f.path)));
    r.violations = std::move(vs_);
    r.meta["violations"] = to_json(r.violations);
    return r;
  }

 private:
  std::string where(std::string_view file) const { return display_ + "/" + std::string(file); }

  void add(std::string_view file, std::string pointer, std::string rule, std::string detail) {
    vs_.push_back(Violation{where(file), std::move(pointer), std::move(rule), std::move(detail)});
  }
  void append(Violations more) {
    for (auto& v : more) vs_.push_back(std::move(v));
  }

  void check_layout(Inspection& r) {
    bool has_dot = std::find(tree_.dirs.begin(), tree_.dirs.end(), std::string(kDotDir)) != tree_.dirs.end();
    for (const PackageFile& f : tree_.files) has_dot |= starts_with(f.path, std::string(kDotDir) + "/");
    json present = json::array(), missing = json::array();
    std::set<std::string> required;
    for (const char* req : kRequiredFiles) {
      required.insert(req);
      if (find_file(tree_, req)) {
        present.push_back(req);
      } else {
        missing.push_back(req);
        add(req, "", "package.missing-file",
            std::string("the required file ") + req + " is missing" +
                (has_dot ? "" : " (there is no .kernel_package/ directory at all)") +
                "; every package carries desc.yaml, bench_result.yaml, build_test_env.py and benchmark.py "
                "in .kernel_package/ (`kzoo task scaffold` writes them)");
      }
    }
    r.meta = {{"path", display_},
              {"has_dot_kernel_package", has_dot},
              {"required_files_present", present},
              {"required_files_missing", missing},
              {"kernel_id", kernel_id_}};

    bool has_source = false;
    std::set<std::string> reported_dirs;
    auto refuse_top_dir = [&](const std::string& top) {
      if (!reported_dirs.insert(top).second) return;
      add(top + "/", "", "package.unexpected-entry",
          "the top-level directory \"" + top +
              "/\" is not part of a kernel package; a package holds .kernel_package/ and src/ (and README/LICENSE "
              "files): move source under src/, and remove anything generated");
    };
    for (const PackageFile& f : tree_.files) {
      std::string_view p = f.path;
      std::size_t slash = p.find('/');
      if (slash == std::string_view::npos) {
        if (!allowed_top_level_file(p)) {
          add(p, "", "package.unexpected-entry",
              "the top-level file \"" + std::string(p) +
                  "\" is not allowed; only README*, LICENSE*, COPYING*, NOTICE*, AUTHORS*, CHANGELOG*, "
                  "CONTRIBUTING*, .gitignore, .gitattributes, CMakeLists.txt, Makefile and setup.py may sit beside "
                  "src/ and .kernel_package/: move it under src/ or remove it");
        }
        continue;
      }
      std::string top(p.substr(0, slash));
      if (top == "src") {
        has_source = true;
      } else if (top == kDotDir) {
        if (!required.count(std::string(p))) {
          add(p, "", "package.unexpected-entry",
              "\"" + std::string(p) +
                  "\" is not one of the four files of .kernel_package/ (desc.yaml, bench_result.yaml, "
                  "build_test_env.py, benchmark.py); the runner uses trusted copies of these, so anything else "
                  "there would be ignored: move it under src/ or remove it");
        }
      } else {
        refuse_top_dir(top);
      }
    }
    // Empty directories also count: an empty "results/" is still a stray entry.
    for (const std::string& d : tree_.dirs) {
      std::string top = d.substr(0, d.find('/'));
      if (top != "src" && top != kDotDir) refuse_top_dir(top);
    }
    if (!has_source) {
      add("src/", "", "package.no-source",
          "the package has no source: src/ is missing or holds no file; put the kernel's implementation "
          "(Python, CUDA, C++, Triton...) under src/");
    }
  }

  json check_desc() {
    const std::string path = ".kernel_package/desc.yaml";
    const PackageFile* f = find_file(tree_, path);
    return f ? check_desc_into(f->content, where(path), vs_) : json(nullptr);
  }

  json check_metas() {
    const std::string path = ".kernel_package/benchmark.py";
    const PackageFile* f = find_file(tree_, path);
    if (!f) return nullptr;
    auto doc = format::extract_py_assignment(f->content, kMetasName, where(path));
    if (!doc) {
      vs_.push_back(doc.error());
      return nullptr;
    }
    if (!doc->is_array()) {
      add(path, "", "package.metas-not-list",
          std::string(kMetasName) + " is a " + doc->type_name() +
              "; it must be a list of test-case dicts ({test_case_id, params, primary_metric, metrics, tolerance})");
      return *doc;
    }
    if (doc->empty()) {
      add(path, "", "package.no-test-cases",
          std::string(kMetasName) + " is an empty list; a package needs at least one test case to be graded");
    }
    const auto& schemas = format::SchemaSet::bundled();
    for (std::size_t i = 0; i < doc->size(); ++i) {
      const json& item = (*doc)[i];
      const std::string at = "/" + std::to_string(i);
      for (Violation v : schemas.validate(item, "test_case_meta", where(path))) {
        v.pointer = at + v.pointer;
        vs_.push_back(std::move(v));
      }
      if (!item.is_object()) continue;
      // primary_metric must be one of metrics[].name; names unique per case.
      if (item.contains("metrics") && item["metrics"].is_array()) {
        for (const Duplicate& d : duplicates(item["metrics"], "name")) {
          add(path, at + "/metrics/" + std::to_string(d.second) + "/name", "package.duplicate-metric",
              "metric \"" + d.value + "\" is listed twice in test case " + std::to_string(i) +
                  " (items " + std::to_string(d.first) + " and " + std::to_string(d.second) + "); remove one");
        }
        if (item.contains("primary_metric") && item["primary_metric"].is_string()) {
          const std::string pm = item["primary_metric"].get<std::string>();
          std::string names;
          bool found = false;
          for (const json& m : item["metrics"]) {
            if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) continue;
            const std::string n = m["name"].get<std::string>();
            found |= n == pm;
            names += (names.empty() ? "" : ", ") + n;
          }
          if (!found) {
            add(path, at + "/primary_metric", "package.primary-metric",
                "primary_metric \"" + pm + "\" is not among this case's metrics [" + names +
                    "]; name one of them, or add a metric with that name");
          }
        }
      }
    }
    for (const Duplicate& d : duplicates(*doc, "test_case_id")) {
      add(path, "/" + std::to_string(d.second) + "/test_case_id", "package.duplicate-test-case",
          "test_case_id \"" + d.value + "\" is used by cases " + std::to_string(d.first) + " and " +
              std::to_string(d.second) + "; test case IDs are unique within a package");
    }
    return *doc;
  }

  void check_bench_result(const json& metas) {
    const std::string path = ".kernel_package/bench_result.yaml";
    const PackageFile* f = find_file(tree_, path);
    if (!f) return;
    json doc = check_bench_result_into(f->content, where(path), kernel_id_, vs_);
    if (!doc.is_object()) return;
    if (!metas.is_array() || !doc.contains("cases") || !doc["cases"].is_array()) return;
    std::set<std::string> ids;
    for (const json& m : metas)
      if (m.is_object() && m.contains("test_case_id") && m["test_case_id"].is_string())
        ids.insert(m["test_case_id"].get<std::string>());
    const json& cases = doc["cases"];
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const json& c = cases[i];
      if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
      const std::string id = c["test_case_id"].get<std::string>();
      if (!ids.count(id)) {
        add(path, "/cases/" + std::to_string(i) + "/test_case_id", "package.bench-result-mismatch",
            "case \"" + id + "\" is not a test_case_id of " + std::string(kMetasName) +
                " in benchmark.py; results exist only for declared test cases (remove the case or declare it)");
      }
    }
  }

  const PackageTree& tree_;
  const std::string& kernel_id_;
  const std::string& display_;
  Violations vs_;
};

}  // namespace

Violations check_desc_text(std::string_view text, const std::string& file) {
  Violations vs;
  check_desc_into(text, file, vs);
  return vs;
}

Violations check_bench_result_text(std::string_view text, const std::string& file, const std::string& kernel_id) {
  Violations vs;
  check_bench_result_into(text, file, kernel_id, vs);
  return vs;
}

Inspection inspect_tree(const PackageTree& tree, const std::string& kernel_id, const std::string& display_path) {
  return Inspector(tree, kernel_id, display_path).run();
}

}  // namespace kzoo::package
