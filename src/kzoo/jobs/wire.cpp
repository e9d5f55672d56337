#include "kzoo/jobs/wire.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <sodium.h>

#include "kzoo/board/rules.hpp"

namespace kzoo::jobs {

using nlohmann::json;

namespace {
std::optional<store::UnixMs> opt_ms(const json& j, const char* k) {
  if (!j.contains(k) || !j[k].is_number_integer()) return std::nullopt;
  return j[k].get<store::UnixMs>();
}
}  // namespace

json job_to_json(const store::Job& j) {
  auto ms = [](const std::optional<store::UnixMs>& t) { return t ? json(*t) : json(); };
  return {{"id", j.id},
          {"submission_id", j.submission_id},
          {"state", store::to_string(j.state)},
          {"attempts", j.attempts},
          {"max_attempts", j.max_attempts},
          {"lease_owner", j.lease_owner},
          {"lease_expires_at", ms(j.lease_expires_at)},
          {"heartbeat_at", ms(j.heartbeat_at)},
          {"created_at", j.created_at},
          {"started_at", ms(j.started_at)},
          {"finished_at", ms(j.finished_at)},
          {"held", j.held},
          {"kind", j.kind}};
}

store::Job job_from_json(const json& j) {
  store::Job out;
  if (!j.is_object()) return out;
  out.id = j.value("id", std::int64_t{0});
  out.submission_id = j.value("submission_id", std::int64_t{0});
  out.state = store::parse_state(j.value("state", "failed")).value_or(store::State::failed);
  out.attempts = j.value("attempts", 0);
  out.max_attempts = j.value("max_attempts", 0);
  out.lease_owner = j.value("lease_owner", "");
  out.lease_expires_at = opt_ms(j, "lease_expires_at");
  out.heartbeat_at = opt_ms(j, "heartbeat_at");
  out.created_at = j.value("created_at", store::UnixMs{0});
  out.started_at = opt_ms(j, "started_at");
  out.finished_at = opt_ms(j, "finished_at");
  out.held = j.value("held", false);
  out.kind = j.value("kind", "grade");
  return out;
}

json completion_to_json(const store::Completion& c) {
  return {{"outcome", store::to_string(store::to_state(c.outcome))},
          {"result", c.result},
          {"verdict", c.verdict},
          {"reasons", c.reasons},
          {"accepted_commit", c.accepted_commit}};
}

Result<store::Completion> completion_from_json(const json& j) {
  if (!j.is_object()) return fail("a completion is a JSON object");
  store::Completion c;
  const json& oj = j.value("outcome", json(""));
  if (!oj.is_string()) return fail(fmt::format("outcome is {}, not accepted, rejected or failed", oj.type_name()));
  const std::string o = oj.get<std::string>();
  if (o == "accepted") c.outcome = store::Outcome::accepted;
  else if (o == "rejected") c.outcome = store::Outcome::rejected;
  else if (o == "failed") c.outcome = store::Outcome::failed;
  else return fail(fmt::format("outcome \"{}\" is not accepted, rejected or failed", o));
  c.result = j.value("result", json());
  c.verdict = j.value("verdict", json());
  if (j.contains("reasons")) {
    if (!j["reasons"].is_array()) return fail("reasons must be an array of strings");
    for (const auto& r : j["reasons"]) {
      if (!r.is_string()) return fail("reasons must be an array of strings");
      c.reasons.push_back(r.get<std::string>());
    }
  }
  const auto& ac = j.value("accepted_commit", json(""));
  if (!ac.is_string()) return fail("accepted_commit must be a string");
  c.accepted_commit = ac.get<std::string>();
  return c;
}

json board_context_to_json(const BoardContext& c) {
  json rules;
  if (c.rules) rules = {{"doc", c.rules->doc}, {"commit", c.rules->commit}, {"commit_time", c.rules->commit_time}};
  json standing = json::object();
  for (const auto& [k, v] : c.standing) standing[k] = v;
  return {{"branch", c.branch},
          {"rules", rules},
          {"baseline_commit", c.baseline_commit},
          {"baseline_files", tree_to_json(c.baseline_tree)},
          {"baseline_measured", c.baseline_measured},
          {"standing", standing}};
}

Result<BoardContext> board_context_from_json(const json& j) {
  if (!j.is_object()) return fail("a board context is a JSON object");
  BoardContext c;
  const json& branch = j.value("branch", json());
  if (!branch.is_string() || (branch != "main" && !branch.get<std::string>().starts_with("routes/")))
    return fail("the board context's branch must be main or routes/<name>");
  c.branch = branch;
  if (const json& r = j.value("rules", json()); !r.is_null()) {
    if (!r.is_object() || !r.contains("doc") || !r.value("commit", json()).is_string())
      return fail("the board context's rules need their document and commit");
    auto parsed = board::parse_rules(r["doc"].dump(), "the server's scienceslack.json");
    if (!parsed) return tl::unexpected(parsed.error());
    parsed->commit = r["commit"];
    parsed->commit_time = r.value("commit_time", std::int64_t{0});
    c.rules = std::move(*parsed);
  }
  const json& bc = j.value("baseline_commit", json(""));
  if (!bc.is_string()) return fail("the board context's baseline_commit must be a string");
  c.baseline_commit = bc;
  auto tree = tree_from_json(j.value("baseline_files", json::array()));
  if (!tree) return fail("the board context's baseline source: " + tree.error().message);
  c.baseline_tree = std::move(*tree);
  c.baseline_measured = j.value("baseline_measured", json());
  const json& st = j.value("standing", json::object());
  if (!st.is_object()) return fail("the board context's standing maps kernel ids to speed-ups");
  for (const auto& [k, v] : st.items()) {
    if (!v.is_number()) return fail("the board context's standing of " + k + " is not a number");
    c.standing[k] = v.get<double>();
  }
  return c;
}

std::string base64_encode(const std::string& bytes) {
  if (sodium_init() < 0) return {};  // libsodium unusable on this system: nothing can be encoded
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  if (sodium_init() < 0) return {};  // libsodium unusable on this system: nothing can be encoded
  std::string out(text.size() / 4 * 3 + 3, '\0');
  std::size_t n = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(), nullptr,
                        &n, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
    return std::nullopt;
  out.resize(n);
  return out;
}

json tree_to_json(const package::PackageTree& t) {
  json files = json::array();
  for (const auto& f : t.files) files.push_back({{"path", f.path}, {"executable", f.executable}, {"base64", base64_encode(f.content)}});
  return files;
}

Result<package::PackageTree> tree_from_json(const json& j) {
  if (!j.is_array()) return fail("a package tree is an array of {path, executable, base64}");
  package::PackageTree t;
  std::set<std::string> dirs;
  for (const auto& f : j) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("base64") ||
        !f["base64"].is_string())
      return fail("a package tree entry needs a path and base64 content");
    auto bytes = base64_decode(f["base64"].get<std::string>());
    if (!bytes) return fail("the content of " + f["path"].get<std::string>() + " is not base64");
    std::string path = f["path"];
    if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos)
      return fail("package tree path \"" + path + "\" is not relative");
    t.files.push_back({path, std::move(*bytes), f.value("executable", false)});
    for (auto p = path.find('/'); p != std::string::npos; p = path.find('/', p + 1)) dirs.insert(path.substr(0, p));
  }
  std::sort(t.files.begin(), t.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  t.dirs.assign(dirs.begin(), dirs.end());
  return t;
}

