// The pushed-tree rules (push_review.hpp). libgit2 through the store's RAII
// helpers (store/git_util.hpp).
#include "kzoo/gitserve/push_review.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kzoo/board/rules.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/store/git_util.hpp"

namespace kzoo::gitserve {
namespace {

namespace sg = store::git;
constexpr std::size_t kMaxViolations = 100;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool portable(std::string_view seg) {
  if (seg.empty() || seg == "." || seg == "..") return false;
  return std::all_of(seg.begin(), seg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

struct Walk {
  git_repository* repo;
  const package::TreeLimits& limits;
  Violations violations;
  std::vector<std::string> changed;  // paths (files, or whole directories added/removed as one)
  std::uint64_t entries = 0, bytes = 0;
  bool stopped = false;  // a count or byte cap was reached: the walk ends

  void add(std::string path, std::string rule, std::string detail) {
    if (violations.size() < kMaxViolations) violations.push_back({std::move(path), "", std::move(rule), std::move(detail)});
  }

  // One entry of the pushed tree that is new or differs from the base's.
  void entry(const std::string& path, std::string_view name, const git_tree_entry* now, const git_tree_entry* before,
             std::size_t depth) {
    if (stopped) return;
    if (++entries > limits.max_entries) {
      add(path, "git.too-many-entries",
          fmt::format("the push changes more than {} files and directories: a kernel package is hand-written source; "
                      "push fewer changes at a time",
                      limits.max_entries));
      stopped = true;
      return;
    }
    if (!portable(name))
      add(path, "git.bad-name",
          fmt::format("the name \"{}\" is not portable: every path segment in kernel_data matches ^[A-Za-z0-9._-]+$ "
                      "(as in uploads, tar.bad-name); rename it",
                      package::detail::printable(name)));
    if (path.size() > limits.max_path_bytes)
      add(path, "git.path-too-long",
          fmt::format("the path is {} bytes, over the cap of {} (tar.path-too-long): shorten it", path.size(),
                      limits.max_path_bytes));
    const git_filemode_t mode = git_tree_entry_filemode(now);
    if (name == ".gitattributes") {
      add(path, "git.attributes",
          "a .gitattributes file is refused: attributes (filter, eol, text, working-tree-encoding, ident) make a "
          "checkout differ from the bytes kzoo judges and stores; remove it (git rm --cached " + path + ")");
      return;
    }
    if (name == ".gitmodules") {
      add(path, "git.submodule",
          "a .gitmodules file is refused: a kernel package cannot point into another repository; remove it (git rm "
          "--cached " + path + ") and vendor the sources you need as regular files");
      return;
    }
    if (mode == GIT_FILEMODE_LINK) {
      add(path, "git.symlink",
          "a symbolic link (mode 120000) is refused: packages hold regular files only, as uploads do (tar.symlink); "
          "replace the link by the file's content (git rm --cached " + path + ", copy the target there, git add it)");
      return;
    }
    if (mode == GIT_FILEMODE_COMMIT) {
      add(path, "git.submodule",
          "a submodule (a gitlink, mode 160000) is refused: a kernel package cannot point into another repository; "
          "remove it (git rm --cached " + path + ") and vendor the sources you need as regular files");
      return;
    }
    if (mode == GIT_FILEMODE_TREE) {
      if (depth + 1 > limits.max_depth) {
        add(path, "git.too-deep",
            fmt::format("the directory is {} levels deep, over the cap of {} (tar.too-deep): flatten the tree", depth + 1,
                        limits.max_depth));
        return;
      }
      sg::Tree sub, old;
      git_tree* t = nullptr;
      if (git_tree_lookup(&t, repo, git_tree_entry_id(now)) != 0) {
        add(path, "git.corrupt", "the tree object is missing or unreadable: push again");
        return;
      }
      sub.reset(t);
      if (before && git_tree_entry_filemode(before) == GIT_FILEMODE_TREE) {
        git_tree* o = nullptr;
        if (git_tree_lookup(&o, repo, git_tree_entry_id(before)) == 0) old.reset(o);
      } else if (before) {
        changed.push_back(path);  // a file became a directory
      }
      tree(path + "/", sub.get(), old.get(), depth + 1);
      return;
    }
    // A blob (100644 or 100755): its size from the object header, never loaded.
    std::size_t size = 0;
    git_object_t type{};
    git_odb* odb = nullptr;
    if (git_repository_odb(&odb, repo) != 0 || git_odb_read_header(&size, &type, odb, git_tree_entry_id(now)) != 0) {
      if (odb) git_odb_free(odb);
      add(path, "git.corrupt", "the file's object is missing or unreadable: push again");
      return;
    }
    git_odb_free(odb);
    changed.push_back(path);
    if (size > limits.max_file_bytes)
      add(path, "git.file-too-large",
          fmt::format("the file is {} bytes, over the cap of {} bytes per file (tar.file-too-large): packages hold "
                      "sources; keep data, weights and build outputs out of the repository",
                      size, limits.max_file_bytes));
    bytes += size;
    if (bytes > limits.max_total_bytes) {
      add(path, "git.too-large",
          fmt::format("the push changes more than {} bytes of files (tar.too-large): packages hold sources; push "
                      "fewer or smaller files",
                      limits.max_total_bytes));
      stopped = true;
    }
  }

  // Entries of `now` that are new or differ from `before` (nullptr: none),
  // and entries of `before` that are gone.
  void tree(const std::string& prefix, const git_tree* now, const git_tree* before, std::size_t depth) {
    // lower-case name -> (name, unchanged), for case collisions
    std::map<std::string, std::pair<std::string, bool>> folded;
    const std::size_t n = git_tree_entrycount(now);
    for (std::size_t i = 0; i < n && !stopped; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(now, i);
      const std::string name = git_tree_entry_name(e);
      const std::string path = prefix + name;
      const git_tree_entry* b = before ? git_tree_entry_byname(before, name.c_str()) : nullptr;
      const bool same = b && git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(b)) &&
                        git_tree_entry_filemode(e) == git_tree_entry_filemode(b);
      auto [it, fresh] = folded.emplace(lower(name), std::make_pair(name, same));
      // Reported wherever one of the two is new or changed: a collision
      // already in the history (the server's own) is never blamed on a pusher.
      if (!fresh && !(same && it->second.second))
        add(it->second.second ? path : prefix + it->second.first, "git.case-collision",
            fmt::format("\"{}\" and \"{}\" in {} differ only in letter case: they collide on case-insensitive file "
                        "systems (macOS, Windows) and in packages (tar.case-collision); rename or remove one",
                        package::detail::printable(it->second.first), package::detail::printable(name),
                        prefix.empty() ? std::string("the root") : prefix));
      if (same) continue;
      entry(path, name, e, b, depth);
    }
    if (!before) return;
    const std::size_t m = git_tree_entrycount(before);
    for (std::size_t i = 0; i < m; ++i) {
      const git_tree_entry* b = git_tree_entry_byindex(before, i);
      if (!git_tree_entry_byname(now, git_tree_entry_name(b))) changed.push_back(prefix + git_tree_entry_name(b));
    }
  }
};

Result<sg::Tree> tree_of(git_repository* repo, const std::string& id, const char* what) {
  auto c = sg::resolve_commit(repo, id);
  if (!c) return tl::unexpected(c.error());
  git_tree* t = nullptr;
  if (int rc = git_commit_tree(&t, c->get()); rc != 0) return sg::fail_git(fmt::format("the tree of {} {}", what, id), rc);
  return sg::Tree(t);
}

}  // namespace

Result<PushReview> review_push(const std::string& repo_dir, const std::string& base, const std::string& pushed,
                               const std::vector<std::string>& packages, const package::TreeLimits& limits,
                               ProjectFiles project_files, const std::set<std::string>& ignored) {
  auto repo = sg::open_repo(repo_dir);
  if (!repo) return tl::unexpected(repo.error());
  auto before = tree_of(repo->get(), base, "base");
  if (!before) return tl::unexpected(before.error());
  auto now = tree_of(repo->get(), pushed, "pushed commit");
  if (!now) return tl::unexpected(now.error());
  Walk w{repo->get(), limits, {}, {}};
  w.tree("", now->get(), before->get(), 0);

  PushReview out;
  const bool listed = project_files == ProjectFiles::listed;
  std::set<std::string> kernels, project;
  for (const auto& path : w.changed) {
    if (ignored.count(path)) continue;
    const std::string* owner = nullptr;
    for (const auto& k : packages)
      if (path.size() > k.size() && path.compare(0, k.size(), k) == 0 && path[k.size()] == '/') owner = &k;
    if (!owner) {
      if (listed) {
        project.insert(path);
        continue;
      }
      w.add(path, "git.outside-package",
            "the change is outside every kernel package: a push is judged kernel by kernel and only a package's src/ "
            "lands (new kernels, scienceslack.json, AGENTS.md are the project's files, which only a maintainer's own "
            "token changes, by a push to main); take it out of this push (git checkout origin/main -- " + path +
                ", or git rm it)");
      continue;
    }
    const std::string rel = path.substr(owner->size() + 1);
    if (rel == ".kernel_package/bench_result.yaml") {
      // Accepts alone write it (store::KernelRepo::accept): not even a
      // maintainer's push may forge a measurement.
      w.add(path, "git.outside-src",
            fmt::format("the change is in kernel {} but outside its src/: the server-owned bench_result.yaml is "
                        "written only by the checks' accepts, never by a push, a maintainer's included; revert it "
                        "(git checkout origin/main -- {})",
                        *owner, path));
      continue;
    }
    if (rel.rfind("src/", 0) != 0) {
      if (listed) {
        project.insert(path);
        continue;
      }
      w.add(path, "git.outside-src",
            fmt::format("the change is in kernel {} but outside its src/: the package's .kernel_package/ (the trusted "
                        "harness, the server-owned bench_result.yaml) and desc.yaml are the project's files, which "
                        "only a maintainer's own token changes, by a push to main, never a submission; revert it "
                        "(git checkout origin/main -- {})",
                        *owner, path));
      continue;
    }
    kernels.insert(*owner);
  }
  out.kernels.assign(kernels.begin(), kernels.end());
  out.project_files.assign(project.begin(), project.end());
  out.violations = std::move(w.violations);
  return out;
}

Violations review_project_change(const store::KernelRepo& repo, const std::string& pushed, const PushReview& review) {
  Violations vs;
  if (review.project_files.empty()) return vs;
  if (!review.kernels.empty()) {
    vs.push_back({review.project_files.front(), "", "git.mixed-push",
                  fmt::format("the push changes project files ({} of them, this one first) and the src/ of {} "
                              "kernel(s) ({} first): project files land on main as pushed, kernels are judged by the "
                              "checks, so one push is one or the other; push the project files first, then the "
                              "kernels in a second commit and push",
                              review.project_files.size(), review.kernels.size(), review.kernels.front())});
    return vs;
  }
  const std::string rules = board::kRulesFile;
  if (std::find(review.project_files.begin(), review.project_files.end(), rules) != review.project_files.end()) {
    auto text = repo.read_file(rules, pushed);
    if (!text) {
      vs.push_back({rules, "", "board.rules",
                    "the push removes scienceslack.json, the board's rules: the board reads them at the `checks` tag, "
                    "and a main without them could never be approved; restore it (git checkout origin/main -- "
                    "scienceslack.json) and change what it says instead"});
    } else if (auto r = board::parse_rules(*text, rules + " as pushed",
                                           "fix it and push again (kzoo validate scienceslack.json checks a draft); "
                                           "the rules in force stay those at the `checks` tag");
               !r) {
      vs.push_back({rules, "", "board.rules", r.error().message});
    }
  }
  // Every package the push adds or changes outside its src/, as it is at the
  // pushed commit: a harness or desc.yaml edit leaves a valid package or is
  // refused, as an upload of that package would be.
  auto packages = repo.list_packages(pushed);
  if (!packages) {
    vs.push_back({"", "", "git.corrupt", "the pushed commit's packages cannot be listed: " + packages.error().message});
    return vs;
  }
  for (const auto& k : *packages) {
    const bool touched = std::any_of(review.project_files.begin(), review.project_files.end(), [&](const std::string& p) {
      return p.size() > k.size() && p.compare(0, k.size(), k) == 0 && p[k.size()] == '/';
    });
    if (!touched) continue;
    auto tree = repo.read_package(k, pushed);
    if (!tree) {
      vs.push_back({k, "", "git.corrupt", tree.error().message});
      continue;
    }
    auto insp = package::inspect_tree(*tree, k, k);
    for (auto& v : insp.violations) vs.push_back(std::move(v));
  }
  return vs;
}

Result<std::optional<std::string>> merge_base(const std::string& repo_dir, const std::string& a, const std::string& b) {
  auto repo = sg::open_repo(repo_dir);
  if (!repo) return tl::unexpected(repo.error());
  git_oid oa, ob, out;
  if (git_oid_fromstr(&oa, a.c_str()) != 0 || git_oid_fromstr(&ob, b.c_str()) != 0)
    return fail(fmt::format("merge base of {} and {}: not commit ids", a, b));
  int rc = git_merge_base(&out, repo->get(), &oa, &ob);
  if (rc == GIT_ENOTFOUND) return std::optional<std::string>{};
  if (rc != 0) return sg::fail_git("merge base", rc);
  return std::optional<std::string>(sg::oid_hex(out));
}

bool is_commit(const std::string& repo_dir, const std::string& id) {
  auto repo = sg::open_repo(repo_dir);
  if (!repo || id.size() != 40) return false;
  git_oid oid;
  git_commit* c = nullptr;
  if (git_oid_fromstr(&oid, id.c_str()) != 0 || git_commit_lookup(&c, repo->get(), &oid) != 0) return false;
  git_commit_free(c);
  return true;
}

Result<std::string> commit_message(const std::string& repo_dir, const std::string& id) {
  auto repo = sg::open_repo(repo_dir);
  if (!repo) return tl::unexpected(repo.error());
  auto c = sg::resolve_commit(repo->get(), id);
  if (!c) return tl::unexpected(c.error());
  const char* m = git_commit_message(c->get());
  return std::string(m ? m : "");
}

}  // namespace kzoo::gitserve
