#include "kzoo/board/board.hpp"

#include <algorithm>
#include <ctime>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "kzoo/board/score.hpp"
#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/util/iso_time.hpp"

namespace kzoo::board {

using nlohmann::json;

namespace {

// A kernel's desc.yaml `status` on main (normal | frozen | deprecated); null when it declares none.
json desc_status(const store::KernelRepo& repo, const std::string& kernel_id) {
  auto text = repo.read_file(kernel_id + "/.kernel_package/desc.yaml", "refs/heads/main");
  if (!text) return nullptr;
  auto d = format::parse_yaml(*text, "desc.yaml");
  return d && d->is_object() && d->contains("status") && (*d)["status"].is_string() ? (*d)["status"] : json();
}


// The job id in a commit message's `Kzoo-Job: N` trailer, or -1.
std::int64_t job_of(const std::string& message) {
  static const std::regex re("(^|\n)Kzoo-Job: ([0-9]{1,18})(\n|$)");
  std::smatch m;
  if (!std::regex_search(message, m, re)) return -1;
  return std::stoll(m[2]);
}

bool matches(const json& check, const Rules& rules) {
  return check.is_object() && check.value("passed", false) && check.value("version", 0) == rules.version &&
         check.value("device_class", "") == rules.device_class;
}

// Every submission matching `f`, newest first (paged through the store).
Result<std::vector<store::Submission>> all_submissions(store::StateDb& db, store::SubmissionFilter f) {
  std::vector<store::Submission> out;
  f.limit = 1000;
  for (;;) {
    auto page = db.list_submissions(f);
    if (!page) return fail(page.error().message);
    if (page->empty()) break;
    out.insert(out.end(), page->begin(), page->end());
    f.before_id = page->back().id;
    if (page->size() < 1000) break;
  }
  return out;
}

double job_cost(store::StateDb& db, const store::Submission& s) {
  double cost = 0;
  auto jobs = db.jobs_of(s.id);
  if (!jobs) return 0;
  for (const auto& j : *jobs)
    if (j.result.is_object() && j.result.contains("check") && j.result["check"].is_object())
      cost += j.result["check"].value("cost_s", 0.0);
  return cost;
}

// A route's reported metrics: routes/<name>/metrics.json on its branch.
json reported_of(const store::KernelRepo& repo, const Rules& rules, const std::string& ref, const std::string& name) {
  if (name == "main") return nullptr;
  const std::string path = name + "/metrics.json";  // name is "routes/<x>"
  auto text = repo.read_file(path, ref);
  if (!text) return nullptr;
  json out = {{"path", path}};
  auto doc = format::parse_json(*text, path);
  if (!doc) {
    out["error"] = to_string(doc.error());
    return out;
  }
  Violations vs = format::SchemaSet::bundled().validate(*doc, "board_metrics", path);
  if (!vs.empty()) {
    out["error"] = to_string(vs.front());
    return out;
  }
  auto h = repo.history(path, 1, ref);
  std::string by = h && !h->empty() ? h->front().author.name : "";
  out["score"] = (*doc)["score"];
  out["cost"] = (*doc)["cost"];
  out["by"] = by;
  out["by_maintainer"] = std::find(rules.maintainers.begin(), rules.maintainers.end(), by) != rules.maintainers.end();
  out["date"] = h && !h->empty() ? json(iso8601_utc(h->front().time * 1000)) : json();
  out["commit"] = h && !h->empty() ? json(h->front().id) : json();
  return out;
}

}  // namespace

bool valid_route_name(const std::string& name) {
  static const std::regex re("^[a-z0-9][a-z0-9._-]{0,62}$");
  return std::regex_match(name, re) && name.find("..") == std::string::npos && !name.ends_with(".lock") &&
         !name.ends_with(".");
}

Result<std::string> baseline_commit(const store::KernelRepo& repo, const std::string& kernel_id) {
  auto h = repo.history(kernel_id + "/src", 100000, "refs/heads/main");
  if (!h) return tl::unexpected(h.error());
  if (h->empty()) return fail(fmt::format("kernel {} has no source on main", kernel_id));
  return h->back().id;
}

json check_record(const store::KernelRepo& repo, std::int64_t job_id) {
  auto ev = repo.read_job_evidence(std::to_string(job_id));
  if (!ev || !ev->count("check.json")) return nullptr;
  auto doc = format::parse_json(ev->at("check.json"), "check.json");
  if (!doc) return nullptr;
  return *doc;
}

Result<json> baseline_for(const store::KernelRepo& repo, store::StateDb& db, const Rules& rules,
                          const std::string& kernel_id) {
  store::SubmissionFilter f;
  f.kernel_id = kernel_id;
  f.kind = "baseline";
  f.state = store::State::accepted;
  auto subs = all_submissions(db, f);
  if (!subs) return tl::unexpected(subs.error());
  for (const auto& s : *subs) {
    auto jobs = db.jobs_of(s.id);
    if (!jobs || jobs->empty()) continue;
    json c = check_record(repo, jobs->back().id);
    if (matches(c, rules)) {
      c["job"] = jobs->back().id;
      c["submission"] = s.id;
      c["time"] = iso8601_utc(s.updated_at);
      return c;
    }
  }
  return json();
}

Result<json> route_result(const store::KernelRepo& repo, const Rules& rules, const std::string& ref,
                          const std::string& kernel_id) {
  auto hist = repo.history(kernel_id + "/src", 200, ref);
  if (!hist) return json();  // the kernel is not on this route
  for (const auto& c : *hist) {
    std::int64_t job = job_of(c.message);
    if (job < 0) return json();  // unverified source: the eager one, or a hand edit
    json check = check_record(repo, job);
    if (matches(check, rules))
      return json{{"commit", c.id}, {"time", iso8601_utc(c.time * 1000)}, {"time_ms", c.time * 1000}, {"job", job},
                  {"check", check}, {"author", c.author.name}};
  }
  return json();
}

Result<std::map<std::string, double>> route_speedups(const store::KernelRepo& repo, store::StateDb& db,
                                                     const Rules& rules, const std::string& ref) {
  std::map<std::string, double> out;
  for (const auto& k : rules.kernels) {
    auto r = route_result(repo, rules, ref, k);
    if (!r) return tl::unexpected(r.error());
    if (r->is_null()) continue;
    auto b = baseline_for(repo, db, rules, k);
    if (!b) return tl::unexpected(b.error());
    if (b->is_null()) continue;
    auto f = kernel_figures((*b)["measured"], (*r)["check"]["measured"]);
    if (f.speedup) out[k] = *f.speedup;
  }
  return out;
}

namespace {

struct RouteInfo {
  std::string name, ref, owner, head;
  store::UnixMs created_at = 0;
};

Result<std::vector<RouteInfo>> list_routes(const store::KernelRepo& repo, store::StateDb& db) {
  std::vector<RouteInfo> out;
  auto main = repo.head("refs/heads/main");
  if (!main) return tl::unexpected(main.error());
  out.push_back({"main", "refs/heads/main", "maintainers", *main, 0});
  auto owners = db.list_routes();
  if (!owners) return fail(owners.error().message);
  std::map<std::string, store::Route> by_name;
  for (const auto& r : *owners) by_name[r.name] = r;
  auto refs = repo.list_refs(kRoutePrefix);
  if (!refs) return tl::unexpected(refs.error());
  for (const auto& ref : *refs) {
    std::string name = ref.substr(std::string(kRoutePrefix).size());
    auto head = repo.head(ref);
    if (!head) continue;
    auto it = by_name.find(name);
    out.push_back({"routes/" + name, ref, it != by_name.end() ? it->second.owner : "", *head,
                   it != by_name.end() ? it->second.created_at : 0});
  }
  return out;
}

// The JSON of one board under `rules`.
Result<json> compute(const store::KernelRepo& repo, store::StateDb& db, const Rules& rules, bool in_force,
                     store::UnixMs now) {
  auto routes = list_routes(repo, db);
  if (!routes) return tl::unexpected(routes.error());
  const bool cpu_board = rules.device_class == "cpu";

  // Baselines, once per kernel.
  std::map<std::string, json> baselines;
  for (const auto& k : rules.kernels) {
    auto b = baseline_for(repo, db, rules, k);
    if (!b) return tl::unexpected(b.error());
    baselines[k] = *b;
  }

  json route_docs = json::array();
  std::map<std::string, json> best;  // kernel -> best verified entry
  std::int64_t last_scored = 0;
  for (const auto& r : *routes) {
    json kernels = json::array();
    std::map<std::string, double> speedups;
    std::int64_t date = 0;
    for (const auto& k : rules.kernels) {
      json entry = {{"kernel_id", k}, {"speedup", nullptr}, {"time_us", nullptr}, {"eager_us", nullptr},
                    {"roofline_pct", nullptr}, {"commit", nullptr}, {"job", nullptr}, {"date", nullptr}};
      auto res = route_result(repo, rules, r.ref, k);
      if (!res) return tl::unexpected(res.error());
      if (res->is_null()) {
        entry["note"] = "no verified result: counts 1";
      } else if (baselines[k].is_null()) {
        entry["note"] = "no baseline measured on " + rules.device_class + " under version " +
                        std::to_string(rules.version) + ": counts 1";
        entry["commit"] = (*res)["commit"];
        entry["job"] = (*res)["job"];
      } else {
        auto f = kernel_figures(baselines[k]["measured"], (*res)["check"]["measured"]);
        entry["commit"] = (*res)["commit"];
        entry["job"] = (*res)["job"];
        entry["date"] = (*res)["time"];
        entry["author"] = (*res)["author"];
        if (f.time_us) entry["time_us"] = *f.time_us;
        if (f.eager_us) entry["eager_us"] = *f.eager_us;
        if (f.roofline_pct && !cpu_board) entry["roofline_pct"] = *f.roofline_pct;
        if (f.speedup) {
          entry["speedup"] = *f.speedup;
          speedups[k] = *f.speedup;
          date = std::max<std::int64_t>(date, (*res)["time_ms"].get<std::int64_t>());
          auto& b = best[k];
          if (b.is_null() || b["speedup"].get<double>() < *f.speedup) {
            b = entry;
            b["route"] = r.name;
          }
        } else {
          entry["note"] = f.note + ": counts 1";
        }
      }
      kernels.push_back(entry);
    }
    last_scored = std::max(last_scored, date);
    double cost = 0;
    store::SubmissionFilter f;
    f.route = r.name == "main" ? "" : r.name.substr(7);
    f.kind = "submission";
    auto subs = all_submissions(db, f);
    if (!subs) return tl::unexpected(subs.error());
    for (const auto& s : *subs) cost += job_cost(db, s);
    json doc = {{"name", r.name},
                {"ref", r.ref},
                {"head", r.head},
                {"owner", r.owner},
                {"verified",
                 {{"score", speedups.empty() ? json() : json(board_score(rules.kernels, speedups))},
                  {"kernels_with_results", speedups.size()},
                  {"date", date ? json(iso8601_utc(date)) : json()}}},
                {"cost_s", cost},
                {"reported", reported_of(repo, rules, r.ref, r.name)},
                {"kernels", kernels}};
    route_docs.push_back(doc);
  }

  // The ranking: verified scores, and what maintainers reported; others beside.
  json ranking = json::array(), others = json::array();
  for (const auto& r : route_docs) {
    if (r["verified"]["score"].is_number())
      ranking.push_back({{"route", r["name"]}, {"owner", r["owner"]}, {"kind", "verified"},
                         {"score", r["verified"]["score"]}, {"cost_s", r["cost_s"]}, {"date", r["verified"]["date"]}});
    const json& rep = r["reported"];
    if (rep.is_object() && rep.contains("score") && rep["score"].is_number()) {
      json e = {{"route", r["name"]}, {"owner", r["owner"]}, {"kind", "reported"}, {"score", rep["score"]},
                {"cost_s", rep["cost"]}, {"date", rep["date"]}, {"by", rep["by"]}};
      (rep["by_maintainer"].get<bool>() ? ranking : others).push_back(e);
    }
  }
  auto by_score = [](const json& a, const json& b) {
    if (a["score"].get<double>() != b["score"].get<double>()) return a["score"].get<double>() > b["score"].get<double>();
    return a["route"].get<std::string>() < b["route"].get<std::string>();
  };
  std::stable_sort(ranking.begin(), ranking.end(), by_score);
  std::stable_sort(others.begin(), others.end(), by_score);
  for (std::size_t i = 0; i < ranking.size(); ++i) ranking[i]["rank"] = i + 1;

  json kernels = json::array();
  for (const auto& k : rules.kernels) {
    const json& b = baselines[k];
    json e = {{"kernel_id", k}, {"baseline_job", b.is_null() ? json() : b["job"]}, {"eager_us", nullptr},
              {"best_us", nullptr}, {"speedup", 1.0}, {"route", nullptr}, {"roofline_pct", nullptr}, {"job", nullptr},
              {"status", desc_status(repo, k)}};
    if (!b.is_null()) {
      double eager = 0;
      bool all = true;
      for (const auto& c : b["measured"]["cases"])
        if (c["time_us"].is_number()) eager += c["time_us"].get<double>();
        else all = false;
      if (all) e["eager_us"] = eager;
    }
    if (best.count(k) && !best[k].is_null()) {
      e["best_us"] = best[k]["time_us"];
      e["speedup"] = best[k]["speedup"];
      e["route"] = best[k]["route"];
      e["roofline_pct"] = best[k]["roofline_pct"];
      e["job"] = best[k]["job"];
      e["commit"] = best[k]["commit"];
    } else {
      e["note"] = b.is_null() ? "no baseline yet" : "no verified result: counts 1";
    }
    kernels.push_back(e);
  }

  const json& bm = rules.doc["benchmark"];
  std::int64_t started_ms = rules.commit_time * 1000;
  if (bm.contains("started")) {
    std::tm tm{};
    std::string s = bm["started"];
    if (strptime(s.substr(0, 10).c_str(), "%Y-%m-%d", &tm)) started_ms = static_cast<std::int64_t>(timegm(&tm)) * 1000;
  }
  // Maintainers set a board's status (StateDb::set_board_status); the rules file's is the default.
  std::string status_set = rules.status;
  json status_by = nullptr;
  if (auto set = db.board_status(rules.version); set && *set) {
    status_set = (*set)->status;
    status_by = {{"who", (*set)->set_by}, {"at", iso8601_utc((*set)->set_at)}};
  }
  std::string status = status_set;
  std::string status_note;
  if (status == "active") {
    std::int64_t since = last_scored ? last_scored : started_ms;
    if (now - since > kQuietAfterMs) {
      status = "quiet";
      status_note = "No route has been scored for two weeks";
    }
  }

  // Who is at work: agents are agent tokens (an agent's token belongs to its
  // person, docs/SECURITY.md); one that submitted is an agent in all, one
  // with a submission not yet decided is at work.
  std::set<std::string> at_work, all;
  std::int64_t last_activity = 0;
  {
    store::SubmissionFilter f;
    f.kind = "submission";
    auto subs = all_submissions(db, f);
    if (!subs) return tl::unexpected(subs.error());
    std::map<std::string, bool> is_agent;  // token id -> kind is agent
    for (const auto& s : *subs) {
      last_activity = std::max(last_activity, s.updated_at);
      if (s.token_id.empty()) continue;
      auto known = is_agent.find(s.token_id);
      if (known == is_agent.end()) {
        auto t = db.get_token(s.token_id);
        known = is_agent.emplace(s.token_id, t && t->kind == store::TokenKind::agent).first;
      }
      if (!known->second) continue;
      all.insert(s.token_id);
      if (s.state == store::State::queued || s.state == store::State::running || s.state == store::State::received)
        at_work.insert(s.token_id);
    }
  }
  // Jobs from outside the project, waiting for a maintainer (JobHeldAdmin).
  json held = json::array();
  if (auto h = db.held_jobs(1000); h)
    for (const auto& j : *h)
      held.push_back({{"job", j.job_id}, {"submission", j.submission_id}, {"kernel_id", j.kernel_id},
                      {"submitter", j.submitter_id}, {"since", iso8601_utc(j.created_at)}});
  auto agents = repo.read_file("AGENTS.md", "refs/heads/main");
  auto vs = versions(repo);

  return json{{"board", bm["id"]},
              {"title", bm["title"]},
              {"description", bm.value("description", "")},
              {"task", bm["task"]},
              {"metric", bm["metric"]},
              {"baseline", bm["baseline"]},
              {"version", rules.version},
              {"in_force", in_force},
              {"versions", vs ? json(*vs) : json::array()},
              {"status", status},
              {"status_set", status_set},
              {"status_by", status_by},
              {"status_note", status_note},
              {"started", iso8601_utc(started_ms)},
              {"rules_commit", rules.commit},
              {"adopt", rules.adopt},
              {"device_class", rules.device_class},
              {"guardrails", bm["guardrails"]},
              {"checks", bm["checks"]},
              {"partitions", bm.value("partitions", json::array())},
              {"maintainers", rules.maintainers},
              {"kernel_ids", rules.kernels},
              {"counts",
               {{"agents_at_work", at_work.size()},
                {"agents", all.size()},
                {"routes", routes->size() - 1},
                {"held_jobs", held.size()},
                {"last_activity", last_activity ? json(iso8601_utc(last_activity)) : json()},
                {"last_scored", last_scored ? json(iso8601_utc(last_scored)) : json()}}},
              {"ranking", ranking},
              {"reported_others", others},
              {"kernels", kernels},
              {"routes", route_docs},
              {"held", held},
              {"project_rules", agents ? json(*agents) : json()}};
}

}  // namespace

Result<std::optional<json>> board_json(const store::KernelRepo& repo, store::StateDb& db, std::optional<int> version,
                                       store::UnixMs now) {
  auto in_force = rules_in_force(repo);
  if (!in_force) return tl::unexpected(in_force.error());
  if (*in_force)
    if (auto r = record_in_force(repo, **in_force); !r) return tl::unexpected(r.error());
  std::optional<Rules> rules;
  bool current = false;
  if (!version || (*in_force && (*in_force)->version == *version)) {
    rules = *in_force;
    current = true;
  } else {
    auto old = rules_of_version(repo, *version);
    if (!old) return tl::unexpected(old.error());
    rules = *old;
  }
  if (!rules) return std::optional<json>();
  auto doc = compute(repo, db, *rules, current, now);
  if (!doc) return tl::unexpected(doc.error());
  return std::optional<json>(std::move(*doc));
}

Result<json> kernel_json(const store::KernelRepo& repo, store::StateDb& db, const std::string& kernel_id) {
  json out = {{"kernel_id", kernel_id}, {"on_board", false}, {"description", nullptr}, {"summary", nullptr},
              {"baseline", nullptr}, {"points", json::array()}};
  auto desc_text = repo.read_file(kernel_id + "/.kernel_package/desc.yaml", "refs/heads/main");
  if (!desc_text) return fail(fmt::format("no kernel {} on main", kernel_id));
  if (auto d = format::parse_yaml(*desc_text, "desc.yaml"); d && d->is_object()) {
    out["description"] = d->value("description", json());
    out["summary"] = d->value("summary", json());
    out["status"] = d->value("status", json());  // normal | frozen | deprecated (the seed's desc.yaml)
  }
  auto rules = rules_in_force(repo);
  if (!rules) return tl::unexpected(rules.error());
  if (!*rules) return out;
  const Rules& r = **rules;
  out["on_board"] = std::find(r.kernels.begin(), r.kernels.end(), kernel_id) != r.kernels.end();
  out["version"] = r.version;
  out["device_class"] = r.device_class;
  auto base = baseline_for(repo, db, r, kernel_id);
  if (!base) return tl::unexpected(base.error());
  out["baseline"] = *base;
  auto routes = list_routes(repo, db);
  if (!routes) return tl::unexpected(routes.error());
  std::map<std::string, json> seen;  // job -> point (an adopted result is one check on two branches)
  for (const auto& rt : *routes) {
    auto hist = repo.history(kernel_id + "/src", 200, rt.ref);
    if (!hist) continue;
    for (const auto& c : *hist) {
      std::int64_t job = job_of(c.message);
      if (job < 0) break;
      json check = check_record(repo, job);
      if (!matches(check, r)) continue;
      std::optional<double> sp;
      if (!base->is_null()) sp = kernel_figures((*base)["measured"], check["measured"]).speedup;
      if (!sp) continue;
      json& p = seen[std::to_string(job)];
      if (p.is_null() || rt.name != "main")
        p = {{"date", iso8601_utc(c.time * 1000)}, {"time_ms", c.time * 1000}, {"speedup", *sp}, {"route", rt.name},
             {"commit", c.id}, {"job", job}, {"author", c.author.name}};
    }
  }
  std::vector<json> pts;
  for (auto& [k, v] : seen) pts.push_back(v);
  std::sort(pts.begin(), pts.end(), [](const json& a, const json& b) {
    return a["time_ms"].get<std::int64_t>() != b["time_ms"].get<std::int64_t>()
               ? a["time_ms"].get<std::int64_t>() < b["time_ms"].get<std::int64_t>()
               : a["job"].get<std::int64_t>() < b["job"].get<std::int64_t>();
  });
  out["points"] = pts;
  return out;
}

Result<json> routes_json(const store::KernelRepo& repo, store::StateDb& db, store::UnixMs now) {
  auto b = board_json(repo, db, std::nullopt, now);
  if (!b) return tl::unexpected(b.error());
  auto routes = list_routes(repo, db);
  if (!routes) return tl::unexpected(routes.error());
  json out = json::array();
  for (const auto& r : *routes) {
    json e = {{"name", r.name}, {"ref", r.ref}, {"owner", r.owner}, {"head", r.head},
              {"created_at", r.created_at ? json(iso8601_utc(r.created_at)) : json()}, {"open_pulls", 0}};
    const std::string aimed = r.name.rfind("routes/", 0) == 0 ? r.name.substr(7) : std::string();  // "": main
    if (auto p = db.list_pulls(aimed, store::PullState::open, 1000); p) e["open_pulls"] = p->size();
    if (*b)
      for (const auto& x : (**b)["routes"])
        if (x["name"] == r.name) {
          e["verified"] = x["verified"];
          e["reported"] = x["reported"];
          e["cost_s"] = x["cost_s"];
        }
    out.push_back(e);
  }
  return json{{"routes", out}, {"version", *b ? (**b)["version"] : json()}};
}

}  // namespace kzoo::board
