// The kernel_data repository: a BARE git repository (libgit2) holding every
// kernel package (DESIGN §4, seed kernel_package_format). Branch `main`
// carries the packages, one commit per accepted submission; job evidence
// lives on refs/jobs/<job_id>, never on `main` and never inside a package.
//
// Why bare: the service never needs files on disk. Reads go straight to
// objects, and accept() builds the new tree in memory with treebuilders, so
// there is no working tree that could drift from HEAD or be half-written
// when two accepts race. Maintainers clone it (`git clone`), and the git CLI
// (`git log`, `git show`, `git fsck`) works on it directly. A plain clone does
// not fetch refs/jobs/*; fetch them explicitly
// (`git fetch origin 'refs/jobs/*:refs/jobs/*'`).
//
// Thread-safety: a KernelRepo holds only the directory and the committer
// identity. Every method opens its own git_repository handle (libgit2 handles
// are not shareable across threads, LIBNOTES), so one KernelRepo may be used
// from any number of threads, and several processes may share the directory.
// Writers never lose each other's work: a commit names the HEAD it was built
// on, and git_commit_create refuses (GIT_EMODIFIED) when the branch moved
// meanwhile; the writer then re-reads HEAD, rebuilds, and tries again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::store {

struct Person {
  std::string name;   // no '<', '>' or newlines (git refuses them)
  std::string email;  // empty is written as "unknown@kzoo.invalid" (libgit2 refuses empty)
};

struct CommitInfo {
  std::string id;          // 40 hex digits
  std::int64_t time = 0;   // seconds since the Unix epoch
  int offset_minutes = 0;  // the author's UTC offset
  Person author;
  std::string message;     // full message
};

struct AcceptResult {
  std::string commit;  // the new commit on main; empty when `incumbent_moved`
  std::string parent;  // the HEAD it was built on (or found moved on)
  int attempts = 1;    // 1 + number of times the branch moved underneath
  // The package's src/ at HEAD is no longer the one at `measured_at` (see
  // accept()): nothing was committed; the candidate must be measured again.
  bool incumbent_moved = false;
};

// What commit_tree did: a new commit on the branch, or nothing because the
// branch was no longer where the caller saw it.
struct TreeCommit {
  std::string commit;  // the new commit; empty when `moved`
  std::string parent;  // the head it was built on (or found moved to)
  bool moved = false;
};

// Computes the new bench_result.yaml from the one at the HEAD being built on
// (the empty string when the package has none). Called once per attempt: when
// another accept lands first, it is called again with that accept's file, so
// metrics_best never goes backwards because of a race.
using BenchResultUpdate = std::function<Result<std::string>(const std::string& current)>;

// Where an accept lands: a branch (refs/heads/<branch>), created at
// `start_at` (a commit id) by the first accept when it does not exist yet.
struct AcceptTarget {
  std::string branch = "main";
  std::string start_at;  // required when the branch may not exist yet
};

// One writer at a time, across processes and hosts: every write (accept,
// evidence, commit_files, set_ref) takes a turn before it reads the ref it
// will move and ends it after the move. The ref's compare-and-swap still
// guards each move; the turn keeps writers on shared storage from racing at
// all (docs/SCALE.md). PostgreSQL gives one (repo_writer.hpp).
class RepoWriterLock {
 public:
  virtual ~RepoWriterLock() = default;
  // Waits for this writer's turn; the turn ends when the handle is dropped.
  virtual Result<std::shared_ptr<void>> turn() = 0;
};

struct KernelRepoOptions {
  Person committer{"kzoo", "kzoo@localhost"};
  int max_attempts = 64;  // optimistic-lock retries before accept() gives up
  std::shared_ptr<RepoWriterLock> writer;  // none: the compare-and-swap alone (one host)
};

// "refs/jobs/<job_id>", or why `job_id` cannot name one (^[A-Za-z0-9_-]{1,128}$).
Result<std::string> job_evidence_ref(const std::string& job_id);

class KernelRepo {
 public:
  // Opens an existing repository made by init_from_catalog (no upward search).
  static Result<KernelRepo> open(std::string repo_dir, KernelRepoOptions options = {});

  // Creates a bare repository at `repo_dir` (which must not exist or be an
  // empty directory) whose first commit on `main` holds every file under
  // `catalog_kernel_data_dir`, the `.kernel_data` marker included. The catalog
  // must hold the marker. Symlinks and special files are refused (they cannot
  // be package content); `__pycache__/` directories and `*.pyc` files are
  // skipped (interpreter by-products, never authored). The executable bit is
  // kept. Every path segment must match ^[A-Za-z0-9._-]+$.
  static Result<KernelRepo> init_from_catalog(const std::string& catalog_kernel_data_dir, std::string repo_dir,
                                              KernelRepoOptions options = {});

  const std::string& dir() const { return dir_; }

  // The commit `rev` resolves to (default HEAD).
  Result<std::string> head(const std::string& rev = "HEAD") const;

  // Kernel IDs at `rev`: every directory holding a `.kernel_package/`
  // directory, sorted. A package's own subdirectories are not searched.
  Result<std::vector<std::string>> list_packages(const std::string& rev = "HEAD") const;

  // Every file of package `kernel_id` at `rev` (paths relative to the package).
  Result<package::PackageTree> read_package(const std::string& kernel_id, const std::string& rev = "HEAD") const;

  // One file by its path from the repository root, at `rev`.
  Result<std::string> read_file(const std::string& path, const std::string& rev = "HEAD") const;

  // Commits reachable from `rev` that changed anything under `path` (a kernel
  // ID, or any path), newest first, at most `limit`. A merge counts when its
  // content at `path` differs from every parent's (git log's default).
  Result<std::vector<CommitInfo>> history(const std::string& path, std::size_t limit = 1000,
                                          const std::string& rev = "HEAD") const;

