// Submission tarballs: a streaming, capped reader and a deterministic packer.
//
// The reader sniffs the first bytes itself (so a user who uploads a zip or a
// plain tar is told what they sent), then lets libarchive — with only the gzip
// filter and the tar formats enabled — decode entries one block at a time.
// After every header and every block it compares the bytes consumed and
// produced against the caps, so a bomb stops at its first breach and memory
// never exceeds the kept content (<= max_total_bytes) plus libarchive's block.
#include "kzoo/package/tarball.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace kzoo::package {

namespace {

constexpr std::string_view kPackageDir = ".kernel_package";
constexpr std::string_view kHowToPack =
    "create it with `kzoo pack DIR -o FILE.tar.gz` or `tar czf FILE.tar.gz -C ROOT KERNEL_ID`";
constexpr std::uint64_t kRatioFloor = 1u << 20;  // the ratio is judged only past 1 MiB
constexpr std::size_t kFileBlock = 64 * 1024;

struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct ArchiveWriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
using ReadArchive = std::unique_ptr<archive, ArchiveReadFree>;
using WriteArchive = std::unique_ptr<archive, ArchiveWriteFree>;

std::string hex_prefix(std::string_view head) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < std::min<std::size_t>(head.size(), 8); ++i) {
    const auto c = static_cast<unsigned char>(head[i]);
    if (i) out += ' ';
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

// What the first bytes of a non-gzip upload are, in words; "" when gzip.
std::string sniff_not_gzip(std::string_view head, std::uint64_t total_size) {
  const auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  if (total_size == 0) return "an empty file";
  if (starts("\x1f\x8b")) return "";
  if (starts("BZh")) return "bzip2-compressed data";
  if (starts(std::string_view("\xfd" "7zXZ\0", 6))) return "xz-compressed data";
  if (starts("\x28\xb5\x2f\xfd")) return "zstd-compressed data";
  if (starts("PK\x03\x04") || starts("PK\x05\x06")) return "a zip archive";
  if (starts("7z\xbc\xaf\x27\x1c")) return "a 7-Zip archive";
  if (starts("\x1f\x9d")) return "compress (.Z) data";
  if (head.size() >= 262 && head.substr(257, 5) == "ustar") return "an uncompressed tar archive";
  return "data that is not gzip (it starts with bytes " + hex_prefix(head) + ")";
}

std::string parent_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// An entry name as the archive spells it, normalised, or the rule it breaks.
struct Name {
  std::string path;  // normalised; empty with root = the archive root ("./")
  bool root = false;
  std::string rule, detail;
};

Name normalise(const char* raw, bool is_dir) {
  Name n;
  if (raw == nullptr || *raw == '\0') {
    n.rule = "tar.bad-name", n.detail = "an entry has no name; " + std::string(kHowToPack);
    return n;
  }
  std::string s = raw;
  const std::string shown = detail::printable(s);
  if (s[0] == '/') {
    n.rule = "tar.absolute-path";
    n.detail = "'" + shown + "' is an absolute path; entries must be relative, under the kernel ID directory: " +
               std::string(kHowToPack);
    return n;
  }
  // "./" prefixes are what `tar czf F .` writes; they name the same place.
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  if (s.empty() || s == ".") {
    n.root = true;
    return n;
  }
  if (is_dir && s.back() == '/') s.pop_back();
  std::vector<std::string> segs;
  for (std::size_t start = 0;;) {
    const std::size_t slash = s.find('/', start);
    segs.push_back(s.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (std::find(segs.begin(), segs.end(), "..") != segs.end()) {
    n.rule = "tar.dotdot";
    n.detail = "'" + shown + "' has a '..' segment, which could write outside the extraction directory; " +
               std::string(kHowToPack);
    return n;
  }
  for (const auto& seg : segs) {
    std::string why;
    if (seg.empty()) why = "has an empty segment (a doubled or trailing '/')";
    else if (seg == ".") why = "has a '.' segment inside the path";
    else if (std::string p = detail::segment_problem(seg); !p.empty()) why = "has a segment that " + p;
    if (!why.empty()) {
      n.rule = "tar.bad-name", n.detail = "'" + shown + "' " + why + "; rename it and pack again";
      return n;
    }
  }
  n.path = std::move(s);
  return n;
}

struct Entry {
  std::string path;  // normalised, full archive path
  std::string shown;
  bool dir = false;
  bool executable = false;
  std::string content;
};

class TarReader {
 public:
  TarReader(std::string label, const TreeLimits& limits) : label_(std::move(label)), lim_(limits) {}

  // Reads everything from an archive whose open returned `open_rc` (libarchive
  // bids for the filter and format at open, so corruption can show there).
  void run(archive* a, int open_rc) {
    a_ = a;
    if (open_rc != ARCHIVE_OK) return broken();
    while (!stopped_) {
      archive_entry* e = nullptr;
      const int r = archive_read_next_header(a_, &e);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return broken();
      if (!stream_ok()) return;
      entry(e);
    }
  }

  // `whole_tree`: the archive is a tree from its root (a batch job's submit
  // directory), not one package under its kernel ID.
  TarballRead finish(const std::optional<std::string>& expected, bool whole_tree = false) {
    whole_tree_ = whole_tree;
    if (!stopped_) layout(expected);
    return std::move(out_);
  }

  void archive_violation(std::string rule, std::string detail) {
    out_.violations.push_back(Violation{label_, "", std::move(rule), std::move(detail)});
    stopped_ = true;
  }

 private:
  void add(const std::string& shown, std::string rule, std::string detail) {
    out_.violations.push_back(Violation{shown, "", std::move(rule), std::move(detail)});
  }
  void stop(const std::string& shown, std::string rule, std::string detail) {
    add(shown, std::move(rule), std::move(detail));
    stopped_ = true;
  }

  // A libarchive failure: the stream ended early, or is not what it claims.
  void broken() {
    const char* msg = archive_error_string(a_);
    // libarchive's gzip reader fails without a message when the 8-byte
    // trailer is cut short: a missing message means a short read.
    const std::string text = msg ? msg : "the gzip trailer is incomplete";
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("truncat") != std::string::npos || lower.find("premature") != std::string::npos ||
        lower.find("unexpected end") != std::string::npos || lower.find("eof") != std::string::npos || !msg)
      archive_violation("tar.truncated", "the archive ends early (" + text +
                                             "); the upload or copy was cut short: send the whole file again");
    else if (lower.find("unrecognized archive format") != std::string::npos)
      archive_violation("tar.corrupt", "the gzip stream does not hold a tar archive; " + std::string(kHowToPack));
    else
      archive_violation("tar.corrupt", "the archive is damaged (" + text + "); " + std::string(kHowToPack));
  }

  // The stream-level caps, checked after every header and data block.
  bool stream_ok() {
    const auto consumed = static_cast<std::uint64_t>(std::max<la_int64_t>(archive_filter_bytes(a_, -1), 0));
    const auto produced = static_cast<std::uint64_t>(std::max<la_int64_t>(archive_filter_bytes(a_, 0), 0));
    if (consumed > lim_.max_compressed_bytes) {
      archive_violation("tar.compressed-too-large",
                        "the archive is over the limit of " + std::to_string(lim_.max_compressed_bytes) +
                            " compressed bytes; a package holds authored source only");
      return false;
    }
    if (produced > kRatioFloor && consumed > 0 &&
        static_cast<double>(produced) > lim_.max_ratio * static_cast<double>(consumed)) {
      archive_violation("tar.ratio", "the archive expands " + std::to_string(produced / consumed) +
                                         "-fold (" + std::to_string(produced) + " bytes from " +
                                         std::to_string(consumed) + "), past the limit of " +
                                         std::to_string(static_cast<long long>(lim_.max_ratio)) +
                                         ": it looks like a compression bomb or holds generated data");
      return false;
    }
    return true;
  }

  // Why an entry of this type is refused, or "" for files and directories.
  static std::pair<std::string, std::string> type_problem(archive_entry* e) {
    const char* link = archive_entry_hardlink(e);
    const auto type = archive_entry_filetype(e);
    const std::string fix = "; packages hold regular files and directories only";
    if (link != nullptr)
      return {"tar.hardlink", "is a hard link to '" + detail::printable(link) + "'" + fix +
                                  ": pack a copy of the file instead"};
    if (type == AE_IFLNK) {
      const char* to = archive_entry_symlink(e);
      return {"tar.symlink", "is a symbolic link to '" + detail::printable(to ? to : "") + "'" + fix +
                                 ": pack a copy of the file instead"};
    }
    if (type == AE_IFCHR) return {"tar.special", "is a character device" + fix};
    if (type == AE_IFBLK) return {"tar.special", "is a block device" + fix};
    if (type == AE_IFIFO) return {"tar.special", "is a FIFO" + fix};
    if (type == AE_IFSOCK) return {"tar.special", "is a socket" + fix};
    if (type == AE_IFREG && archive_entry_sparse_count(e) > 0)
      return {"tar.special", "is a sparse file" + fix + ": pack it without --sparse"};
    if (type != AE_IFREG && type != AE_IFDIR) return {"tar.special", "has an unknown entry type" + fix};
    return {};
  }

  void entry(archive_entry* e) {
    const char* raw = archive_entry_pathname(e);
    const std::string shown = detail::printable(raw ? raw : "");
    if (++entries_ > lim_.max_entries)
      return stop(shown, "tar.too-many-entries",
                  "the archive has more than " + std::to_string(lim_.max_entries) +
                      " entries; reading stopped here. A package holds authored source only");
    // Every entry's data is decompressed (kept or skipped), so claimed sizes
    // count against the caps whatever the entry's type: refuse before reading.
    const std::uint64_t claimed =
        archive_entry_size_is_set(e) ? static_cast<std::uint64_t>(std::max<la_int64_t>(archive_entry_size(e), 0)) : 0;
    if (claimed > lim_.max_file_bytes)
      return stop(shown, "tar.file-too-large",
                  "the entry claims " + std::to_string(claimed) + " bytes, over the per-file limit of " +
                      std::to_string(lim_.max_file_bytes) +
                      "; packages hold authored source, not data: generate large inputs in build_test_env.py");
    if (total_ + claimed > lim_.max_total_bytes) return too_large(shown);

    const auto [type_rule, type_detail] = type_problem(e);
    const bool is_dir = archive_entry_filetype(e) == AE_IFDIR;
    Name name = normalise(raw, is_dir);
    bool keep = true;
    if (!name.rule.empty()) {
      add(shown, name.rule, name.detail);
      keep = false;
    } else if (!type_rule.empty()) {
      add(shown, type_rule, "'" + shown + "' " + type_detail);
      keep = false;
    } else if (name.root) {
      keep = false;  // "./": the extraction directory itself
    } else if (name.path.size() > lim_.max_path_bytes + 256 || detail::segment_count(name.path) > lim_.max_depth + 16) {
      // Far past any kernel ID plus package path: refused now, so hostile
      // names cannot fill memory. Exact limits are checked once the kernel ID
      // is known.
      add(shown, name.path.size() > lim_.max_path_bytes + 256 ? "tar.path-too-long" : "tar.too-deep",
          "'" + shown.substr(0, 80) + "...' is far longer or deeper than a package path may be; shorten it");
      keep = false;
    }

    Entry kept{name.path, shown, is_dir, (archive_entry_perm(e) & 0100) != 0, {}};
    if (keep && !is_dir) kept.content.reserve(claimed);
    // Drain the data either way: skipping decompresses too, and the caps
    // must see every byte.
    std::uint64_t got = 0;
    const void* buf = nullptr;
    std::size_t len = 0;
    la_int64_t offset = 0;
    while (true) {
      const int r = archive_read_data_block(a_, &buf, &len, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return broken();
      got += len;
      if (got > lim_.max_file_bytes)
        return stop(shown, "tar.file-too-large",
                    "the entry is over the per-file limit of " + std::to_string(lim_.max_file_bytes) + " bytes");
      if (total_ + got > lim_.max_total_bytes) return too_large(shown);
      if (keep && !is_dir) kept.content.append(static_cast<const char*>(buf), len);
      if (!stream_ok()) return;
    }
    total_ += std::max(got, claimed);
    if (keep) entries_kept_.push_back(std::move(kept));
  }

  void too_large(const std::string& shown) {
    stop(shown, "tar.too-large",
         "the archive's files add up to more than " + std::to_string(lim_.max_total_bytes) +
             " bytes; reading stopped here. Remove generated or data files");
  }

  // The whole-archive rules, once every entry is known: duplicates, case
  // collisions, the kernel ID, the top-level layout and the exact path caps.
  void layout(const std::optional<std::string>& expected) {
    std::map<std::string, const Entry*> by_path;
    std::set<std::string> dirs;  // explicit and implied, full paths
    for (const auto& e : entries_kept_) {
      auto [it, inserted] = by_path.emplace(e.path, &e);
      if (!inserted) {
        const bool mixed = it->second->dir != e.dir;
        add(e.shown, "tar.duplicate",
            "'" + e.shown + (mixed ? "' is both a file and a directory" : "' appears twice in the archive") +
                "; a later entry would silently replace an earlier one: pack each path once");
        dup_.insert(&e);
        continue;
      }
      if (e.dir) dirs.insert(e.path);
      for (std::string p = parent_of(e.path); !p.empty(); p = parent_of(p)) dirs.insert(p);
    }
    for (const auto& e : entries_kept_)
      if (!e.dir && dirs.count(e.path) && !dup_.count(&e))
        add(e.shown, "tar.duplicate", "'" + e.shown + "' is both a file and a directory; pack each path once");

    std::vector<std::string> all(dirs.begin(), dirs.end());
    for (const auto& [p, e] : by_path)
      if (!e->dir) all.push_back(p);
    std::sort(all.begin(), all.end());
    for (const auto& [a, b] : detail::case_collisions(all))
      add(detail::printable(b), "tar.case-collision",
          "'" + detail::printable(b) + "' and '" + detail::printable(a) +
              "' differ only in letter case and would be one file on macOS or Windows; rename one");

    std::string kid;  // the kernel ID directory; empty: the whole tree
    if (!whole_tree_ && !package_root(dirs, expected, kid)) return;
    out_.kernel_id = kid;
    const std::string prefix = kid.empty() ? "" : kid + "/";
    for (const auto& e : entries_kept_) {
      if (dup_.count(&e) || e.path == kid) continue;
      if (e.path.rfind(prefix, 0) != 0) {
        if (!(e.dir && prefix.rfind(e.path + "/", 0) == 0))
          add(e.shown, "tar.top-level",
              "'" + e.shown + "' lies outside the kernel ID directory '" + detail::printable(kid) +
                  "'; everything must be under it: " + std::string(kHowToPack));
        continue;
      }
      std::string rel = e.path.substr(prefix.size());
      if (rel.size() > lim_.max_path_bytes) {
        add(e.shown, "tar.path-too-long",
            "the package path is " + std::to_string(rel.size()) + " bytes, over the limit of " +
                std::to_string(lim_.max_path_bytes) + "; shorten it");
        continue;
      }
      if (detail::segment_count(rel) > lim_.max_depth) {
        add(e.shown, "tar.too-deep",
            "the package path has " + std::to_string(detail::segment_count(rel)) + " segments, over the limit of " +
                std::to_string(lim_.max_depth) + "; flatten the directory layout");
        continue;
      }
      if (!e.dir) out_.tree.files.push_back(PackageFile{rel, e.content, e.executable});
    }
    for (const auto& d : dirs)
      if (d.rfind(prefix, 0) == 0) {
        std::string rel = d.substr(prefix.size());
        if (rel.size() <= lim_.max_path_bytes && detail::segment_count(rel) <= lim_.max_depth)
          out_.tree.dirs.push_back(std::move(rel));
      }
    std::sort(out_.tree.files.begin(), out_.tree.files.end(),
              [](const PackageFile& x, const PackageFile& y) { return x.path < y.path; });
    std::sort(out_.tree.dirs.begin(), out_.tree.dirs.end());
  }

  // The one kernel ID directory (the parent of the one .kernel_package/), or
  // false with the layout's violations added.
  bool package_root(const std::set<std::string>& dirs, const std::optional<std::string>& expected, std::string& kid) {
    std::vector<std::string> roots;  // parents of every .kernel_package directory
    for (const auto& d : dirs)
      if (base_of(d) == kPackageDir) roots.push_back(parent_of(d));
    if (dirs.count(std::string(kPackageDir))) roots.insert(roots.begin(), "");
    std::sort(roots.begin(), roots.end(), [](const std::string& x, const std::string& y) {
      return x.size() != y.size() ? x.size() < y.size() : x < y;
    });
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());

    if (roots.empty()) {
      add(label_, "tar.top-level",
          "no .kernel_package/ directory found; the archive must hold one package under its kernel ID "
          "directory, e.g. hopper/norm/softmax/.kernel_package/desc.yaml: " + std::string(kHowToPack));
      return false;
    }
    if (roots.front().empty()) {
      add(label_, "tar.top-level",
          ".kernel_package/ is at the archive's top level; the top-level directory must be the kernel ID "
          "(e.g. hopper/norm/softmax/.kernel_package/): " + std::string(kHowToPack));
      return false;
    }
    kid = roots.front();
    if (roots.size() > 1) {
      std::string list;
      for (const auto& r : roots) list += (list.empty() ? "'" : ", '") + detail::printable(r) + "'";
      add(label_, "tar.nested-package",
          "the archive holds " + std::to_string(roots.size()) + " .kernel_package/ directories, under " + list +
              "; submit one package per tarball");
      if (expected && std::find(roots.begin(), roots.end(), *expected) != roots.end()) kid = *expected;
    }
    if (expected && *expected != kid)
      add(label_, "tar.top-level",
          "the archive holds kernel '" + detail::printable(kid) + "' but the submission names kernel '" +
              detail::printable(*expected) + "'; submit it under kernel_id '" + detail::printable(kid) +
              "' or pack the right directory");
    return true;
  }

  bool whole_tree_ = false;
  std::string label_;
  const TreeLimits& lim_;
  archive* a_ = nullptr;
  TarballRead out_;
  std::vector<Entry> entries_kept_;
  std::set<const Entry*> dup_;
  std::uint64_t entries_ = 0;
  std::uint64_t total_ = 0;
  bool stopped_ = false;
};

ReadArchive new_reader() {
  ReadArchive a(archive_read_new());
  if (!a) throw std::bad_alloc();
  // Only gzip and the tar family: every other filter and format is attack
  // surface a submission never needs.
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  return a;
}

// The checks made before libarchive sees a byte: size, magic, minimal length.
// Returns {rule, detail}, or an empty rule to go on.
std::pair<std::string, std::string> precheck(std::string_view head, std::uint64_t size, const TreeLimits& limits) {
  if (size > limits.max_compressed_bytes)
    return {"tar.compressed-too-large", "the archive is " + std::to_string(size) + " bytes, over the limit of " +
                                            std::to_string(limits.max_compressed_bytes) +
                                            " compressed bytes; a package holds authored source only"};
  if (std::string what = sniff_not_gzip(head, size); !what.empty())
    return {"tar.not-gzip", "expected a gzip-compressed tar archive (.tar.gz) but found " + what + "; " +
                                std::string(kHowToPack)};
  // A gzip header is 10 bytes and its trailer 8: anything shorter was cut
  // (libarchive would call it an unrecognised format).
  if (size < 18)
    return {"tar.truncated", "the archive is only " + std::to_string(size) +
                                 " bytes, a gzip stream cut short; send the whole file again"};
  return {};
}

// Checks a path the packer is asked to write. Beyond what the reader
// accepts, names must be ASCII: package segments are [A-Za-z0-9._-] anyway,
// ASCII names are the same bytes in every locale and fit plain ustar, and
// libarchive 3.6.2's pax writer crashes on UTF-8 names it cannot convert to
// the C locale (archive_entry_set_pathname_utf8), or tags every entry with
// hdrcharset=BINARY (which GNU tar warns about) when told not to convert.
Result<void> check_pack_path(const std::string& path, const std::string& what) {
  Name n = normalise(path.c_str(), false);
  const bool ascii = std::all_of(path.begin(), path.end(), [](char c) { return (c & 0x80) == 0; });
  if (!n.rule.empty() || n.root || n.path != path || !ascii)
    return fail("cannot pack " + what + " '" + detail::printable(path) +
                "': it must be a relative path of non-empty ASCII segments without control characters, "
                "backslashes, '.' or '..' (package names use [A-Za-z0-9._-]); rename it");
  return ok();
}

la_ssize_t append_to_string(archive*, void* out, const void* buf, size_t len) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), len);
  return static_cast<la_ssize_t>(len);
}

}  // namespace

