// Internal helpers of the kernel_data store: RAII owners for libgit2 objects,
// error text from libgit2's last error, path-segment checks, and writing a
// nested tree from a flat list of files entirely in memory (treebuilders, no
// index, no working tree). Not part of the store's public face.
//
// libgit2 1.5.1 (LIBNOTES): a git_repository handle must not be shared across
// threads, so every caller opens its own with open_repo().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <git2.h>

#include "kzoo/util/result.hpp"

namespace kzoo::store::git {

// The kernel_data repository's one branch.
inline constexpr const char* kMainRef = "refs/heads/main";

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
template <class T, void (*Free)(T*)>
using Ptr = std::unique_ptr<T, Deleter<T, Free>>;

using Repo = Ptr<git_repository, git_repository_free>;
using Tree = Ptr<git_tree, git_tree_free>;
using TreeEntry = Ptr<git_tree_entry, git_tree_entry_free>;
using TreeBuilder = Ptr<git_treebuilder, git_treebuilder_free>;
using Commit = Ptr<git_commit, git_commit_free>;
using Blob = Ptr<git_blob, git_blob_free>;
using Object = Ptr<git_object, git_object_free>;
using Reference = Ptr<git_reference, git_reference_free>;
using Signature = Ptr<git_signature, git_signature_free>;
using RevWalk = Ptr<git_revwalk, git_revwalk_free>;

// Initialises libgit2 once per process (thread-safe; never shut down, so
// handles opened by other threads stay valid).
void ensure_init();

// "<what>: <libgit2's last error message> (libgit2 code N)".
std::string describe(std::string_view what, int code);
tl::unexpected<Error> fail_git(std::string_view what, int code);

std::string oid_hex(const git_oid& id);

// Opens the bare repository at `dir` (no upward search).
Result<Repo> open_repo(const std::string& dir);

// A path segment the store will write: ^[A-Za-z0-9._-]+$, not "." or "..",
// and not ".git" in any letter case (git fsck --strict refuses those).
bool valid_segment(std::string_view seg);

// Checks a relative POSIX path made of valid segments. On failure the message
// names `what`, the path, the offending segment and the rule.
Result<void> check_rel_path(std::string_view path, std::string_view what);

// A file to be written into a tree: bytes and whether it is executable.
struct FileBlob {
  std::string content;
  bool executable = false;
};

// path (relative, checked) -> file. std::map keeps it sorted and unique.
using FileMap = std::map<std::string, FileBlob>;

// Writes blobs and nested trees for `files` and returns the root tree's id.
// A path that is both a file and a directory ("a" and "a/b") is an error.
Result<git_oid> write_tree(git_repository* repo, const FileMap& files);

// Looks up the tree at `path` inside `root` ("" = root itself). Fails with a
// message naming `path` when it is missing or not a directory.
Result<Tree> subtree(git_repository* repo, const git_tree* root, const std::string& path);

// Resolves a revision spec ("HEAD", a commit id, a ref) to its commit.
Result<Commit> resolve_commit(git_repository* repo, const std::string& rev);

}  // namespace kzoo::store::git
