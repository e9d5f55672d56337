#include "kzoo/server/pages.hpp"

#include <cmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>
#include <kainjow/mustache.hpp>

#include "kzoo/server/page_templates.hpp"

namespace kzoo::server {

namespace mu = kainjow::mustache;
using nlohmann::json;

namespace {

// JSON -> mustache data: null and false are false (a section skips them);
// numbers are written with up to 6 significant digits.
mu::data to_data(const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      mu::data d{mu::data::type::object};
      for (auto& [k, v] : j.items()) d.set(k, to_data(v));
      return d;
    }
    case json::value_t::array: {
      mu::data d{mu::data::type::list};
      for (const auto& v : j) d.push_back(to_data(v));
      return d;
    }
    case json::value_t::string: return mu::data(j.get<std::string>());
    case json::value_t::boolean: return mu::data(j.get<bool>() ? mu::data::type::bool_true : mu::data::type::bool_false);
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return mu::data(std::to_string(j.get<std::int64_t>()));
    case json::value_t::number_float: return mu::data(fmt::format("{:.6g}", j.get<double>()));
    default: return mu::data(mu::data::type::bool_false);
  }
}

std::string render(const char* tmpl, const json& view) {
  mu::mustache m{tmpl};
  mu::data d = to_data(view);
  d.set("head", mu::partial([] { return std::string(templates::kHead); }));
  d.set("foot", mu::partial([] { return std::string(templates::kFoot); }));
  if (!m.is_valid()) return "<!doctype html><title>template error</title><p>template error: " + m.error_message();
  return m.render(d);
}

std::string fixed(const json& x, int digits) {
  return x.is_number() ? fmt::format("{:.{}f}", x.get<double>(), digits) : std::string("–");
}
std::string text(const json& x, const std::string& none = "–") { return x.is_string() ? x.get<std::string>() : none; }

std::int64_t parse_iso_ms(const std::string& s) {
  std::tm tm{};
  if (s.size() < 19 || !strptime(s.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

std::string ago(const std::string& iso) {
  std::int64_t t = parse_iso_ms(iso);
  if (!t) return "never";
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::int64_t s = std::max<std::int64_t>(0, (now - t) / 1000);
  if (s < 120) return "just now";
  if (s < 7200) return fmt::format("{} minutes ago", s / 60);
  if (s < 2 * 86400) return fmt::format("{} hours ago", s / 3600);
  if (s < 14 * 86400) return fmt::format("{} days ago", s / 86400);
  if (s < 60 * 86400) return fmt::format("{} weeks ago", s / (7 * 86400));
  return fmt::format("{} months ago", s / (30 * 86400));
}

std::string title_case(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

std::string markdown_html(const std::string& md) {
  char* html = cmark_markdown_to_html(md.data(), md.size(), CMARK_OPT_DEFAULT);  // safe: raw HTML dropped
  std::string out = html ? html : "";
  std::free(html);
  return out;
}

std::string speedup_svg(const json& points) {
  const double W = 640, H = 240, L = 48, R = 12, T = 12, B = 32;
  std::vector<std::pair<double, double>> pts;
  double tmin = 0, tmax = 0, ymax = 1.0;
  for (const auto& p : points) {
    if (!p.contains("time_ms") || !p["speedup"].is_number()) continue;
    double t = static_cast<double>(p["time_ms"].get<std::int64_t>()), y = p["speedup"].get<double>();
    if (!std::isfinite(y)) continue;
    if (pts.empty() || t < tmin) tmin = pts.empty() ? t : std::min(tmin, t);
    tmax = std::max(tmax, t);
    ymax = std::max(ymax, y);
    pts.push_back({t, y});
  }
  ymax = std::ceil(ymax * 1.1 * 4) / 4;
  if (tmax <= tmin) tmax = tmin + 1;
  auto X = [&](double t) { return L + (W - L - R) * (t - tmin) / (tmax - tmin); };
  auto Y = [&](double y) { return T + (H - T - B) * (1 - y / ymax); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"speedup-plot\" role=\"img\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" aria-label=\"speed-up over time\">",
      W, H, W, H);
  s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fafafa\" stroke=\"#ccc\"/>",
                   L, T, W - L - R, H - T - B);
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * i / 4;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{:.2f}x</text>",
                     L - 4, Y(y) + 4, y);
  }
  s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>",
                   L, Y(1), W - R, Y(1));
  if (pts.empty()) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"13\" text-anchor=\"middle\" fill=\"#666\">no verified "
                     "result yet</text>",
                     (W + L - R) / 2, (H - B + T) / 2);
  } else {
    std::string line;
    double best = 0;
    for (const auto& [t, y] : pts) {
      best = std::max(best, y);  // the record so far: a step line
      line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", X(t), Y(best));
    }
    s += "<polyline fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"2\" points=\"" + line + "\"/>";
    for (const auto& [t, y] : pts)
      s += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#2b6cb0\"/>", X(t), Y(y));
    auto day = [](double ms) {
      std::time_t t = static_cast<std::time_t>(ms / 1000);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char b[32];
      std::strftime(b, sizeof b, "%Y-%m-%d %H:%M", &tm);
      return std::string(b);
    };
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\">{}</text>", L, H - 10, day(tmin));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{}</text>",
                     W - R, H - 10, day(tmax));
  }
  return s + "</svg>";
}

