// KernelRepo: creating the repository from the catalog, and reading it.
// Writes (accept, job evidence) are in kernel_repo_write.cpp.
#include "kzoo/store/kernel_repo.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/store/git_util.hpp"

namespace kzoo::store {

namespace fs = std::filesystem;

namespace {


Result<std::string> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read catalog file {}", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(fmt::format("error while reading catalog file {}", p.string()));
  return ss.str();
}

// Reads every file under `root` into a FileMap, refusing what cannot be
// package content. Paths are relative with '/' separators.
Result<git::FileMap> read_catalog(const fs::path& root) {
  git::FileMap files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return fail(fmt::format("cannot list catalog {}: {}", root.string(), ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(fmt::format("cannot list catalog {}: {}", root.string(), ec.message()));
    const fs::path& p = it->path();
    std::string rel = fs::relative(p, root).generic_string();
    fs::file_status st = it->symlink_status();
    if (fs::is_symlink(st))
      return fail(fmt::format("catalog entry {} is a symlink (rule store.catalog-symlink): a kernel_data "
                              "repository holds regular files only; replace it with a copy",
                              p.string()));
    if (fs::is_directory(st)) {
      if (p.filename() == "__pycache__") it.disable_recursion_pending();
      else if (auto c = git::check_rel_path(rel, "catalog directory"); !c) return tl::unexpected(c.error());
      continue;
    }
    if (!fs::is_regular_file(st))
      return fail(fmt::format("catalog entry {} is neither a regular file nor a directory (rule "
                              "store.catalog-special); remove it",
                              p.string()));
    if (p.extension() == ".pyc") continue;
    if (auto c = git::check_rel_path(rel, "catalog file"); !c) return tl::unexpected(c.error());
    auto bytes = slurp(p);
    if (!bytes) return tl::unexpected(bytes.error());
    bool exec = (st.permissions() & fs::perms::owner_exec) != fs::perms::none;
    files.emplace(rel, git::FileBlob{std::move(*bytes), exec});
  }
  return files;
}

Result<git::Tree> tree_at(git_repository* repo, const std::string& rev, git::Commit* commit_out = nullptr) {
  auto commit = git::resolve_commit(repo, rev);
  if (!commit) return tl::unexpected(commit.error());
  git_tree* raw = nullptr;
  if (int rc = git_commit_tree(&raw, commit->get()); rc < 0) return git::fail_git("reading a commit's tree", rc);
  if (commit_out) *commit_out = std::move(*commit);
  return git::Tree(raw);
}

Result<std::string> blob_bytes(git_repository* repo, const git_oid& id, const std::string& path) {
  git_blob* raw = nullptr;
  if (int rc = git_blob_lookup(&raw, repo, &id); rc < 0) return git::fail_git(fmt::format("reading {}", path), rc);
  git::Blob blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(raw)), git_blob_rawsize(raw));
}

bool has_subtree(const git_tree* t, const char* name) {
  const git_tree_entry* e = git_tree_entry_byname(t, name);
  return e && git_tree_entry_type(e) == GIT_OBJECT_TREE;
}

Result<void> find_packages(git_repository* repo, const git_tree* t, const std::string& prefix,
                           std::vector<std::string>& out) {
  for (size_t i = 0, n = git_tree_entrycount(t); i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(t, i);
    if (git_tree_entry_type(e) != GIT_OBJECT_TREE) continue;
    std::string path = prefix + git_tree_entry_name(e);
    git_tree* raw = nullptr;
    if (int rc = git_tree_lookup(&raw, repo, git_tree_entry_id(e)); rc < 0)
      return git::fail_git(fmt::format("reading tree {}", path), rc);
    git::Tree sub(raw);
    if (has_subtree(sub.get(), ".kernel_package")) {
      out.push_back(path);
      continue;
    }
    if (auto r = find_packages(repo, sub.get(), path + "/", out); !r) return r;
  }
  return ok();
}

// The id of the entry at `path` under `t`, or nullopt when absent.
std::optional<git_oid> entry_id(const git_tree* t, const std::string& path) {
  if (path.empty()) return *git_tree_id(t);
  git_tree_entry* raw = nullptr;
  if (git_tree_entry_bypath(&raw, t, path.c_str()) < 0) return std::nullopt;
  git::TreeEntry e(raw);
  return *git_tree_entry_id(e.get());
}

}  // namespace

Result<KernelRepo> KernelRepo::open(std::string repo_dir, KernelRepoOptions options) {
  auto repo = git::open_repo(repo_dir);
  if (!repo) return tl::unexpected(repo.error());
  return KernelRepo(std::move(repo_dir), std::move(options));
}

