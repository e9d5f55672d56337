// What a `git push` to kzoo asks to have judged (docs/GIT.md), read from the
// pushed commit BEFORE anything is recorded: which kernel packages it changes,
// and every rule it breaks.
//
// A push is an upload in another form, so it is held to the upload's rules
// (package/tarball.hpp, package/inspect.hpp). The tarball rules have tree
// equivalents here, checked on every entry that differs between `base` (what
// the pusher built on: the merge base of the pushed commit and the target
// branch) and the pushed commit, each a Violation naming the path, the rule
// and the fix:
//
//   git.symlink          a symbolic link (mode 120000)            tar.symlink
//   git.submodule        a gitlink (mode 160000) or .gitmodules   (no tar form)
//   git.attributes       a .gitattributes file: filters, eol and
//                        encodings would make checkouts differ
//                        from the bytes judged and stored         (no tar form)
//   git.case-collision   two names in one directory equal under
//                        ASCII case folding                       tar.case-collision
//   git.bad-name         a segment outside ^[A-Za-z0-9._-]+$      tar.bad-name
//   git.too-deep / git.path-too-long / git.file-too-large /
//   git.too-large / git.too-many-entries   TreeLimits' caps      tar.* of the same names
//   git.outside-package  a change outside every kernel package
//   git.outside-src      a change in a package outside its src/ (the
//                        harness and bench_result.yaml are the
//                        repository's, never a submission's)
//
// The last two are the project's files (scienceslack.json, AGENTS.md, a
// harness, a new kernel): a maintainer's own token changes them by a push to
// main (access::Action::change_project_files). For that push the caller asks
// for ProjectFiles::listed: they are listed instead of refused, and
// review_project_change holds them to the rules the board applies when it
// reads them. A package's bench_result.yaml stays refused to everyone: accepts
// alone write it, so a push can never forge a measurement.
//
// The walk descends only into subtrees whose ids differ (unchanged history is
// the server's own and already trusted), never deeper than limits.max_depth,
// and stops at the entry and byte caps, so a hostile tree costs at most the
// caps' worth of reads. Blob sizes are read from object headers, never by
// loading the blob.
//
// Thread-safety: each call opens its own repository handle (LIBNOTES).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::gitserve {

struct PushReview {
  std::vector<std::string> kernels;        // kernel IDs whose src/ changed, sorted; trustworthy only when no violations
  std::vector<std::string> project_files;  // changed paths outside every kernel's src/ (ProjectFiles::listed only)
  Violations violations;                   // every rule broken (the first 100)
};

// Whether this push may change project files: the caller decides, by the ref
// (main) and the policy (access::Action::change_project_files).
enum class ProjectFiles { refused, listed };

// `base` and `pushed`: commit ids in the bare repository `repo_dir`.
// `packages`: the kernel IDs at `base` (store::KernelRepo::list_packages).
// `ignored`: changed paths (from the root) that need not lie in a package's
// src/ (a batch job's slurm-<id>.out); every other rule still applies to them.
Result<PushReview> review_push(const std::string& repo_dir, const std::string& base, const std::string& pushed,
                               const std::vector<std::string>& packages, const package::TreeLimits& limits = {},
                               ProjectFiles project_files = ProjectFiles::refused,
                               const std::set<std::string>& ignored = {});

// What a maintainer's push of project files must pass beyond the tree rules
// (`review`: review_push's answer with ProjectFiles::listed and no violation):
//   git.mixed-push   project files and kernels' src/ in one push: the first
//                    lands on main as pushed, the second is judged by the
//                    checks; one push is one or the other, never both
//   board.rules      scienceslack.json, when changed, is the rules the board
//                    would read: board::parse_rules (the schema, the
//                    partitions); removing it is refused
//   package rules    every kernel package the push changes or adds is valid
//                    at `pushed` (package::inspect_tree: the upload's rules
//                    and evidence policy), so a harness edit cannot break one
Violations review_project_change(const store::KernelRepo& repo, const std::string& pushed, const PushReview& review);

// The best common ancestor of two commits; nullopt when they share no history.
Result<std::optional<std::string>> merge_base(const std::string& repo_dir, const std::string& a, const std::string& b);

// Whether `id` names a commit object in the repository.
bool is_commit(const std::string& repo_dir, const std::string& id);

// The full message of commit `id`.
Result<std::string> commit_message(const std::string& repo_dir, const std::string& id);

}  // namespace kzoo::gitserve