std::string render_board_page(const json& b) {
  const json& g = b["guardrails"];
  json v = {{"page_title", text(b["title"]) + " · kzoo board"},
            {"board", b["board"]},
            {"title", b["title"]},
            {"description", b["description"]},
            {"status", b["status"]},
            {"status_title", title_case(text(b["status"]))},
            {"status_note", b["status_note"]},
            {"version", b["version"]},
            {"in_force", b["in_force"]},
            {"age", ago(text(b["started"], ""))},
            {"agents_at_work", b["counts"]["agents_at_work"]},
            {"agents", b["counts"]["agents"]},
            {"routes", b["counts"]["routes"]},
            {"held_jobs", b["counts"].value("held_jobs", 0)},
            {"held", b.value("held", json::array())},
            {"last_activity", ago(text(b["counts"]["last_activity"], ""))},
            {"task", b["task"]},
            {"metric", b["metric"]["name"]},
            {"baseline", b["baseline"]["name"]},
            {"kernel_count", b["kernel_ids"].size()},
            {"prose", g.value("prose", json::array())},
            {"atol", g.contains("atol") && g["atol"].is_number() ? fmt::format("{:g}", g["atol"].get<double>()) : "the task's"},
            {"rtol", g.contains("rtol") && g["rtol"].is_number() ? fmt::format("{:g}", g["rtol"].get<double>()) : "the task's"},
            {"inputs", g["inputs"]},
            {"timed_runs", g["timed_runs"]},
            {"warmup", g["warmup"]},
            {"device_class", g["device_class"]},
            {"adopt_text", b["adopt"] == "auto" ? "automatic (adopt: auto)" : "the maintainers' call"},
            {"adopt_auto", b["adopt"] == "auto"},
            {"rules_short", text(b["rules_commit"]).substr(0, 7)},
            {"has_checks", !b["checks"].empty()},
            {"checks", b["checks"]},
            {"partitions", b["partitions"]},
            {"agents_html", b["project_rules"].is_string() ? json(markdown_html(b["project_rules"])) : json(false)}};
  json ranking = json::array();
  for (const auto& r : b["ranking"])
    ranking.push_back({{"rank", r["rank"]}, {"route", r["route"]}, {"owner", text(r["owner"])}, {"kind", r["kind"]},
                       {"score", fixed(r["score"], 4)}, {"cost", fixed(r["cost_s"], 1)}, {"date", text(r["date"])}});
  v["ranking"] = ranking;
  json others = json::array();
  for (const auto& r : b["reported_others"])
    others.push_back({{"route", r["route"]}, {"score", fixed(r["score"], 4)}, {"by", text(r["by"])}});
  v["others"] = others;
  v["has_others"] = !others.empty();
  json kernels = json::array();
  double logsum = 0;
  for (const auto& k : b["kernels"]) {
    kernels.push_back({{"kernel_id", k["kernel_id"]}, {"eager", fixed(k["eager_us"], 1)}, {"best", fixed(k["best_us"], 1)},
                       {"speedup", fixed(k["speedup"], 4)}, {"route", text(k["route"])},
                       {"roofline", fixed(k["roofline_pct"], 1)},
                       // frozen or deprecated (desc.yaml): marked beside the kernel's name
                       {"has_status", k.contains("status") && k["status"].is_string() && k["status"] != "normal"},
                       {"status", k.contains("status") ? text(k["status"], "") : std::string()}});
    logsum += std::log(k["speedup"].is_number() ? k["speedup"].get<double>() : 1.0);
  }
  v["kernels"] = kernels;
  v["best_geomean"] = fixed(b["kernels"].empty() ? 1.0 : std::exp(logsum / static_cast<double>(b["kernels"].size())), 4);
  json versions = json::array();
  for (const auto& x : b["versions"]) versions.push_back({{"v", x}});
  v["versions"] = versions;
  v["has_versions"] = versions.size() > 1;
  return render(templates::kBoard, v);
}