Result<KernelRepo> KernelRepo::init_from_catalog(const std::string& catalog_kernel_data_dir, std::string repo_dir,
                                                 KernelRepoOptions options) {
  git::ensure_init();
  fs::path catalog(catalog_kernel_data_dir);
  std::error_code ec;
  if (!fs::is_directory(catalog, ec))
    return fail(fmt::format("catalog kernel_data directory {} does not exist or is not a directory",
                            catalog_kernel_data_dir));
  if (!fs::is_regular_file(catalog / ".kernel_data", ec))
    return fail(fmt::format("{} is not a kernel_data root: it lacks the marker file .kernel_data (create an "
                            "empty file of that name at the root)",
                            catalog_kernel_data_dir));
  if (fs::exists(repo_dir, ec) && !(fs::is_directory(repo_dir, ec) && fs::is_empty(repo_dir, ec)))
    return fail(fmt::format("refusing to create the kernel_data repository in {}: it exists and is not an "
                            "empty directory; choose a new path or empty it",
                            repo_dir));

  auto files = read_catalog(catalog);
  if (!files) return tl::unexpected(files.error());

  git_repository_init_options init = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  init.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
  init.initial_head = "main";
  git_repository* raw = nullptr;
  if (int rc = git_repository_init_ext(&raw, repo_dir.c_str(), &init); rc < 0)
    return git::fail_git(fmt::format("creating bare repository {}", repo_dir), rc);
  git::Repo repo(raw);

  auto tree_id = git::write_tree(repo.get(), *files);
  if (!tree_id) return tl::unexpected(tree_id.error());
  git_tree* traw = nullptr;
  if (int rc = git_tree_lookup(&traw, repo.get(), &*tree_id); rc < 0) return git::fail_git("reading the new tree", rc);
  git::Tree tree(traw);

  git_signature* sraw = nullptr;
  if (int rc = git_signature_now(&sraw, options.committer.name.c_str(), options.committer.email.c_str()); rc < 0)
    return git::fail_git("making the committer signature (check KernelRepoOptions::committer)", rc);
  git::Signature sig(sraw);
  std::string msg = fmt::format("Import the catalog's kernel_data ({} files)\n", files->size());
  git_oid commit;
  if (int rc = git_commit_create(&commit, repo.get(), git::kMainRef, sig.get(), sig.get(), nullptr, msg.c_str(),
                                 tree.get(), 0, nullptr);
      rc < 0)
    return git::fail_git("writing the first commit", rc);
  return KernelRepo(std::move(repo_dir), std::move(options));
}

Result<std::string> KernelRepo::head(const std::string& rev) const {
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto c = git::resolve_commit(repo->get(), rev);
  if (!c) return tl::unexpected(c.error());
  return git::oid_hex(*git_commit_id(c->get()));
}

Result<std::vector<std::string>> KernelRepo::list_packages(const std::string& rev) const {
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto tree = tree_at(repo->get(), rev);
  if (!tree) return tl::unexpected(tree.error());
  std::vector<std::string> out;
  if (auto r = find_packages(repo->get(), tree->get(), "", out); !r) return tl::unexpected(r.error());
  std::sort(out.begin(), out.end());
  return out;
}

Result<package::PackageTree> KernelRepo::read_package(const std::string& kernel_id, const std::string& rev) const {
  if (auto c = git::check_rel_path(kernel_id, "kernel ID"); !c) return tl::unexpected(c.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto root = tree_at(repo->get(), rev);
  if (!root) return tl::unexpected(root.error());
  auto pkg = git::subtree(repo->get(), root->get(), kernel_id);
  if (!pkg) return fail(fmt::format("kernel {} not found at {}: {}", kernel_id, rev, pkg.error().message));
  if (!has_subtree(pkg->get(), ".kernel_package"))
    return fail(fmt::format("{} at {} is a directory but not a kernel package (it has no .kernel_package/)",
                            kernel_id, rev));

  struct Walk {
    git_repository* repo;
    package::PackageTree tree;
    std::optional<Error> error;
  } walk{repo->get(), {}, std::nullopt};
  auto cb = [](const char* root, const git_tree_entry* e, void* payload) -> int {
    auto* w = static_cast<Walk*>(payload);
    std::string path = std::string(root) + git_tree_entry_name(e);
    if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
      w->tree.dirs.push_back(path);
    } else if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
      auto bytes = blob_bytes(w->repo, *git_tree_entry_id(e), path);
      if (!bytes) {
        w->error = bytes.error();
        return -1;
      }
      w->tree.files.push_back({path, std::move(*bytes)});
    }
    return 0;
  };
  int rc = git_tree_walk(pkg->get(), GIT_TREEWALK_PRE, cb, &walk);
  if (walk.error) return tl::unexpected(*walk.error);
  if (rc < 0) return git::fail_git(fmt::format("walking package {}", kernel_id), rc);
  auto by_path = [](const package::PackageFile& a, const package::PackageFile& b) { return a.path < b.path; };
  std::sort(walk.tree.files.begin(), walk.tree.files.end(), by_path);
  std::sort(walk.tree.dirs.begin(), walk.tree.dirs.end());
  return std::move(walk.tree);
}

