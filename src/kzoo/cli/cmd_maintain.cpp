// `kzoo maintain`: the daily pass that keeps a data directory's repository
// small (docs/SCALE.md §4, docs/STORE.md "Retention"): deletes the evidence
// refs (refs/jobs/<id>) of graded jobs that ended rejected, failed or
// cancelled more than --keep-days ago, and of users' batch jobs that ended
// then (unless their result became an accepted submission or is still being
// judged), then packs the repository (git gc). Run it once a day
// beside the server (cron, a systemd timer); on PostgreSQL it takes the
// repository writers' turn like every other write, so any one host may run it.
// Exit codes: 0 done (or nothing to do), 2 error (nothing deleted).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/local_state.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/store/evidence_retention.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/util/iso_time.hpp"

namespace cmd_maintain {  // per command: a unity build joins commands (CMakeLists.txt)

using nlohmann::json;

struct MaintainOptions {
  std::string data;
  int keep_days = 30;
  bool dry_run = false, no_pack = false, json = false;
};

int run(const MaintainOptions& o) {
  auto error = [&](const std::string& msg) {
    std::cerr << "kzoo maintain: " << msg << "\n";
    if (o.json) std::cout << json{{"error", msg}}.dump() << "\n";
    return kzoo::cli::kExitError;
  };
  auto db = kzoo::cli::open_local_state(o.data);
  if (!db) return error(db.error().message);
  auto url = kzoo::server::resolve_state_url(o.data, "", kzoo::server::process_env());
  if (!url) return error(url.error().message);
  auto repo = kzoo::store::open_kernel_repo(kzoo::server::DataPaths(o.data).repo(), *url);
  if (!repo) return error(repo.error().message);

  auto sel = kzoo::store::select_expired_evidence(**db, (*db)->now(), o.keep_days);
  if (!sel) return error(sel.error().message);
  std::vector<std::string> ids;
  for (auto id : sel->expired) ids.push_back(std::to_string(id));
  std::size_t deleted = 0;
  if (!o.dry_run && !ids.empty()) {
    auto n = repo->expire_job_evidence(ids);
    if (!n) return error(n.error().message);
    deleted = *n;
    if (deleted > 0) {
      auto audited = (*db)->append_audit("evidence.expire", "refs/jobs",
                                         {{"deleted", deleted},
                                          {"keep_days", o.keep_days},
                                          {"ended_before", kzoo::iso8601_utc(sel->cutoff)},
                                          {"first_job", sel->expired.front()},
                                          {"last_job", sel->expired.back()}});
      if (!audited) return error("the refs were deleted but the audit row failed: " + audited.error().message);
    }
  }
  bool packed = false;
  if (!o.dry_run && !o.no_pack) {
    if (auto p = repo->pack(); !p) return error(p.error().message);
    packed = true;
  }
  const std::string before = kzoo::iso8601_utc(sel->cutoff);
  const std::string kept = fmt::format(
      "Kept: {} that ended since, {} baseline measurements, {} batch jobs whose result became an accepted "
      "submission, {} batch jobs whose result is still being judged",
      sel->kept_recent, sel->kept_baselines, sel->kept_batch_accepted, sel->kept_batch_pending);
  if (o.dry_run)
    std::cerr << fmt::format("kzoo maintain: dry run: {} jobs ({} of them batch jobs) ended before {} ({} days ago) "
                             "and lose their evidence; their refs, where still present, would be deleted. {}\n",
                             sel->expired.size(), sel->expired_batch, before, o.keep_days, kept);
  else
    std::cerr << fmt::format("kzoo maintain: deleted {} evidence refs (refs/jobs/<id>) of {} jobs ({} of them batch "
                             "jobs) that ended before {}. {}. {}\n",
                             deleted, sel->expired.size(), sel->expired_batch, before, kept,
                             packed ? "Packed the repository (git gc)" : "Not packed (--no-pack)");
  if (o.json)
    std::cout << json{{"dry_run", o.dry_run},
                      {"keep_days", o.keep_days},
                      {"ended_before", before},
                      {"expired_jobs", sel->expired.size()},
                      {"expired_batch_jobs", sel->expired_batch},
                      {"deleted_refs", deleted},
                      {"kept_recent", sel->kept_recent},
                      {"kept_baselines", sel->kept_baselines},
                      {"kept_batch_accepted", sel->kept_batch_accepted},
                      {"kept_batch_pending", sel->kept_batch_pending},
                      {"packed", packed}}
                     .dump()
              << "\n";
  return kzoo::cli::kExitOk;
}

const bool maintain_registered = kzoo::cli::register_command(
    "maintain",
    "Daily upkeep of a data directory: expire old rejected jobs' and batch jobs' evidence refs and pack the repository",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<MaintainOptions>();
      auto env = kzoo::server::process_env();
      o->data = env("KZOO_DATA").value_or(kzoo::server::default_config(env).data_dir);
      sub.add_option("--data", o->data, "data directory (default $KZOO_DATA)");
      sub.add_option("--keep-days", o->keep_days,
                     "Keep the evidence of rejected, failed and cancelled jobs, and of batch jobs, this many days "
                     "after they end (default 30; accepted jobs, baselines and batch jobs whose result became an "
                     "accepted submission keep theirs forever)")
          ->check(CLI::Range(1, 36500));
      sub.add_flag("--dry-run", o->dry_run, "Count what would be deleted; delete and pack nothing");
      sub.add_flag("--no-pack", o->no_pack, "Expire evidence but do not run git gc");
      sub.add_flag("--json", o->json, "Print one JSON document (the counts) on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
