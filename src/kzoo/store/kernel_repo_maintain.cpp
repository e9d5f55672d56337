// Keeping kernel_data small over months of grading (docs/SCALE.md §4): expiring
// job evidence and packing. Both hand the work to git itself: one
// `update-ref --stdin` transaction deletes thousands of refs and rewrites
// packed-refs once, where libgit2 rewrites it for every packed ref it deletes,
// and libgit2 has no gc at all.
#include <git2.h>

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kzoo/store/git_util.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/util/process.hpp"
#include "kzoo/util/temp_dir.hpp"

namespace kzoo::store {

namespace {

// Runs git on the repository; its messages (stderr too) are quoted on failure.
Result<void> run_git(const std::string& repo_dir, const std::vector<std::string>& args, const std::string& what,
                     const std::string& stdin_path = "") {
  std::vector<std::string> argv{"git", "-C", repo_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.stderr_to_stdout = true;
  o.stdin_path = stdin_path;
  auto r = run_process(argv, o);
  if (!r) return fail(fmt::format("{}: {} (is git installed? scripts/install-deps.sh installs it)", what, r.error().message));
  if (r->status != 0)
    return fail(fmt::format("{}: git {} exited with status {}: {}", what, fmt::join(args, " "), r->status,
                            r->out.substr(0, 2000)));
  return {};
}

}  // namespace

Result<std::size_t> KernelRepo::expire_job_evidence(const std::vector<std::string>& job_ids) const {
  std::vector<std::string> refs;
  for (const auto& id : job_ids) {
    auto ref = job_evidence_ref(id);
    if (!ref) return tl::unexpected(ref.error());
    refs.push_back(*ref);
  }
  auto turn = writer_turn();
  if (!turn) return tl::unexpected(turn.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  // Each deletion names the commit read here: a ref that moved since (a job
  // run again recorded new evidence) fails the whole transaction, never
  // deletes evidence nobody looked at.
  std::string script;
  std::size_t n = 0;
  for (const auto& ref : refs) {
    git_oid oid;
    int rc = git_reference_name_to_id(&oid, repo->get(), ref.c_str());
    if (rc == GIT_ENOTFOUND) continue;
    if (rc < 0) return git::fail_git("reading " + ref, rc);
    script += fmt::format("delete {} {}\n", ref, git_oid_tostr_s(&oid));
    ++n;
  }
  if (n == 0) return n;
  auto tmp = TempDirectory::make("kzoo-expire-");
  if (!tmp) return tl::unexpected(tmp.error());
  const std::string path = tmp->path() + "/update-ref.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << script;
    if (!out.flush()) return fail("cannot write " + path + ": is the temporary directory full?");
  }
  if (auto r = run_git(dir_, {"update-ref", "--stdin"}, fmt::format("expiring {} evidence refs (none was deleted)", n),
                       path);
      !r)
    return tl::unexpected(r.error());
  return n;
}

Result<void> KernelRepo::pack() const {
  auto turn = writer_turn();
  if (!turn) return tl::unexpected(turn.error());
  // gc.auto=0: git's own "gc --auto" (after a push through git-http-backend,
  // for instance) would pack outside any writer's turn. receive.autogc the same
  // for receive-pack. gc.pruneExpire: objects a crashed writer wrote but never
  // referenced, and expired evidence, go once two weeks old; a writer's
  // objects are never that old before its ref moves.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"gc.auto", "0"}, {"receive.autogc", "false"}, {"gc.pruneExpire", "2.weeks.ago"}})
    if (auto r = run_git(dir_, {"config", key, value}, "setting " + key + " in " + dir_); !r)
      return tl::unexpected(r.error());
  return run_git(dir_, {"gc", "--quiet"}, "packing " + dir_);
}

}  // namespace kzoo::store