  // One commit on `main` that accepts a submission into package `kernel_id`:
  //  - `submission`'s files under `src/` replace the package's `src/` in full
  //    (files the submission lacks disappear); at least one is required;
  //  - its `.kernel_package/` files never land (the server keeps the trusted
  //    harness and owns bench_result.yaml); any other file is an error;
  //  - `.kernel_package/bench_result.yaml` becomes update(current bytes);
  //  - every other file of the repository stays as it is.
  // `author` is the submitter; the committer is options.committer.
  // With `measured_at` (a commit id), the accept happens only while the
  // package's src/ at HEAD is still the one at that commit -- the incumbent
  // the submission was measured against -- checked on every attempt, in the
  // same tree walk the commit is built from. Otherwise nothing is written and
  // the result says `incumbent_moved`: a speed-up over the old source says
  // nothing about the new one.
  Result<AcceptResult> accept(const std::string& kernel_id, const package::PackageTree& submission,
                              const BenchResultUpdate& update, const std::string& message,
                              const Person& author, const std::string& measured_at = "") const;

  // The same onto `target`'s branch (a route, board/): the incumbent check,
  // the tree and the compare-and-swap are those of that branch.
  Result<AcceptResult> accept(const std::string& kernel_id, const package::PackageTree& submission,
                              const BenchResultUpdate& update, const std::string& message,
                              const Person& author, const std::string& measured_at, const AcceptTarget& target) const;

  // One commit on `branch` (which must exist) that writes `files` (paths from
  // the repository root -> bytes), everything else kept. For maintainers'
  // files such as the board's rules (kzoo init). Returns the commit id.
  Result<std::string> commit_files(const std::string& branch, const std::map<std::string, std::string>& files,
                                   const std::string& message, const Person& author) const;

  // One commit on `branch` whose tree is exactly the tree of commit `tree_of`
  // (a maintainer's push of project files, docs/GIT.md), parented on the
  // branch's head, which must still be `expected_head`: a tree taken whole
  // would undo whatever landed since, so when the branch has moved nothing is
  // written and the result says `moved` (the pusher rebases and pushes
  // again). No retry, unlike accept(): a rebuilt tree would not be the one
  // pushed. `author` is the pusher; the committer is options.committer.
  Result<TreeCommit> commit_tree(const std::string& branch, const std::string& expected_head, const std::string& tree_of,
                                 const std::string& message, const Person& author) const;

  // Moves `branch` from `from` to `to` only while it is still at `from` (a
  // compare-and-swap under the writer's turn); false when it had moved. For
  // taking back a commit_tree whose audit record could not be written.
  Result<bool> move_branch(const std::string& branch, const std::string& from, const std::string& to) const;

  // Points `ref` (a full name: refs/tags/checks, refs/boards/v1) at `commit`,
  // creating or moving it (a lightweight ref; a maintainer may replace it with
  // an annotated tag, which readers peel).
  Result<void> set_ref(const std::string& ref, const std::string& commit) const;

  // Full names of the refs under `prefix` (e.g. "refs/heads/routes/"), sorted.
  Result<std::vector<std::string>> list_refs(const std::string& prefix) const;

  // The same with fixed bench_result.yaml bytes. Only safe when nothing else
  // accepts into this kernel concurrently; prefer the BenchResultUpdate form.
  Result<AcceptResult> accept(const std::string& kernel_id, const package::PackageTree& submission,
                              const std::string& bench_result_yaml, const std::string& message,
                              const Person& author) const;

  // Commits `files` (flat or nested relative paths -> bytes) as the whole tree
  // of a new commit on refs/jobs/<job_id>, parented on that ref's previous
  // commit if any. `job_id` must match ^[A-Za-z0-9_-]{1,128}$. Returns the
  // commit id. Never touches `main`.
  Result<std::string> record_job_evidence(const std::string& job_id, const std::map<std::string, std::string>& files,
                                          const std::string& message = "") const;

  // A batch job's result (store/batch.hpp): `tree` (its submit directory as
  // the job left it, executable bits kept) as one commit whose parent is
  // `parent` (the pushed commit the job was submitted from), so that `git
  // diff parent refs/jobs/<id>` is exactly what the job changed. Sets
  // refs/jobs/<job_id> to it (a re-run after a lost lease replaces an earlier
  // attempt's). Returns the commit id. Never touches `main`.
  Result<std::string> record_job_tree(const std::string& job_id, const package::PackageTree& tree,
                                      const std::string& parent, const std::string& message) const;

  // The evidence files of the latest commit on refs/jobs/<job_id>.
  Result<std::map<std::string, std::string>> read_job_evidence(const std::string& job_id) const;

  // Deletes refs/jobs/<id> of each id that has one, all in one transaction
  // (git update-ref --stdin, each deletion checking the commit it read): all
  // go or none does. Ids without a ref are skipped (already expired). Returns
  // how many refs were deleted. The commits become unreachable and go at the
  // next pack() older than its prune grace (kernel_repo_maintain.cpp).
  Result<std::size_t> expire_job_evidence(const std::vector<std::string>& job_ids) const;

  // Packs refs and objects (git gc), under the writer's turn, with the
  // repository's gc settings made explicit first: no automatic gc (never in a
  // writer's turn or a push's), unreachable objects pruned after two weeks.
  Result<void> pack() const;

 private:
  // The writer's turn (nullptr without a writer lock).
  Result<std::shared_ptr<void>> writer_turn() const;
  KernelRepo(std::string dir, KernelRepoOptions options) : dir_(std::move(dir)), options_(std::move(options)) {}

  std::string dir_;
  KernelRepoOptions options_;
};

}  // namespace kzoo::store
