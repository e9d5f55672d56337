#include "kzoo/slurm/dispatcher.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "kzoo/board/rules.hpp"
#include "kzoo/format/json_text.hpp"

namespace kzoo::slurm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A running batch job gets this long past its time before it is cancelled:
// Slurm ends it at its time limit itself; this is for when it does not.
constexpr int kOverrunGraceS = 120;

}  // namespace

std::string batch_script(const std::vector<std::string>& argv, const std::string& dir) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + quoted(a);
  return "#!/bin/sh\n"
         "# kzoo's Slurm runner: one graded job in this allocation (src/kzoo/slurm/dispatcher.hpp).\n"
         "echo $$ > " + quoted(dir) + "/\"$SLURM_JOB_ID.pid\"\n"
         "exec " + cmd + "\n";
}

Dispatcher::Dispatcher(DispatchOptions o, store::StateDb& db, store::KernelRepo repo)
    : o_(std::move(o)), db_(db), repo_(std::move(repo)) {}

Result<Dispatcher> Dispatcher::open(DispatchOptions o, store::StateDb& db, store::KernelRepo repo) {
  if (o.worker.empty()) return fail("the Slurm runner needs the worker command its batch jobs run");
  if (o.max_batch < 1) return fail("--max-batch must be at least 1");
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", o.dir, ec.message()));
  Dispatcher d(std::move(o), db, std::move(repo));
  std::ifstream in(d.o_.dir + "/batch.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto e = format::parse_json(line, d.o_.dir + "/batch.jsonl");
    if (!e || !e->is_object()) continue;  // a line cut short by a crash
    const std::string id = e->value("id", "");
    if (e->value("event", "") == "submitted") {
      Batch b{id, e->value("at", std::int64_t{0})};
      b.gpus = e->value("gpus", 0);
      d.out_[id] = b;
    } else {
      d.out_.erase(id);
    }
  }
  return d;
}

void Dispatcher::say(const std::string& line) const {
  if (o_.log) o_.log(line);
}

void Dispatcher::note(const json& event) {
  json e = event;
  e["at"] = store::system_now_ms();
  std::ofstream out(o_.dir + "/batch.jsonl", std::ios::app);
  out << e.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
}

Result<Partition> Dispatcher::partition() {
  auto rules = board::rules_in_force(repo_);
  if (!rules) return fail("the board's rules cannot be read: " + rules.error().message);
  if (!*rules) return Partition{};
  auto p = board::checks_partition((*rules)->doc.value("benchmark", json::object()));
  if (!p) return tl::unexpected(p.error());
  return p->value_or(Partition{});
}

void Dispatcher::ended(const std::string& id, const std::optional<BatchEnd>& end, const std::string& why) {
  json e{{"event", "ended"}, {"id", id}, {"why", why}};
  if (end) {
    e["state"] = end->state;
    e["exit_code"] = end->exit_code;
    e["signal"] = end->signal;
    e["reason"] = end->reason;
  } else {
    e["state"] = "UNKNOWN";  // Slurm forgot it before we asked (MinJobAge)
  }
  note(e);
  say(fmt::format("batch job {} ended: {} ({})", id, e["state"].get<std::string>(), why));
  out_.erase(id);
}

Result<void> Dispatcher::follow(const Partition& p) {
  std::vector<std::string> ids;
  for (const auto& [id, b] : out_) ids.push_back(id);
  auto listed = squeue(ids);
  if (!listed) return tl::unexpected(listed.error());
  const std::int64_t now = store::system_now_ms();
  for (const auto& id : ids) {
    auto it = listed->find(id);
    Batch& b = out_[id];
    if (it == listed->end()) {
      auto end = job_end(id);
      if (!end) return tl::unexpected(end.error());
      ended(id, *end, "finished");
      continue;
    }
    b.state = it->second.state;
    if (b.state == "RUNNING" && b.started_at == 0) b.started_at = now;
    const bool overran = b.started_at && now - b.started_at > (p.time_limit_s + kOverrunGraceS) * 1000LL;
    const bool starved = b.state == "PENDING" && now - b.submitted_at > o_.pending_timeout_s * 1000LL;
    if (overran || starved) {
      if (auto c = scancel(id); !c) return tl::unexpected(c.error());
      ended(id, std::nullopt,
            overran ? fmt::format("cancelled: running past the partition's time limit of {} s", p.time_limit_s)
                    : fmt::format("cancelled: no allocation within {} s ({})", o_.pending_timeout_s, it->second.reason));
    }
  }
  return {};
}