TarballRead read_package_tarball_bytes(std::string_view bytes, const std::optional<std::string>& expected_kernel_id,
                                       const TreeLimits& limits) {
  TarReader reader("<upload>", limits);
  if (auto [rule, why] = precheck(bytes.substr(0, 512), bytes.size(), limits); !rule.empty()) {
    reader.archive_violation(rule, why);
  } else {
    ReadArchive a = new_reader();
    reader.run(a.get(), archive_read_open_memory(a.get(), bytes.data(), bytes.size()));
  }
  return reader.finish(expected_kernel_id);
}

namespace {
Result<TarballRead> read_tarball_file(const std::string& path, const std::optional<std::string>& expected_kernel_id,
                                      const TreeLimits& limits, bool whole_tree) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open tarball '" + path + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail("cannot stat tarball '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("'" + path + "' is not a regular file; pass a .tar.gz file");

  TarReader reader(path, limits);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  char head[512];
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  if (n < 0) return fail("cannot read tarball '" + path + "': " + std::strerror(errno));
  if (auto [rule, why] = precheck(std::string_view(head, n), size, limits); !rule.empty()) {
    reader.archive_violation(rule, why);
  } else {
    ReadArchive a = new_reader();
    // The compressed cap is also enforced while streaming: the file may grow.
    reader.run(a.get(), archive_read_open_fd(a.get(), fd, kFileBlock));
  }
  return reader.finish(expected_kernel_id, whole_tree);
}
}  // namespace

