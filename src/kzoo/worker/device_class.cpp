#include "kzoo/worker/device_class.hpp"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sys/wait.h>

namespace kzoo::worker {
namespace {

using nlohmann::json;

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string known_classes(const json& table) {
  std::string known;
  if (table.contains("classes") && table["classes"].is_object())
    for (auto it = table["classes"].begin(); it != table["classes"].end(); ++it)
      known += (known.empty() ? "" : ", ") + it.key();
  return known;
}

}  // namespace

Result<GpuInfo> probe_gpu() {
  const char* env = std::getenv("KZOO_NVIDIA_SMI");
  const std::string program = env && *env ? env : "nvidia-smi";
  const std::string cmd = quoted(program) + " --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return fail("cannot run " + program);
  std::string out;
  char buf[512];
  while (out.size() < 65536 && std::fgets(buf, sizeof buf, p)) out += buf;
  int status = ::pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(program + " did not report a GPU (is the NVIDIA driver installed?)");
  std::string line = trim(out.substr(0, out.find('\n')));
  auto comma = line.rfind(',');
  GpuInfo g{trim(line.substr(0, comma)), comma == std::string::npos ? "" : trim(line.substr(comma + 1))};
  if (g.name.empty()) return fail(program + " reported no GPU name");
  return g;
}

std::vector<std::string> classes_matching(const json& table, const std::string& gpu_name) {
  std::vector<std::string> hits;
  if (gpu_name.empty() || !table.contains("classes") || !table["classes"].is_object()) return hits;
  for (auto it = table["classes"].begin(); it != table["classes"].end(); ++it) {
    const json& c = it.value();
    if (!c.is_object() || !c.contains("gpu_names") || !c["gpu_names"].is_array()) continue;
    for (const auto& pat : c["gpu_names"]) {
      if (!pat.is_string()) continue;
      try {
        if (std::regex_search(gpu_name, std::regex(pat.get<std::string>(), std::regex::ECMAScript))) {
          hits.push_back(it.key());
          break;
        }
      } catch (const std::regex_error&) {
        // A broken pattern matches nothing; lint of the table is the place to report it.
      }
    }
  }
  return hits;
}

Result<std::string> pick_device_class(const std::string& device, const std::string& requested,
                                      const std::optional<GpuInfo>& gpu, const json& table, const std::string& where) {
  const bool known = table.contains("classes") && table["classes"].is_object() && table["classes"].contains(requested);
  if (device == "cpu") {
    if (!requested.empty() && requested != "cpu")
      return fail("--device-class " + requested + " with --device cpu: a CPU worker's results are device class cpu, "
                  "and only a GPU of that class may produce " + requested + " figures");
    return std::string("cpu");
  }
  if (!requested.empty() && (!known || requested == "cpu"))
    return fail("--device-class " + requested + " is not a GPU device class of " + where + " (known: " +
                known_classes(table) + ")");
  const std::string name = gpu ? gpu->name : "";
  auto hits = classes_matching(table, name);
  if (hits.size() == 1) {
    if (!requested.empty() && requested != hits[0])
      return fail("--device-class " + requested + " contradicts the GPU: \"" + name + "\" is device class " + hits[0] +
                  " in " + where + "; its figures would be filed under the wrong device");
    return hits[0];
  }
  if (!requested.empty()) return requested;
  if (hits.size() > 1)
    return fail("the GPU \"" + name + "\" matches several device classes of " + where + "; name one with --device-class");
  return fail((gpu ? "no device class of " + where + " matches the GPU \"" + name + "\""
                   : "cannot read the GPU's name, so no device class of " + where + " can be picked") +
              "; refusing to start: name the class with --device-class (known: " + known_classes(table) +
              "), or add the GPU's name to a class's gpu_names");
}

}  // namespace kzoo::worker
