// A kernel package held in memory: its files (path relative to the package
// directory, POSIX separators, no leading "./") and its directories. Both a
// package directory on disk and a submission tarball are read into this one
// shape, so inspection has one implementation for both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::package {

struct PackageFile {
  std::string path;     // e.g. ".kernel_package/desc.yaml", "src/softmax.py"
  std::string content;  // the file's bytes
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

struct LoadedTree {
  PackageTree tree;
  Violations violations;  // entries refused (symlinks, specials, caps...), tree holds the rest
};

// Reads a package directory. Only regular files and directories are taken;
// symlinks (never followed), FIFOs, sockets and devices are violations
// (rules tree.symlink, tree.special), as are cap breaches (tree.too-many-entries,
// tree.path-too-long, tree.too-deep, tree.file-too-large, tree.too-large).
// Fails (Error) only when the directory cannot be read at all.
Result<LoadedTree> read_package_dir(const std::string& dir, const TreeLimits& limits = {});

// Writes `tree` into `fresh_dir`, which must not exist yet (it is created
// with mode 0755; an existing path is an error, never overwritten). Files are
// created with openat(O_CREAT|O_EXCL|O_NOFOLLOW) relative to directory fds, so
// no path in the tree can escape `fresh_dir`.
Result<void> write_tree(const PackageTree& tree, const std::string& fresh_dir);

}  // namespace kzoo::package
