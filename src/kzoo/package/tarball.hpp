// Submission tarballs, read with libarchive as a stream: gzip-compressed tar
// only. Nothing touches the disk while reading; every cap of TreeLimits is
// enforced as bytes arrive, so a 10 GB bomb costs one block of memory and
// stops at the first breach.
//
// Layout: every entry lies under one top-level directory path, which is the
// kernel ID (it may span several segments: "hopper/norm/softmax/bf16/eager").
// It is the parent of the one ".kernel_package" directory in the archive;
// entries that are that path's ancestors ("hopper/", "hopper/norm/") are
// allowed, anything else outside it is a violation.
#pragma once

#include <optional>
#include <string>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::package {

struct TarballRead {
  std::string kernel_id;  // the top-level directory path; empty if none found
  PackageTree tree;       // entries below kernel_id, the prefix stripped
  Violations violations;  // every rule broken; tree is only trustworthy when empty
};

// Rules: tar.not-gzip, tar.truncated, tar.corrupt, tar.absolute-path,
// tar.dotdot, tar.symlink, tar.hardlink, tar.special (device/FIFO/socket),
// tar.duplicate, tar.case-collision, tar.bad-name (non-UTF-8, control chars,
// backslash, empty segment), tar.top-level (no single kernel-ID prefix, or not
// equal to expected_kernel_id), tar.nested-package, tar.too-many-entries,
// tar.path-too-long, tar.too-deep, tar.file-too-large, tar.too-large,
// tar.ratio, tar.compressed-too-large.
// Caps and corruption (tar.not-gzip, tar.truncated, tar.corrupt, the size and
// count caps) stop reading: kernel_id and tree are then empty and the
// violations hold what was found up to that point. Every other rule is
// collected over the whole archive. Leading "./" and the "./" entry itself are
// accepted (tar writes them); a "." segment elsewhere is tar.bad-name, any
// ".." segment is tar.dotdot. Sparse members are tar.special. A file's parent
// directories need not be entries. Entry violations carry the entry's name
// (escaped by detail::printable) as path; archive-level ones the file path,
// or "<upload>" for bytes.
// Fails (Error) only when the file cannot be opened or is not a regular file.
Result<TarballRead> read_package_tarball(const std::string& path,
                                         const std::optional<std::string>& expected_kernel_id = {},
                                         const TreeLimits& limits = {});

// A tarball of a whole tree from its root (a batch job's submit directory,
// `git archive HEAD | gzip`): the same rules and caps, but no kernel-ID
// layout (tar.top-level and tar.nested-package do not apply); kernel_id is
// empty and tree holds every entry at its archive path.
Result<TarballRead> read_tree_tarball(const std::string& path, const TreeLimits& limits = {});

// Same, from bytes already in memory (an upload buffered by the caller).
TarballRead read_package_tarball_bytes(std::string_view bytes,
                                       const std::optional<std::string>& expected_kernel_id = {},
                                       const TreeLimits& limits = {});

// Writes a deterministic .tar.gz of `tree` under the top-level path
// `kernel_id`: entries sorted, directories first in each level, mtime 0,
// uid/gid 0, uname/gname empty, mode 0755 for dirs and 0644 for files
// (0755 if PackageFile::executable is set), pax-free ustar where possible
// (a pax header only for a path over ustar's name limits), gzip with no
// timestamp or name. Identical input gives identical bytes. Paths must be
// ASCII (package names are [A-Za-z0-9._-]; see tarball.cpp for why), and
// must be relative without empty, "." or ".." segments: else an Error.
// Only the kernel ID's own directory is an entry, not its ancestors (as
// `tar czf F -C ROOT KERNEL_ID` does). The file is written to a temporary
// name beside `out_path` and renamed over it, so readers never see half.
Result<void> write_package_tarball(const PackageTree& tree, const std::string& kernel_id,
                                   const std::string& out_path);

// The same bytes, in memory (for uploads and tests).
Result<std::string> package_tarball_bytes(const PackageTree& tree, const std::string& kernel_id);

}  // namespace kzoo::package
