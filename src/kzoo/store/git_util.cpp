#include "kzoo/store/git_util.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace kzoo::store::git {

void ensure_init() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

std::string describe(std::string_view what, int code) {
  const git_error* e = git_error_last();
  std::string msg = (e && e->message) ? e->message : "no detail from libgit2";
  return fmt::format("{}: {} (libgit2 code {})", what, msg, code);
}

tl::unexpected<Error> fail_git(std::string_view what, int code) { return fail(describe(what, code)); }

std::string oid_hex(const git_oid& id) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &id);
  return buf;
}

Result<Repo> open_repo(const std::string& dir) {
  ensure_init();
  git_repository* raw = nullptr;
  if (int rc = git_repository_open_bare(&raw, dir.c_str()); rc < 0)
    return fail_git(fmt::format("opening kernel_data repository {} (expected a bare git repository "
                                "made by `kzoo` init_from_catalog)",
                                dir),
                    rc);
  return Repo(raw);
}

bool valid_segment(std::string_view seg) {
  if (seg.empty() || seg == "." || seg == "..") return false;
  for (char c : seg) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  std::string lower(seg);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower != ".git";
}

Result<void> check_rel_path(std::string_view path, std::string_view what) {
  if (path.empty()) return fail(fmt::format("{}: empty path; give a relative POSIX path", what));
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view seg = path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (!valid_segment(seg))
      return fail(fmt::format("{}: path \"{}\" has segment \"{}\" that breaks rule path.segment "
                              "(each segment must match ^[A-Za-z0-9._-]+$ and not be \".\", \"..\" or "
                              "\".git\"); rename it",
                              what, path, seg));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return ok();
}

namespace {

// One directory level while building: files and subdirectories by name.
struct Node {
  std::map<std::string, const FileBlob*> files;
  std::map<std::string, Node> dirs;
};

Result<git_oid> write_node(git_repository* repo, const Node& node, const std::string& where) {
  git_treebuilder* raw = nullptr;
  if (int rc = git_treebuilder_new(&raw, repo, nullptr); rc < 0) return fail_git("creating a tree builder", rc);
  TreeBuilder bld(raw);
  for (const auto& [name, blob] : node.files) {
    git_oid id;
    if (int rc = git_blob_create_from_buffer(&id, repo, blob->content.data(), blob->content.size()); rc < 0)
      return fail_git(fmt::format("writing blob {}{}", where, name), rc);
    git_filemode_t mode = blob->executable ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
    if (int rc = git_treebuilder_insert(nullptr, bld.get(), name.c_str(), &id, mode); rc < 0)
      return fail_git(fmt::format("adding {}{} to its tree", where, name), rc);
  }
  for (const auto& [name, child] : node.dirs) {
    auto id = write_node(repo, child, where + name + "/");
    if (!id) return tl::unexpected(id.error());
    if (int rc = git_treebuilder_insert(nullptr, bld.get(), name.c_str(), &*id, GIT_FILEMODE_TREE); rc < 0)
      return fail_git(fmt::format("adding directory {}{} to its tree", where, name), rc);
  }
  git_oid out;
  if (int rc = git_treebuilder_write(&out, bld.get()); rc < 0)
    return fail_git(fmt::format("writing tree {}", where.empty() ? "/" : where), rc);
  return out;
}

}  // namespace

Result<git_oid> write_tree(git_repository* repo, const FileMap& files) {
  Node root;
  for (const auto& [path, blob] : files) {
    if (auto c = check_rel_path(path, "writing a tree"); !c) return tl::unexpected(c.error());
    Node* at = &root;
    size_t start = 0;
    for (size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1) {
      std::string seg = path.substr(start, slash - start);
      if (at->files.count(seg))
        return fail(fmt::format("writing a tree: \"{}\" is both a file and a directory; keep one", path.substr(0, slash)));
      at = &at->dirs[seg];
    }
    std::string leaf = path.substr(start);
    if (at->dirs.count(leaf))
      return fail(fmt::format("writing a tree: \"{}\" is both a file and a directory; keep one", path));
    at->files[leaf] = &blob;
  }
  return write_node(repo, root, "");
}

Result<Tree> subtree(git_repository* repo, const git_tree* root, const std::string& path) {
  git_tree* out = nullptr;
  if (path.empty()) {
    if (int rc = git_tree_dup(&out, const_cast<git_tree*>(root)); rc < 0) return fail_git("copying a tree handle", rc);
    return Tree(out);
  }
  git_tree_entry* raw = nullptr;
  int rc = git_tree_entry_bypath(&raw, root, path.c_str());
  if (rc == GIT_ENOTFOUND) return fail(fmt::format("\"{}\" does not exist in the kernel_data tree", path));
  if (rc < 0) return fail_git(fmt::format("looking up \"{}\"", path), rc);
  TreeEntry entry(raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE)
    return fail(fmt::format("\"{}\" is a file in the kernel_data tree, not a directory", path));
  if (int rc2 = git_tree_lookup(&out, repo, git_tree_entry_id(entry.get())); rc2 < 0)
    return fail_git(fmt::format("reading tree \"{}\"", path), rc2);
  return Tree(out);
}

Result<Commit> resolve_commit(git_repository* repo, const std::string& rev) {
  git_object* obj = nullptr;
  int rc = git_revparse_single(&obj, repo, rev.c_str());
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
    return fail(fmt::format("revision \"{}\" does not exist in the kernel_data repository", rev));
  if (rc < 0) return fail_git(fmt::format("resolving revision \"{}\"", rev), rc);
  Object o(obj);
  git_object* peeled = nullptr;
  if (int rc2 = git_object_peel(&peeled, o.get(), GIT_OBJECT_COMMIT); rc2 < 0)
    return fail_git(fmt::format("revision \"{}\" does not name a commit", rev), rc2);
  return Commit(reinterpret_cast<git_commit*>(peeled));
}

}  // namespace kzoo::store::git
