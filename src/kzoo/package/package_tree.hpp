// A kernel package held in memory: its files (path relative to the package
// directory, POSIX separators, no leading "./") and its directories. Both a
// package directory on disk and a submission tarball are read into this one
// shape, so inspection has one implementation for both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::package {

struct PackageFile {
  std::string path;     // e.g. ".kernel_package/desc.yaml", "src/softmax.py"
  std::string content;  // the file's bytes
  // The owner-execute bit of the source (a directory entry's mode, or a tar
  // member's mode). Kept explicitly rather than guessed from a "#!" line, so a
  // round trip dir -> tarball -> dir preserves what the author chose.
  bool executable = false;
};

struct PackageTree {
  std::vector<PackageFile> files;  // sorted by path, unique
  std::vector<std::string> dirs;   // sorted, unique; every ancestor of a file is listed

  const PackageFile* find(std::string_view path) const;
  std::uint64_t total_bytes() const;
};

// Caps shared by the directory reader and the tarball reader. Defaults are
// sized for hand-written source: generous for code, hopeless for data dumps.
struct TreeLimits {
  std::uint64_t max_entries = 4096;          // files + directories
  std::uint64_t max_path_bytes = 240;        // relative path length
  std::uint64_t max_depth = 24;              // path segments
  std::uint64_t max_file_bytes = 2u << 20;   // one file, uncompressed
  std::uint64_t max_total_bytes = 16u << 20; // all files, uncompressed
  std::uint64_t max_compressed_bytes = 16u << 20;  // a tarball on disk / upload
  double max_ratio = 100.0;                  // uncompressed / compressed, checked past 1 MiB
};

// The upload's caps, but counted from a kernel_data repository's root, where
// a kernel ID's own segments come first: 32 segments deep, 320-byte paths
// (a push's trees, a batch job's submit directory).
TreeLimits repository_limits();

struct LoadedTree {
  PackageTree tree;
  Violations violations;  // entries refused (symlinks, specials, caps...), tree holds the rest
};

// Reads a package directory. Only regular files and directories are taken;
// symlinks (never followed), FIFOs, sockets and devices are violations
// (rules tree.symlink, tree.special), as are cap breaches (tree.too-many-entries,
// tree.path-too-long, tree.too-deep, tree.file-too-large, tree.too-large),
// names that are not portable (tree.bad-name: non-UTF-8, control characters,
// backslash), names in one directory equal under ASCII case folding
// (tree.case-collision) and subdirectories or files that cannot be opened
// (tree.unreadable). tree.too-many-entries and tree.too-large stop the walk;
// the others skip the entry and go on. Violation paths are relative to `dir`.
// Fails (Error) only when the directory cannot be read at all.
Result<LoadedTree> read_package_dir(const std::string& dir, const TreeLimits& limits = {});

// Writes `tree` into `fresh_dir`, which must not exist yet (it is created
// with mode 0755; an existing path is an error, never overwritten). Files are
// created with openat(O_CREAT|O_EXCL|O_NOFOLLOW) relative to directory fds, so
// no path in the tree can escape `fresh_dir`. Files get mode 0644, or 0755
// when `executable` (both under the process umask). A tree path that is
// absolute or has an empty, "." or ".." segment is an error. On error the
// partly written `fresh_dir` is left for the caller to remove.
Result<void> write_tree(const PackageTree& tree, const std::string& fresh_dir);

// The same into `dir`, which exists: its directories may exist already; its
// files must not, except those listed in `in_place` (tree paths), which must
// exist as regular files and are truncated and written through the same inode.
Result<void> write_tree_into(const PackageTree& tree, const std::string& dir,
                             const std::vector<std::string>& in_place);

// Name rules shared by the directory reader, the tarball reader and the packer.
namespace detail {
// How many '/'-separated segments `path` has (0 for "").
std::size_t segment_count(std::string_view path);
// Why `segment` (one path component, no '/') is not a portable name, or ""
// when it is: invalid UTF-8, a control character or a backslash. "", "." and
// ".." are the caller's to judge.
std::string segment_problem(std::string_view segment);
// `s` with control characters, backslashes and bytes that are not valid
// UTF-8 written as \xNN, so a hostile name can be shown and put in JSON.
std::string printable(std::string_view s);
// Pairs (first, second) of `paths` with the same parent that are equal under
// ASCII case folding; each collision is reported once, at the shallowest level.
std::vector<std::pair<std::string, std::string>> case_collisions(const std::vector<std::string>& paths);
}  // namespace detail

}  // namespace kzoo::package
