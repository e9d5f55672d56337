// Client verbs: `kzoo submit DIR|TARBALL`, `kzoo status ID`, `kzoo kernels`.
// Exit codes: 0 accepted (or queued with --no-wait) / success, 1 rejected,
// 2 error (unreachable server, bad input, failed or cancelled grading).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/kernel_id.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/store/state_db.hpp"

namespace cmd_submit {  // per command: a unity build joins commands (CMakeLists.txt)

namespace fs = std::filesystem;
using namespace kzoo::server;

void print(const nlohmann::json& doc) {
  std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// What the server's submission document means as an exit code.
int exit_for(const std::string& state) {
  if (state == "accepted" || state == "queued" || state == "running" || state == "received") return kzoo::cli::kExitOk;
  if (state == "rejected") return kzoo::cli::kExitInvalid;
  return kzoo::cli::kExitError;
}

double number(const nlohmann::json& c, const char* key) { return c.contains(key) && c[key].is_number() ? c[key].get<double>() : -1; }

// A case's feedback (GET /api/submissions/{id} `cases`), as lines a
// contributor acts on; only what the server reported.
std::vector<std::string> feedback_lines(const nlohmann::json& c) {
  std::vector<std::string> out;
  std::string fig;
  if (c.contains("metric") && c["metric"].is_string() && number(c, "value") >= 0)
    fig = fmt::format("{} {:.4g}", c["metric"].get<std::string>(), number(c, "value"));
  if (number(c, "time_us") >= 0) fig += fmt::format("{}{:.4g} us", fig.empty() ? "" : ", ", number(c, "time_us"));
  if (number(c, "roofline_pct") >= 0)
    fig += fmt::format(" = {:.1f}% of the device's roofline ({:.4g} us)", number(c, "roofline_pct"), number(c, "roofline_us"));
  if (!fig.empty()) out.push_back(fig);
  std::string speed;
  if (number(c, "speedup_over_incumbent") > 0)
    speed = fmt::format("{:.3f}x over the incumbent", number(c, "speedup_over_incumbent"));
  if (number(c, "speedup_over_eager") > 0)
    speed += fmt::format("{}{:.3f}x over eager PyTorch ({:.4g} us)", speed.empty() ? "" : ", ",
                         number(c, "speedup_over_eager"), number(c, "eager_time_us"));
  if (!speed.empty()) out.push_back(speed);
  if (c.contains("top_kernels") && c["top_kernels"].is_array() && !c["top_kernels"].empty()) {
    std::string ks;
    int n = 0;
    for (const auto& k : c["top_kernels"]) {
      if (n++ == 5) break;
      ks += fmt::format("{}{} x{} {:.4g} us ({:.0f}%)", ks.empty() ? "" : "; ", k.value("name", "?"), k.value("count", 0),
                        number(k, "time_us"), 100 * number(k, "share"));
    }
    out.push_back("top kernels by device time: " + ks);
  }
  if (c.value("correct", true) == false) {
    if (number(c, "error_abs_max") >= 0 || number(c, "error_rel") >= 0)
      out.push_back(fmt::format("errors: largest absolute {:.4g}, relative {:.4g}", number(c, "error_abs_max"),
                                number(c, "error_rel")));
    if (c.contains("worst") && c["worst"].is_object()) {
      const auto& w = c["worst"];
      out.push_back(fmt::format("worst element: {}[{}] is {} where the reference has {}{}", w.value("output", "?"),
                                w.contains("index") ? w["index"].dump() : "?", w.contains("out") ? w["out"].dump() : "?",
                                w.contains("expected") ? w["expected"].dump() : "?",
                                w.contains("shape") ? " at shape " + w["shape"].dump() : ""));
    }
  }
  return out;
}

void print_submission(const nlohmann::json& s) {
  std::cerr << fmt::format("submission {} ({}): {}\n", s.value("id", 0), s.value("kernel_id", ""),
                           s.value("state", "?"));
  // Figures are labelled with the device class that produced them: a CPU worker's figures of
  // an h200 kernel are not h200 figures (docs/WORKER.md).
  std::string dc = s.contains("device_class") && s["device_class"].is_string() ? s["device_class"].get<std::string>() : "";
  const std::string kid = s.value("kernel_id", "");
  const std::string arch = kid.substr(0, kid.find('/'));
  if (!dc.empty())
    std::cerr << fmt::format("  measured on device class {}{}\n", dc,
                             dc == arch ? "" : " (not " + arch + ": kept with the job, not entered into the board)");
  if (s.contains("cases"))
    for (const auto& c : s["cases"]) {
      std::string metrics = c.contains("metrics") ? c["metrics"].dump() : "";
      std::cerr << fmt::format("  {} {} {}{}{}\n", c.value("test_case_id", "?"), c.value("status", ""), metrics,
                               dc.empty() || metrics.empty() ? "" : " [" + dc + "]",
                               c.contains("shape") && c["shape"].is_string() ? "  (" + c["shape"].get<std::string>() + ")" : "");
      for (const auto& l : feedback_lines(c)) std::cerr << "      " << l << "\n";
    }
  if (s.contains("reasons"))
    for (const auto& r : s["reasons"]) std::cerr << "  reason: " << r.get<std::string>() << "\n";
}

// Where a submission stands while it waits: its place in the workers' line,
// the worker that runs it, or who it waits for. Empty once it has ended.
std::string progress_line(const nlohmann::json& s) {
  if (s.value("final", false)) return "";
  const nlohmann::json* job = s.contains("jobs") && s["jobs"].is_array() && !s["jobs"].empty() ? &s["jobs"].back() : nullptr;
  if (s.contains("queue_position") && s["queue_position"].is_number()) {
    const auto pos = s["queue_position"].get<std::int64_t>();
    return pos == 1 ? "queued, next in line (kzoo queue shows the line)"
                    : fmt::format("queued, position {} ({} ahead; kzoo queue shows the line)", pos, pos - 1);
  }
  if (job && job->value("held", false)) return fmt::format("held ({}), not yet in line", job->value("hold_reason", ""));
  if (job && (*job)["worker"].is_string())
    return fmt::format("running on {} (attempt {} of {})", (*job)["worker"].get<std::string>(), job->value("attempts", 0),
                       job->value("max_attempts", 0));
  return s.value("state", "");
}

struct SubmitOptions {
  std::string input, summary, server, submitter, kernel_id, route;
  bool pull_request = false;
  bool no_wait = false, json = false;
};

int submit(const SubmitOptions& o) {
  auto error = [&](const std::string& msg) {
    std::cerr << "kzoo submit: " << msg << "\n";
    if (o.json) print({{"error", msg}});
    return kzoo::cli::kExitError;
  };
  std::string bytes, kernel_id, filename;
  std::error_code ec;
  if (fs::is_directory(o.input, ec)) {
    // Inspect locally first: a package the server would refuse is not sent.
    auto loaded = kzoo::package::read_package_dir(o.input);
    if (!loaded) return error(loaded.error().message);
    if (!o.kernel_id.empty()) {
      kernel_id = o.kernel_id;
    } else {
      auto id = kzoo::package::kernel_id_of(o.input);
      if (!id) return error(id.error().message + " (or give --kernel-id)");
      kernel_id = *id;
    }
    auto insp = kzoo::package::inspect_tree(loaded->tree, kernel_id, o.input);
    kzoo::Violations vs = loaded->violations;
    vs.insert(vs.end(), insp.violations.begin(), insp.violations.end());
    if (!vs.empty()) {
      std::cerr << "kzoo submit: the package is invalid, nothing sent:\n";
      for (const auto& v : vs) std::cerr << "  " << kzoo::to_string(v) << "\n";
      if (o.json) print({{"state", "invalid"}, {"violations", kzoo::to_json(vs)}});
      return kzoo::cli::kExitInvalid;
    }
    auto tgz = kzoo::package::package_tarball_bytes(loaded->tree, kernel_id);
    if (!tgz) return error(tgz.error().message);
    bytes = std::move(*tgz);
    filename = fs::path(kernel_id).filename().string() + ".tar.gz";
  } else {
    std::ifstream in(o.input, std::ios::binary);
    if (!in) return error("cannot read " + o.input + ": give a package directory or a .tar.gz");
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
    auto tar = kzoo::package::read_package_tarball_bytes(bytes);
    if (tar.kernel_id.empty()) {
      std::cerr << "kzoo submit: " << o.input << " is not a package tarball:\n";
      for (const auto& v : tar.violations) std::cerr << "  " << kzoo::to_string(v) << "\n";
      return kzoo::cli::kExitInvalid;
    }
    kernel_id = tar.kernel_id;
    filename = fs::path(o.input).filename().string();
  }
  // The server takes the submitter from the token ($KZOO_TOKEN); a name given
  // here is sent too, and the server checks it is the token's owner.
  std::map<std::string, std::string> fields{
      {"kernel_id", kernel_id}, {"package_filename", filename}, {"optimization_summary", o.summary}};
  if (!o.submitter.empty()) fields["submitter_id"] = o.submitter;
  std::cerr << fmt::format("kzoo submit: {} ({} bytes) to {}\n", kernel_id, bytes.size(), o.server);
  if (!o.route.empty()) fields["route"] = o.route;
  if (o.pull_request) fields["pull_request"] = "true";
  auto ans = upload_submission(
      o.server, fields,
      bytes, filename, [](std::uint64_t sent, std::uint64_t total) {
        std::cerr << fmt::format("\r  uploading {:3d}%", total ? sent * 100 / total : 100) << std::flush;
      });
  std::cerr << "\n";
  if (!ans) return error(ans.error().message);
  if (ans->status == 422 && ans->body.is_object() && ans->body["error"].contains("id")) {
    std::cerr << "kzoo submit: rejected: " << describe_error(*ans) << "\n";
    if (o.json) print(ans->body);
    return kzoo::cli::kExitInvalid;
  }
  if (ans->status != 202) return error(describe_error(*ans));
  const auto id = ans->body.value("id", std::int64_t{0});
  std::cerr << fmt::format("kzoo submit: submission {} queued\n", id);
  if (ans->body.value("held", false)) {
    const bool pull = ans->body.value("hold_reason", "") == "PullRequest";
    std::cerr << fmt::format("kzoo submit: its job is held ({}): {}\n", ans->body.value("hold_reason", ""),
                             pull ? fmt::format("a pull request, graded once the route's owner merges it (kzoo merge {})", id)
                                  : "it waits for a maintainer to release it (kzoo release)");
  }
  if (o.no_wait) {
    if (o.json) print(ans->body);
    return kzoo::cli::kExitOk;
  }
  // At most a second between looks: the verdict is seen within a second of
  // being decided. The 5 s this backed off to before came late by 2-4 s on an
  // A/B of 12-45 s (docs/PERF.md), a tenth of the 20 s target; a look is one
  // cheap GET.
  auto pause = std::chrono::milliseconds(250);
  std::string said;  // the last progress line, printed again only when it changes
  for (;;) {
    auto s = http_get(o.server, fmt::format("/api/submissions/{}", id));
    if (!s) return error(s.error().message);
    if (s->status != 200) return error(describe_error(*s));
    if (auto now = progress_line(s->body); !now.empty() && now != said) {
      std::cerr << "kzoo submit: " << now << "\n";
      said = now;
    }
    if (s->body.value("final", false)) {
      print_submission(s->body);
      if (o.json) print(s->body);
      return exit_for(s->body.value("state", ""));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

const bool submit_registered = kzoo::cli::register_command(
    "submit", "Upload a package (directory or .tar.gz) for grading and wait for the verdict",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<SubmitOptions>();
      o->server = default_server_url();
      sub.add_option("package", o->input, "Package directory or .tar.gz")->required();
      sub.add_option("--summary", o->summary, "optimization_summary: what this submission changes")->required();
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER, default http://127.0.0.1:8321)");
      sub.add_option("--submitter", o->submitter, "submitter_id, checked against the token's owner (default: the owner)");
      sub.add_option("--kernel-id", o->kernel_id, "Kernel ID of a directory outside a kernel_data root");
      sub.add_option("--route", o->route, "The route (branch routes/NAME) to land on; the first to name it owns it");
      sub.add_flag("--pull-request", o->pull_request,
                   "The route is someone else's: open a pull request to it (graded once its owner merges it)");
      sub.add_flag("--no-wait", o->no_wait, "Return once queued");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] { return submit(*o); };
    });

struct GetOptions {
  std::string id, server;
  bool json = false;
};

const bool status_registered = kzoo::cli::register_command(
    "status", "Show a submission's state and verdict", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<GetOptions>();
      o->server = default_server_url();
      sub.add_option("id", o->id, "Submission id")->required()->check(CLI::PositiveNumber);
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        auto s = http_get(o->server, "/api/submissions/" + o->id);
        if (!s || s->status != 200) {
          std::cerr << "kzoo status: " << (s ? describe_error(*s) : s.error().message) << "\n";
          return kzoo::cli::kExitError;
        }
        if (o->json) print(s->body);
        else print_submission(s->body);
        return exit_for(s->body.value("state", ""));
      };
    });

const bool kernels_registered = kzoo::cli::register_command(
    "kernels", "List the kernels the server holds, with their metrics", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<GetOptions>();
      o->server = default_server_url();
      sub.add_option("--server", o->server, "Server URL (env KZOO_SERVER)");
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] {
        auto s = http_get(o->server, "/api/kernels");
        if (!s || s->status != 200) {
          std::cerr << "kzoo kernels: " << (s ? describe_error(*s) : s.error().message) << "\n";
          return kzoo::cli::kExitError;
        }
        if (o->json) {
          print(s->body);
          return kzoo::cli::kExitOk;
        }
        for (const auto& k : s->body["kernels"]) {
          // The seed's desc.yaml status: frozen takes no submissions, deprecated is kept for history.
          const std::string status = k["status"].is_string() ? k["status"].get<std::string>() : "normal";
          std::cout << k.value("kernel_id", "") << (status == "normal" ? "" : "  [" + status + "]") << "  "
                    << (k["summary"].is_string() ? k["summary"].get<std::string>() : "") << "\n";
          for (auto& [tc, m] : k["metrics"].items()) std::cout << "    " << tc << " " << m["metrics_best"].dump() << "\n";
        }
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