Result<TarballRead> read_package_tarball(const std::string& path, const std::optional<std::string>& expected_kernel_id,
                                         const TreeLimits& limits) {
  return read_tarball_file(path, expected_kernel_id, limits, false);
}

Result<TarballRead> read_tree_tarball(const std::string& path, const TreeLimits& limits) {
  return read_tarball_file(path, std::nullopt, limits, true);
}

Result<std::string> package_tarball_bytes(const PackageTree& tree, const std::string& kernel_id) {
  if (auto r = check_pack_path(kernel_id, "kernel ID"); !r) return tl::unexpected(r.error());
  // Every directory, explicit or implied, and each level's children in order.
  std::set<std::string> dirs;
  std::map<std::string, std::vector<const PackageFile*>> files_in;
  for (const auto& d : tree.dirs) {
    if (auto r = check_pack_path(d, "directory"); !r) return tl::unexpected(r.error());
    for (std::string p = d; !p.empty(); p = parent_of(p)) dirs.insert(p);
  }
  std::set<std::string> file_paths;
  for (const auto& f : tree.files) {
    if (auto r = check_pack_path(f.path, "file"); !r) return tl::unexpected(r.error());
    if (!file_paths.insert(f.path).second)
      return fail("cannot pack: the tree lists file '" + detail::printable(f.path) + "' twice");
    for (std::string p = parent_of(f.path); !p.empty(); p = parent_of(p)) dirs.insert(p);
    files_in[parent_of(f.path)].push_back(&f);
  }
  for (const auto& d : dirs)
    if (file_paths.count(d))
      return fail("cannot pack: '" + detail::printable(d) + "' is both a file and a directory in the tree");
  std::map<std::string, std::vector<std::string>> dirs_in;
  for (const auto& d : dirs) dirs_in[parent_of(d)].push_back(d);  // std::set order: sorted
  for (auto& [parent, fs] : files_in)
    std::sort(fs.begin(), fs.end(), [](const PackageFile* x, const PackageFile* y) { return x->path < y->path; });

  std::string out;
  WriteArchive a(archive_write_new());
  if (!a) throw std::bad_alloc();
  // pax_restricted writes plain ustar headers and adds a pax header only for
  // what ustar cannot hold (a name over 100/155 bytes). "!timestamp" (option
  // value NULL) leaves the gzip MTIME field zero; libarchive writes no FNAME.
  // One-byte last block: no zero padding after the gzip trailer.
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
      archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK ||
      archive_write_open(a.get(), &out, nullptr, append_to_string, nullptr) != ARCHIVE_OK)
    return fail(std::string("cannot start the tarball: ") + archive_error_string(a.get()));

  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
  const auto put = [&](const std::string& rel, const PackageFile* f) -> Result<void> {
    archive_entry_clear(e.get());
    const std::string name = rel.empty() ? kernel_id : kernel_id + "/" + rel;
    archive_entry_set_pathname(e.get(), f ? name.c_str() : (name + "/").c_str());
    archive_entry_set_filetype(e.get(), f ? AE_IFREG : AE_IFDIR);
    archive_entry_set_perm(e.get(), f && !f->executable ? 0644 : 0755);
    archive_entry_set_size(e.get(), f ? static_cast<la_int64_t>(f->content.size()) : 0);
    archive_entry_set_mtime(e.get(), 0, 0);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK ||
        (f && !f->content.empty() &&
         archive_write_data(a.get(), f->content.data(), f->content.size()) !=
             static_cast<la_ssize_t>(f->content.size())))
      return fail("cannot pack '" + detail::printable(name) + "': " + archive_error_string(a.get()));
    return ok();
  };
  // Directories first in each level, then that level's files.
  const auto emit = [&](const std::string& dir, auto&& self) -> Result<void> {
    for (const auto& sub : dirs_in[dir]) {
      if (auto r = put(sub, nullptr); !r) return r;
      if (auto r = self(sub, self); !r) return r;
    }
    for (const PackageFile* f : files_in[dir])
      if (auto r = put(f->path, f); !r) return r;
    return ok();
  };
  if (auto r = put("", nullptr); !r) return tl::unexpected(r.error());
  if (auto r = emit("", emit); !r) return tl::unexpected(r.error());
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return fail(std::string("cannot finish the tarball: ") + archive_error_string(a.get()));
  // The gzip MTIME field (bytes 4-7) must be zero for identical bytes; the
  // option above does it, this makes sure whatever libarchive's build.
  if (out.size() >= 10) std::fill(out.begin() + 4, out.begin() + 8, '\0');
  return out;
}

Result<void> write_package_tarball(const PackageTree& tree, const std::string& kernel_id,
                                   const std::string& out_path) {
  auto bytes = package_tarball_bytes(tree, kernel_id);
  if (!bytes) return tl::unexpected(bytes.error());
  std::string tmp = out_path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return fail("cannot create '" + tmp + "': " + std::strerror(errno));
  const auto give_up = [&](const std::string& what) {
    const std::string msg = "cannot write '" + out_path + "' (" + what + "): " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(msg);
  };
  for (std::size_t done = 0; done < bytes->size();) {
    const ssize_t n = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return give_up("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) return give_up("chmod");
  if (::fsync(fd) != 0) return give_up("fsync");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return fail("cannot write '" + out_path + "': " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), out_path.c_str()) != 0) {
    const std::string msg = "cannot write '" + out_path + "': " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(msg);
  }
  return ok();
}

}  // namespace kzoo::package