std::string render_kernel_page(const json& k) {
  json pts = json::array();
  for (const auto& p : k["points"])
    pts.push_back({{"date", p["date"]}, {"route", p["route"]}, {"author", text(p["author"])},
                   {"speedup", fixed(p["speedup"], 4)}, {"commit_short", text(p["commit"]).substr(0, 12)}, {"job", p["job"]}});
  json v = {{"page_title", text(k["kernel_id"]) + " · kzoo board"}, {"kernel_id", k["kernel_id"]},
            {"summary", k["summary"]}, {"description", k["description"]}, {"points", pts},
            {"svg", speedup_svg(k["points"])}, {"device_class", k.value("device_class", json())},
            {"version", k.value("version", json())}};
  return render(templates::kKernel, v);
}

std::string render_submission_page(const json& s) {
  json cases = json::array();
  if (s["verdict"].is_object() && s["verdict"].contains("cases"))
    for (const auto& c : s["verdict"]["cases"]) {
      std::string metrics;
      if (c.contains("metrics") && c["metrics"].is_object())
        for (auto& [name, x] : c["metrics"].items())
          metrics += (metrics.empty() ? "" : ", ") + name + " " + (x.is_number() ? fmt::format("{:.6g}", x.get<double>()) : "–");
      // What a contributor acts on (verdict::CaseFigures::feedback), as the API gives it.
      const json f = c.contains("feedback") && c["feedback"].is_object() ? c["feedback"] : json::object();
      std::string top;
      if (f.contains("top_kernels") && f["top_kernels"].is_array())
        for (const auto& k : f["top_kernels"]) {
          if (!k.is_object()) continue;
          top += fmt::format("{}{} ×{} {} µs ({}%)", top.empty() ? "" : "; ", text(k.value("name", json()), "?"),
                             fixed(k.value("count", json()), 1), fixed(k.value("time_us", json()), 1),
                             k.value("share", json()).is_number() ? fixed(json(100 * k["share"].get<double>()), 0) : "–");
        }
      std::string errors;
      if (c.value("correct", json(true)) != json(true)) {
        const json fe = f.value("error_abs_max", json()), fr = f.value("error_rel", json());
        if (fe.is_number() || fr.is_number())
          errors = fmt::format("largest absolute error {}, relative {}",
                               fe.is_number() ? fmt::format("{:.4g}", fe.get<double>()) : "–",
                               fr.is_number() ? fmt::format("{:.4g}", fr.get<double>()) : "–");
        if (f.contains("worst") && f["worst"].is_object()) {
          const json& w = f["worst"];
          errors += fmt::format("{}worst element {}{} = {} where the reference has {}{}", errors.empty() ? "" : "; ",
                                text(w.value("output", json()), "?"), w.value("index", json()).dump(),
                                w.value("out", json()).dump(), w.value("expected", json()).dump(),
                                w.contains("shape") ? " at shape " + w["shape"].dump() : "");
        }
      }
      cases.push_back({{"test_case_id", c.value("test_case_id", "")}, {"status", c.value("status", "")},
                       {"correct", c.contains("correct") ? c["correct"].dump() : "–"}, {"metrics", metrics},
                       {"shape", text(f.value("shape", json()), "")},
                       {"roofline", fixed(f.value("roofline_pct", json()), 1)},
                       {"eager", fixed(f.value("speedup_over_eager", json()), 3)},
                       {"top", top}, {"errors", errors},
                       {"speedup", fixed(c.value("speedup", json()), 4)}, {"message", text(c.value("message", json()),
                                                                                              text(f.value("message", json()), ""))}});
    }
  json v = s;
  v["page_title"] = fmt::format("Submission {} · kzoo", s.value("id", 0));
  v["cases"] = cases;
  v["route"] = s["route"].is_string() && !s["route"].get<std::string>().empty() ? s["route"] : json("main");
  v["accepted_commit"] = text(s["accepted_commit"]);
  return render(templates::kSubmission, v);
}

std::string render_message_page(const std::string& title, const std::string& message) {
  return render(templates::kMessage, {{"page_title", title}, {"message", message}});
}

std::string render_issues_page(const json& list, const std::string& state) {
  json v = list;
  v["page_title"] = "Issues · kzoo";
  v["state"] = state;
  return render(templates::kIssues, v);
}

std::string render_issue_page(const json& issue) {
  json v = issue;
  v["page_title"] = fmt::format("Issue {} · kzoo", issue.value("id", 0));
  return render(templates::kIssue, v);
}

}  // namespace kzoo::server
