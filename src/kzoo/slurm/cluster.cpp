#include "kzoo/slurm/cluster.hpp"

#include <sstream>

#include <fmt/format.h>

#include "kzoo/util/command.hpp"

namespace kzoo::slurm {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

Result<util::CommandOutput> slurm(std::vector<std::string> argv) {
  auto r = util::run_command(argv, std::chrono::seconds(30));
  if (!r) return fail(r.error().message + " (is slurm-wlm installed, and SLURM_CONF set?)");
  return r;
}

bool unknown_job(const util::CommandOutput& r) { return r.err.find("Invalid job id") != std::string::npos; }

}  // namespace

Result<std::string> sbatch(const std::vector<std::string>& options, const std::string& script) {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(script);
  auto r = slurm(argv);
  if (!r) return tl::unexpected(r.error());
  std::string id = trimmed(r->out);
  id = id.substr(0, id.find(';'));  // "id;cluster" on a federation
  if (r->exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    return fail(fmt::format("sbatch refused the job (exit {}): {}", r->exit_code, trimmed(r->err + r->out)));
  return id;
}

Result<std::map<std::string, BatchState>> squeue(const std::vector<std::string>& ids) {
  std::map<std::string, BatchState> out;
  if (ids.empty()) return out;
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
  auto r = slurm({"squeue", "-h", "-j", list, "-o", "%i|%T|%r"});
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code != 0) {
    if (unknown_job(*r)) return out;  // every one of them ended and was forgotten
    return fail(fmt::format("squeue failed (exit {}): {}", r->exit_code, trimmed(r->err)));
  }
  std::istringstream in(r->out);
  for (std::string line; std::getline(in, line);) {
    auto a = line.find('|'), b = line.find('|', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out[line.substr(0, a)] = BatchState{line.substr(a + 1, b - a - 1), trimmed(line.substr(b + 1))};
  }
  return out;
}

Result<void> scancel(const std::string& id) {
  auto r = slurm({"scancel", id});
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code != 0 && !unknown_job(*r))
    return fail(fmt::format("scancel {} failed (exit {}): {}", id, r->exit_code, trimmed(r->err)));
  return {};
}

std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    auto eq = word.find('=');
    if (eq != std::string::npos) f.emplace(word.substr(0, eq), word.substr(eq + 1));
  }
  return f;
}

Result<std::optional<BatchEnd>> job_end(const std::string& id) {
  auto r = slurm({"scontrol", "show", "job", "-o", id});
  if (!r) return tl::unexpected(r.error());
  if (r->exit_code != 0) {
    if (unknown_job(*r)) return std::optional<BatchEnd>();
    return fail(fmt::format("scontrol show job {} failed (exit {}): {}", id, r->exit_code, trimmed(r->err)));
  }
  auto f = scontrol_fields(r->out);
  BatchEnd e;
  e.state = f["JobState"];
  e.reason = f["Reason"];
  if (e.state == "PENDING" || e.state == "RUNNING" || e.state == "COMPLETING" || e.state == "CONFIGURING" ||
      e.state == "SUSPENDED" || e.state == "REQUEUED")
    return std::optional<BatchEnd>();
  const std::string code = f["ExitCode"];  // "status:signal"
  auto colon = code.find(':');
  try {
    e.exit_code = std::stoi(code.substr(0, colon));
    if (colon != std::string::npos) e.signal = std::stoi(code.substr(colon + 1));
  } catch (const std::exception&) {
    return fail(fmt::format("scontrol show job {}: ExitCode \"{}\" is not status:signal", id, code));
  }
  return std::optional<BatchEnd>(e);
}

}  // namespace kzoo::slurm