Result<void> Dispatcher::submit(const Partition& p, int gpus) {
  std::vector<std::string> argv = o_.worker;
  // The check's own limit inside the batch job's: benchmark.py must end before Slurm ends the job.
  argv.push_back("--timeout");
  argv.push_back(std::to_string(std::max(60, p.default_time_s - 60)));
  const std::string script = o_.dir + "/worker.sh";
  {
    std::ofstream f(script, std::ios::trunc);
    f << batch_script(argv, o_.dir);
    if (!f) return fail("cannot write " + script);
  }
  std::vector<std::string> opts = sbatch_options(p, gpus);
  opts.insert(opts.end(), {"--job-name=kzoo-check", "--no-requeue", "--chdir=" + o_.dir, "--output=" + o_.dir + "/%j.log"});
  auto id = sbatch(opts, script);
  if (!id) return tl::unexpected(id.error());
  Batch b{*id, store::system_now_ms()};
  b.gpus = gpus;
  out_[*id] = b;
  note({{"event", "submitted"}, {"id", *id}, {"partition", p.name}, {"gpus", gpus}, {"options", opts}});
  say(fmt::format("batch job {} submitted on partition {}{}", *id, p.name,
                  gpus > 0 ? fmt::format(" ({} GPU{})", gpus, gpus == 1 ? "" : "s") : std::string()));
  return {};
}

int allocation_gpus(int need, int partition_gpus) {
  if (partition_gpus <= 0) return 0;
  return std::max(partition_gpus, need);
}

FillPlan plan_fill(const std::map<int, std::int64_t>& queued, const std::map<std::string, int>& pending,
                   int outstanding, int max_batch, int partition_gpus) {
  std::map<int, std::int64_t> need;  // allocation size -> batch jobs wanted
  for (const auto& [gpus, n] : queued) need[allocation_gpus(gpus, partition_gpus)] += n;
  std::map<int, std::vector<std::string>> have;  // allocation size -> pending ids, oldest first
  for (const auto& [id, gpus] : pending) have[gpus].push_back(id);
  FillPlan plan;
  for (auto& [gpus, ids] : have) {
    std::sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) { return std::stoll(a) < std::stoll(b); });
    // Every pending batch job will claim one queued job when it starts.
    for (std::int64_t excess = static_cast<std::int64_t>(ids.size()) - need[gpus]; excess > 0; --excess) {
      plan.cancel.push_back(ids.back());
      ids.pop_back();
    }
  }
  std::map<int, std::int64_t> short_of;
  for (const auto& [gpus, n] : need)
    if (const auto h = static_cast<std::int64_t>(have[gpus].size()); n > h) short_of[gpus] = n - h;
  int out = outstanding - static_cast<int>(plan.cancel.size());
  // Round-robin: a job needing a larger allocation is not kept waiting behind
  // every single-GPU one when --max-batch caps what is out.
  while (out < max_batch && !short_of.empty()) {
    for (auto it = short_of.begin(); it != short_of.end() && out < max_batch;) {
      plan.submit.push_back(it->first);
      ++out;
      it = --it->second == 0 ? short_of.erase(it) : std::next(it);
    }
  }
  return plan;
}

Result<void> Dispatcher::fill(const Partition& p) {
  auto queued = db_.claimable_by_gpus();
  if (!queued) return fail("cannot count the queued jobs: " + queued.error().message);
  std::map<std::string, int> pending;
  for (const auto& [id, b] : out_)
    // A batch job noted before its GPUs were (2026-12-02) asked for the partition's.
    if (b.state == "PENDING") pending[id] = b.gpus > 0 ? b.gpus : allocation_gpus(0, p.gpus);
  const FillPlan plan = plan_fill(*queued, pending, static_cast<int>(out_.size()), o_.max_batch, p.gpus);
  for (const auto& id : plan.cancel) {
    if (auto c = scancel(id); !c) return tl::unexpected(c.error());
    ended(id, std::nullopt, "cancelled: no queued job needs it any more");
  }
  for (int gpus : plan.submit)
    if (auto r = submit(p, gpus); !r) return r;
  return {};
}

Result<void> Dispatcher::step() {
  // Nobody else may be claiming: a dead node's job comes back here.
  if (auto r = db_.requeue_expired(db_.now()); r) {
    for (const auto& q : *r)
      say(fmt::format("job {}: lease of {} expired, now {}", q.job_id, q.lost_owner, store::to_string(q.now)));
  } else {
    return fail("taking back expired leases: " + r.error().message);
  }
  auto p = partition();
  if (!p) return tl::unexpected(p.error());
  if (auto r = follow(*p); !r) return r;
  return fill(*p);
}

void Dispatcher::run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    if (auto r = step(); !r) say("step failed, retrying: " + r.error().message);
    for (auto slept = std::chrono::milliseconds(0); slept < o_.poll && !stop.load(); slept += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace kzoo::slurm
