#include "kzoo/board/rules.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kzoo/board/partition.hpp"
#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/json_text.hpp"

namespace kzoo::board {

using nlohmann::json;

Result<Rules> parse_rules(const std::string& text, const std::string& where, std::string_view fix) {
  auto doc = format::parse_json(text, where);
  if (!doc) return fail(fmt::format("{}\n{}", to_string(doc.error()), fix));
  Violations vs = format::SchemaSet::bundled().validate(*doc, "scienceslack", where);
  if (!vs.empty()) {
    std::string m = fmt::format("{} breaks {} rule(s) of schemas/scienceslack.schema.json:", where, vs.size());
    for (const auto& v : vs) m += "\n  " + to_string(v);
    return fail(fmt::format("{}\n{}", m, fix));
  }
  const json& b = (*doc)["benchmark"];
  if (auto p = checks_partition(b); !p)
    return fail(fmt::format("{} breaks rule board.partition: {}\n{}", where, p.error().message, fix));
  Rules r;
  r.doc = *doc;
  r.version = b["version"].get<int>();
  r.status = b["status"];
  r.adopt = b["adopt"];
  r.kernels = b["kernels"].get<std::vector<std::string>>();
  if (b.contains("maintainers")) r.maintainers = b["maintainers"].get<std::vector<std::string>>();
  const json& g = b["guardrails"];
  r.device_class = g["device_class"];
  r.inputs = g["inputs"];
  r.timed_runs = g["timed_runs"];
  r.warmup = g["warmup"];
  if (g.contains("atol") && g["atol"].is_number()) r.atol = g["atol"].get<double>();
  if (g.contains("rtol") && g["rtol"].is_number()) r.rtol = g["rtol"].get<double>();
  if (!b["checks"].empty()) r.metrics_file = b["checks"][0]["metrics"];
  return r;
}

namespace {

Result<Rules> rules_at(const store::KernelRepo& repo, const std::string& rev, const std::string& label) {
  auto commit = repo.head(rev);
  if (!commit) return tl::unexpected(commit.error());
  auto text = repo.read_file(kRulesFile, *commit);
  if (!text)
    return fail(fmt::format("{} points at {}, which has no {} at the repository root: commit the rules there and "
                            "move the tag",
                            label, commit->substr(0, 12), kRulesFile));
  auto r = parse_rules(*text, fmt::format("{} at {} ({})", kRulesFile, commit->substr(0, 12), label));
  if (!r) return r;
  r->commit = *commit;
  auto h = repo.history(kRulesFile, 1, *commit);
  if (h && !h->empty()) r->commit_time = h->front().time;
  return r;
}

}  // namespace

Result<std::optional<Rules>> rules_in_force(const store::KernelRepo& repo) {
  auto refs = repo.list_refs(kChecksTag);
  if (!refs) return tl::unexpected(refs.error());
  if (std::find(refs->begin(), refs->end(), std::string(kChecksTag)) == refs->end())
    return std::optional<Rules>();
  auto r = rules_at(repo, kChecksTag, "the `checks` tag");
  if (!r) return tl::unexpected(r.error());
  return std::optional<Rules>(std::move(*r));
}

Result<std::optional<Rules>> rules_of_version(const store::KernelRepo& repo, int version) {
  const std::string ref = fmt::format("refs/boards/v{}", version);
  auto refs = repo.list_refs(ref);
  if (!refs) return tl::unexpected(refs.error());
  if (std::find(refs->begin(), refs->end(), ref) == refs->end()) return std::optional<Rules>();
  auto r = rules_at(repo, ref, ref);
  if (!r) return tl::unexpected(r.error());
  return std::optional<Rules>(std::move(*r));
}

Result<std::vector<int>> versions(const store::KernelRepo& repo) {
  auto refs = repo.list_refs("refs/boards/v");
  if (!refs) return tl::unexpected(refs.error());
  std::vector<int> out;
  for (const auto& r : *refs) {
    std::string n = r.substr(std::string("refs/boards/v").size());
    if (!n.empty() && n.size() <= 7 && n.find_first_not_of("0123456789") == std::string::npos) out.push_back(std::stoi(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<Rules> approve_rules(const store::KernelRepo& repo, const std::string& commit) {
  auto c = repo.head(commit);
  if (!c) return fail(fmt::format("{} is not a commit of kernel_data: {}", commit, c.error().message));
  auto r = rules_at(repo, *c, "the commit to approve");
  if (!r) return r;
  if (auto t = repo.set_ref(kChecksTag, r->commit); !t) return tl::unexpected(t.error());
  if (auto rec = record_in_force(repo, *r); !rec) return tl::unexpected(rec.error());
  return r;
}

Result<void> record_in_force(const store::KernelRepo& repo, const Rules& rules) {
  const std::string ref = fmt::format("refs/boards/v{}", rules.version);
  auto at = repo.head(ref);
  if (at && *at == rules.commit) return {};
  return repo.set_ref(ref, rules.commit);
}

json demo_rules(const std::vector<std::string>& kernel_ids, const std::string& device_class, int version) {
  const bool cpu = device_class == "cpu";
  std::string runner = cpu ? "the CPU of the machine kzoo runs on (a demo board: no GPU here)"
                           : "the " + device_class + " runner";
  const int timed = 100;  // the seed's figure; on a loaded 2-core CPU 60 runs (6 A/B pairs a case) let noise sink real gains
  return json{
      {"schema_version", "1"},
      {"benchmark",
       {{"id", "kernelbench-operators"},
        {"title", "KernelBench operators"},
        {"description",
         "Faster kernels for PyTorch operators, exactly as correct as the reference. Each kernel's speed-up is the "
         "eager PyTorch baseline's time divided by the candidate's, measured by the same verifier on the same "
         "device class; the score is their geometric mean."},
        {"task", "GPU kernel optimization"},
        {"metric", {{"name", "speed-up"}, {"direction", "higher"}}},
        {"baseline", {{"name", "PyTorch eager"}, {"value", 1}}},
        {"kernels", kernel_ids},
        {"version", version},
        {"status", "active"},
        {"adopt", "auto"},
        {"maintainers", json::array({"kzoo-maintainer"})},
        {"guardrails",
         {{"prose",
           json::array({"Outputs match the PyTorch reference within the task's tolerance on five random inputs, and "
                        "within atol 1e-2 and rtol 1e-2, per element (a task whose calibration proves that impossible, "
                        "such as an fp8 output one rounding step apart, declares its own bound in its test cases)",
                        fmt::format("Timed on {}, the median of {} runs after 10 warm-up runs", runner, timed),
                        "No library calls the reference does not make"})},
          {"atol", 0.01},
          {"rtol", 0.01},
          {"inputs", 5},
          {"timed_runs", timed},
          {"warmup", 10},
          {"device_class", device_class},
          {"runner", runner}}},
        {"checks", json::array({{{"name", "verify"},
                                  {"script", "<kernel>/.kernel_package/benchmark.py (the trusted harness)"},
                                  {"metrics", "metrics.json"},
                                  {"partition", "main"}}})},
        {"partitions", json::array({{{"name", "main"},
                                      {"time_limit", "01:00:00"},
                                      {"default_time", "00:10:00"},
                                      {"cpus", 4},
                                      {"memory_mb", 8192.0},
                                      {"gpus", cpu ? 0 : 1}}})}}}};
}

Result<int> catalog_board_version(const std::string& text, const std::string& where) {
  const std::string fix =
      "; write it as {\"version\": N, \"reason\": \"why the baselines changed\"} with N from 1 to 1000000 "
      "(docs/BOARD.md)";
  auto doc = format::parse_json(text, where);
  if (!doc) return fail(to_string(doc.error()) + fix);
  if (!doc->is_object()) return fail(where + ": not a JSON object (rule board.catalog-defaults)" + fix);
  for (const auto& [key, value] : doc->items())
    if (key != "version" && key != "reason")
      return fail(fmt::format("{}: unknown key \"{}\" (rule board.catalog-defaults: only version and reason){}", where,
                              key, fix));
  const json* v = doc->contains("version") ? &(*doc)["version"] : nullptr;
  if (!v || !v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > 1000000)
    return fail(fmt::format("{}: version is {} (rule board.catalog-defaults: an integer from 1 to 1000000){}", where,
                            v ? v->dump() : "missing", fix));
  if (doc->contains("reason") && !(*doc)["reason"].is_string())
    return fail(where + ": reason is not a string (rule board.catalog-defaults)" + fix);
  return static_cast<int>(v->get<std::int64_t>());
}

Result<std::string> init_rules(const store::KernelRepo& repo, const std::string& device_class) {
  auto ids = repo.list_packages("refs/heads/main");
  if (!ids) return tl::unexpected(ids.error());
  if (ids->empty()) return fail("the repository holds no kernel package: a board needs kernels");
  int version = 1;
  auto declared = repo.history(kCatalogBoardFile, 1, "refs/heads/main");
  if (!declared) return tl::unexpected(declared.error());
  if (!declared->empty()) {
    auto text = repo.read_file(kCatalogBoardFile, "refs/heads/main");
    if (!text) return tl::unexpected(text.error());
    auto v = catalog_board_version(*text, fmt::format("{} at the catalog's root", kCatalogBoardFile));
    if (!v) return tl::unexpected(v.error());
    version = *v;
  }
  json doc = demo_rules(*ids, device_class, version);
  std::string text = doc.dump(2) + "\n";
  if (auto r = parse_rules(text, "the demo rules"); !r) return fail("kzoo bug: " + r.error().message);
  auto c = repo.commit_files("main", {{kRulesFile, text}},
                             "rules: the demo board (scienceslack.json)\n\nWritten by `kzoo init`; in force at the "
                             "`checks` tag.\n",
                             store::Person{"kzoo", "kzoo@localhost"});
  if (!c) return tl::unexpected(c.error());
  if (auto t = repo.set_ref(kChecksTag, *c); !t) return tl::unexpected(t.error());
  auto r = parse_rules(text, kRulesFile);
  r->commit = *c;
  if (auto rec = record_in_force(repo, *r); !rec) return tl::unexpected(rec.error());
  return *c;
}

}  // namespace kzoo::board
