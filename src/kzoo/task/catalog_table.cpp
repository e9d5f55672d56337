#include "kzoo/task/catalog_table.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "kzoo/format/yaml_json.hpp"
#include "kzoo/package/kernel_id.hpp"
#include "kzoo/util/text_file.hpp"

namespace kzoo::task {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// task name -> the kernel IDs under kernel_data whose desc.yaml names it.
std::map<std::string, std::vector<std::string>> packages_by_task(const fs::path& root) {
  std::map<std::string, std::vector<std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() != "desc.yaml" || it->path().parent_path().filename() != ".kernel_package") continue;
    auto text = read_text_file(it->path().string(), 1u << 20);
    if (!text) continue;
    auto desc = format::parse_yaml(*text, it->path().string());
    if (!desc || !desc->is_object() || !desc->contains("reference_sources") || !(*desc)["reference_sources"].is_array())
      continue;
    auto id = package::kernel_id_of(it->path().parent_path().parent_path().string(), root.string());
    if (!id) continue;
    for (const auto& s : (*desc)["reference_sources"])
      if (s.is_object() && s.value("kind", "") == "task" && s.contains("ref") && s["ref"].is_string())
        out[s["ref"].get<std::string>()].push_back(*id);
  }
  for (auto& [_, ids] : out) std::sort(ids.begin(), ids.end());
  return out;
}

std::string comparator_cell(const Task& t) {
  std::string c = t.tolerance.comparator;
  if (t.tolerance.row_pass) c += fmt::format(", row_pass {}", tolerance_number(*t.tolerance.row_pass));
  if (t.outputs.size() > 1 || !t.in_place_outputs.empty()) {
    std::vector<std::string> names;
    for (const auto& o : t.outputs) names.push_back(o.name);
    c += fmt::format(" ({}{})", fmt::join(names, ", "), t.in_place_outputs.empty() ? "" : "; in place: " +
                                                                                          fmt::format("{}", fmt::join(t.in_place_outputs, ", ")));
  }
  return c;
}

// The workload the judge grades by default: synthetic, else the first by name.
const Workload* graded_workload(const Task& t) {
  if (const Workload* w = t.workload("synthetic")) return w;
  return t.workloads.empty() ? nullptr : &t.workloads.front();
}

}  // namespace

Result<std::string> render_catalog_table(const std::string& catalog_dir, const DeviceClass& device) {
  const fs::path tasks = fs::path(catalog_dir) / "tasks";
  std::error_code ec;
  if (!fs::is_directory(tasks, ec))
    return fail(tasks.string() + " is not a directory: give the catalog folder (it holds tasks/ and kernel_data/)");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tasks, ec))
    if (fs::is_regular_file(e.path() / "task.json")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  const auto packages = packages_by_task(fs::path(catalog_dir) / "kernel_data");

  std::string out = fmt::format("{} tasks.\n\n| task | metric, work | comparator | tier | graded roofline ({}) | eager package |\n"
                                "| --- | --- | --- | --- | --- | --- |\n",
                                names.size(), device.name);
  for (const auto& name : names) {
    const std::string file = (tasks / name / "task.json").string();
    auto t = load_task(file);
    if (!t) return fail(file + " does not load (" + to_string(t.error().front()) + "): `kzoo task lint " + file + "`");
    const Workload* w = graded_workload(*t);
    std::string roofline = "-";
    if (auto work = WorkExpr::parse(t->canonical_work); work && w) {
      double worst = 0;
      for (const auto& shape : w->graded)
        if (auto r = roofline_us(*t, *work, w->bind(shape), device); r && *r) worst = std::max(worst, **r);
      if (worst > 0) roofline = fmt::format("{:.0f} µs", worst);
    }
    std::string metric = fmt::format("{}, `{}`", t->metric, t->canonical_work);
    if (w && w->name != "synthetic") metric += fmt::format(" (workload `{}`)", w->name);
    std::string tier = "-";
    if (t->doc.contains("difficulty") && t->doc["difficulty"].is_object() && t->doc["difficulty"].contains("tier") &&
        t->doc["difficulty"]["tier"].is_string())
      tier = t->doc["difficulty"]["tier"].get<std::string>();
    std::string eager = "-";
    if (auto it = packages.find(t->name); it != packages.end()) {
      std::vector<std::string> ids;
      for (const auto& id : it->second) ids.push_back("`" + id + "`");
      eager = fmt::format("{}", fmt::join(ids, "<br>"));
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", t->name, metric, comparator_cell(*t), tier, roofline, eager);
  }
  return out;
}

Result<std::string> replace_catalog_table(std::string_view doc, std::string_view table, const std::string& where) {
  auto b = doc.find(kTableBegin);
  auto e = doc.find(kTableEnd);
  if (b == std::string_view::npos || e == std::string_view::npos || e < b)
    return fail(fmt::format("{} has no catalog table markers: put the line\n{}\nbefore the table and\n{}\nafter it",
                            where, kTableBegin, kTableEnd));
  std::string out(doc.substr(0, b + kTableBegin.size()));
  out += "\n";
  out += table;
  out += doc.substr(e);
  return out;
}

}  // namespace kzoo::task
