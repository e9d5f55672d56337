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
// Fails (Error) only when the file cannot be opened.
Result<TarballRead> read_package_tarball(const std::string& path,
                                         const std::optional<std::string>& expected_kernel_id = {},
                                         const TreeLimits& limits = {});

// Same, from bytes already in memory (an upload buffered by the caller).
TarballRead read_package_tarball_bytes(std::string_view bytes,
                                       const std::optional<std::string>& expected_kernel_id = {},
                                       const TreeLimits& limits = {});

// Writes a deterministic .tar.gz of `tree` under the top-level path
// `kernel_id`: entries sorted, directories first in each level, mtime 0,
// uid/gid 0, uname/gname empty, mode 0755 for dirs and 0644 for files
// (0755 if `executable` is set on the source), pax-free ustar where possible,
// gzip with no timestamp or name. Identical input gives identical bytes.
Result<void> write_package_tarball(const PackageTree& tree, const std::string& kernel_id,
                                   const std::string& out_path);

}  // namespace kzoo::package