json batch_to_json(const store::BatchJob& b) {
  return {{"job", job_to_json(b.job)}, {"owner", b.owner},         {"name", b.name},
          {"script", b.script},        {"script_text", b.script_text}, {"partition", b.partition}, {"time_s", b.time_s},
          {"cpus", b.cpus},            {"memory_mb", b.memory_mb}, {"gpus", b.gpus},
          {"route", b.route},          {"base_commit", b.base_commit}, {"sha256", b.sha256}};
}

Result<store::BatchJob> batch_from_json(const json& j) {
  if (!j.is_object()) return fail("the batch job is not a JSON object");
  store::BatchJob b;
  try {
    b.job = job_from_json(j.at("job"));
    b.owner = j.at("owner").get<std::string>();
    b.name = j.at("name").get<std::string>();
    b.script = j.at("script").get<std::string>();
    b.script_text = j.at("script_text").get<std::string>();
    b.partition = j.at("partition").get<std::string>();
    b.time_s = j.at("time_s").get<int>();
    b.cpus = j.at("cpus").get<int>();
    b.memory_mb = j.at("memory_mb").get<int>();
    b.gpus = j.at("gpus").get<int>();
    b.route = j.value("route", "");
    b.base_commit = j.at("base_commit").get<std::string>();
    b.sha256 = j.value("sha256", "");
  } catch (const json::exception& e) {
    return fail(std::string("the batch job is malformed: ") + e.what());
  }
  if (b.time_s < 1 || b.cpus < 1 || b.memory_mb < 1 || b.gpus < 0 || b.script.empty() || b.script_text.empty())
    return fail("the batch job's limits or script are out of range");
  return b;
}

json batch_end_to_json(const store::BatchEnd& e) {
  return {{"end_state", e.end_state}, {"exit_code", e.exit_code}, {"exit_signal", e.exit_signal},
          {"elapsed_ms", e.elapsed_ms}, {"result", e.result}};
}

Result<store::BatchEnd> batch_end_from_json(const json& j) {
  if (!j.is_object()) return fail("\"end\" must be an object {end_state, exit_code, exit_signal, elapsed_ms, result}");
  store::BatchEnd e;
  try {
    e.end_state = j.at("end_state").get<std::string>();
    e.exit_code = j.at("exit_code").get<int>();
    e.exit_signal = j.at("exit_signal").get<int>();
    e.elapsed_ms = j.at("elapsed_ms").get<std::int64_t>();
    e.result = j.value("result", json());
  } catch (const json::exception& ex) {
    return fail(std::string("\"end\" is malformed: ") + ex.what());
  }
  return e;
}

}  // namespace kzoo::jobs