Result<std::string> KernelRepo::read_file(const std::string& path, const std::string& rev) const {
  if (auto c = git::check_rel_path(path, "file path"); !c) return tl::unexpected(c.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto root = tree_at(repo->get(), rev);
  if (!root) return tl::unexpected(root.error());
  git_tree_entry* raw = nullptr;
  int rc = git_tree_entry_bypath(&raw, root->get(), path.c_str());
  if (rc == GIT_ENOTFOUND) return fail(fmt::format("file {} does not exist at {}", path, rev));
  if (rc < 0) return git::fail_git(fmt::format("looking up {}", path), rc);
  git::TreeEntry e(raw);
  if (git_tree_entry_type(e.get()) != GIT_OBJECT_BLOB)
    return fail(fmt::format("{} at {} is a directory, not a file", path, rev));
  return blob_bytes(repo->get(), *git_tree_entry_id(e.get()), path);
}

Result<std::vector<CommitInfo>> KernelRepo::history(const std::string& path, std::size_t limit,
                                                    const std::string& rev) const {
  if (!path.empty())
    if (auto c = git::check_rel_path(path, "history path"); !c) return tl::unexpected(c.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto start = git::resolve_commit(repo->get(), rev);
  if (!start) return tl::unexpected(start.error());

  git_revwalk* wraw = nullptr;
  if (int rc = git_revwalk_new(&wraw, repo->get()); rc < 0) return git::fail_git("starting a revision walk", rc);
  git::RevWalk walk(wraw);
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
  if (int rc = git_revwalk_push(walk.get(), git_commit_id(start->get())); rc < 0)
    return git::fail_git("starting a revision walk", rc);

  std::vector<CommitInfo> out;
  git_oid id;
  while (out.size() < limit) {
    int rc = git_revwalk_next(&id, walk.get());
    if (rc == GIT_ITEROVER) break;
    if (rc < 0) return git::fail_git("walking history", rc);
    git_commit* craw = nullptr;
    if (int rc2 = git_commit_lookup(&craw, repo->get(), &id); rc2 < 0) return git::fail_git("reading a commit", rc2);
    git::Commit commit(craw);
    git_tree* traw = nullptr;
    if (int rc2 = git_commit_tree(&traw, craw); rc2 < 0) return git::fail_git("reading a commit's tree", rc2);
    git::Tree tree(traw);
    std::optional<git_oid> mine = entry_id(tree.get(), path);

    // TREESAME to any parent means this commit did not change `path`.
    bool touched = true;
    unsigned parents = git_commit_parentcount(craw);
    if (parents == 0) touched = mine.has_value();
    for (unsigned i = 0; i < parents && touched; ++i) {
      git_commit* praw = nullptr;
      if (int rc2 = git_commit_parent(&praw, craw, i); rc2 < 0) return git::fail_git("reading a parent commit", rc2);
      git::Commit parent(praw);
      git_tree* ptraw = nullptr;
      if (int rc2 = git_commit_tree(&ptraw, praw); rc2 < 0) return git::fail_git("reading a parent's tree", rc2);
      git::Tree ptree(ptraw);
      std::optional<git_oid> theirs = entry_id(ptree.get(), path);
      bool same = mine.has_value() == theirs.has_value() && (!mine || git_oid_equal(&*mine, &*theirs));
      if (same) touched = false;
    }
    if (!touched) continue;
    const git_signature* a = git_commit_author(craw);
    out.push_back(CommitInfo{git::oid_hex(id), static_cast<std::int64_t>(git_commit_time(craw)),
                             git_commit_time_offset(craw), Person{a->name ? a->name : "", a->email ? a->email : ""},
                             git_commit_message(craw) ? git_commit_message(craw) : ""});
  }
  return out;
}

}  // namespace kzoo::store
