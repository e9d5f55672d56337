// PackageTree, the directory reader and the fresh-directory writer.
//
// Both the reader and the writer work relative to directory file descriptors
// (openat/fstatat with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW) and never build a
// path string to hand to the kernel: a symlink planted anywhere in the tree,
// or a hostile name in a PackageTree, cannot redirect them outside the
// directory they were given.
#include "kzoo/package/package_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

namespace kzoo::package {

namespace {

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string errno_text(int e) { return std::strerror(e); }

std::string join(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "/" + name;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if there is none
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

std::string kind_of(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file or directory";
}

// Walks one package directory depth-first, names sorted, so violations and
// the point where a cap stops the walk do not depend on readdir order.
class DirReader {
 public:
  explicit DirReader(const TreeLimits& limits) : lim_(limits) {}

  void walk(int dirfd, const std::string& rel) {
    DIR* d = ::fdopendir(dirfd);
    if (d == nullptr) {
      ::close(dirfd);
      add(rel, "tree.unreadable", "cannot list this directory: " + errno_text(errno) + "; make it readable");
      return;
    }
    std::vector<std::string> names;
    errno = 0;
    while (dirent* de = ::readdir(d)) {
      std::string n = de->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      if (stopped_) break;
      visit(::dirfd(d), rel, name);
    }
    ::closedir(d);
  }

  LoadedTree take() {
    std::vector<std::string> all = out_.tree.dirs;
    for (const auto& f : out_.tree.files) all.push_back(f.path);
    std::sort(all.begin(), all.end());
    for (const auto& [a, b] : detail::case_collisions(all))
      add(b, "tree.case-collision",
          "'" + detail::printable(b) + "' and '" + detail::printable(a) +
              "' differ only in letter case and would be one file on macOS or Windows; rename one");
    std::sort(out_.tree.files.begin(), out_.tree.files.end(),
              [](const PackageFile& x, const PackageFile& y) { return x.path < y.path; });
    std::sort(out_.tree.dirs.begin(), out_.tree.dirs.end());
    return std::move(out_);
  }

 private:
  void add(const std::string& path, std::string rule, std::string detail) {
    out_.violations.push_back(Violation{detail::printable(path), "", std::move(rule), std::move(detail)});
  }

  void visit(int dirfd, const std::string& parent, const std::string& name) {
    const std::string rel = join(parent, name);
    const std::string shown = detail::printable(rel);
    if (++entries_ > lim_.max_entries) {
      add(rel, "tree.too-many-entries",
          "the package has more than " + std::to_string(lim_.max_entries) +
              " files and directories; reading stopped here. A package holds authored source only: "
              "remove generated or vendored files");
      stopped_ = true;
      return;
    }
    if (std::string why = detail::segment_problem(name); !why.empty()) {
      add(rel, "tree.bad-name", "the name '" + detail::printable(name) + "' " + why + "; rename it");
      return;
    }
    if (rel.size() > lim_.max_path_bytes) {
      add(rel, "tree.path-too-long",
          "the path is " + std::to_string(rel.size()) + " bytes, over the limit of " +
              std::to_string(lim_.max_path_bytes) + "; shorten it");
      return;
    }
    if (detail::segment_count(rel) > lim_.max_depth) {
      add(rel, "tree.too-deep",
          "the path has " + std::to_string(detail::segment_count(rel)) + " segments, over the limit of " +
              std::to_string(lim_.max_depth) + "; flatten the directory layout");
      return;
    }
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      add(rel, "tree.unreadable", "cannot stat: " + errno_text(errno));
      return;
    }
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlinkat(dirfd, name.c_str(), target, sizeof target - 1);
      const std::string to = n >= 0 ? " -> '" + detail::printable(std::string_view(target, n)) + "'" : "";
      add(rel, "tree.symlink",
          "'" + shown + "' is a symbolic link" + to +
              "; packages hold regular files and directories only: replace the link with a copy of the file");
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      const int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        add(rel, "tree.unreadable", "cannot open directory: " + errno_text(errno) + "; make it readable");
        return;
      }
      out_.tree.dirs.push_back(rel);
      walk(fd, rel);
      return;
    }
    if (!S_ISREG(st.st_mode)) {
      add(rel, "tree.special",
          "'" + shown + "' is " + kind_of(st.st_mode) +
              "; packages hold regular files and directories only: remove it");
      return;
    }
    read_file(dirfd, name, rel, st);
  }

  void file_too_large(const std::string& rel, std::uint64_t size) {
    add(rel, "tree.file-too-large",
        "the file is " + std::to_string(size) + " bytes, over the per-file limit of " +
            std::to_string(lim_.max_file_bytes) +
            " bytes; packages hold authored source, not data: generate large inputs in build_test_env.py");
  }

  void read_file(int dirfd, const std::string& name, const std::string& rel, const struct stat& st) {
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size > lim_.max_file_bytes) return file_too_large(rel, size);
    if (total_ + size > lim_.max_total_bytes) return too_large(rel);
    // O_NONBLOCK: if the file was swapped for a FIFO after fstatat, open must
    // not hang; the fstat below then sees it is not the file we checked.
    Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat now {};
    if (!fd.ok() || ::fstat(fd.get(), &now) != 0) {
      add(rel, "tree.unreadable", "cannot open file: " + errno_text(errno) + "; make it readable");
      return;
    }
    if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
      add(rel, "tree.special", "'" + detail::printable(rel) + "' changed while it was read; read it again");
      return;
    }
    // Read at most one byte past the cap: a file that grew since fstatat is
    // caught without holding more than the cap in memory.
    std::string content;
    content.resize(std::min<std::uint64_t>(size, lim_.max_file_bytes) + 1);
    std::size_t got = 0;
    while (got < content.size()) {
      const ssize_t n = ::read(fd.get(), content.data() + got, content.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        add(rel, "tree.unreadable", "cannot read file: " + errno_text(errno));
        return;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
      if (got > lim_.max_file_bytes) return file_too_large(rel, got);
      if (got == content.size())  // grew since fstatat: keep reading, up to cap + 1
        content.resize(std::min<std::uint64_t>(content.size() * 2, lim_.max_file_bytes + 1));
    }
    content.resize(got);
    if (total_ + got > lim_.max_total_bytes) return too_large(rel);
    total_ += got;
    out_.tree.files.push_back(PackageFile{rel, std::move(content), (st.st_mode & S_IXUSR) != 0});
  }

  void too_large(const std::string& rel) {
    add(rel, "tree.too-large",
        "the package's files add up to more than " + std::to_string(lim_.max_total_bytes) +
            " bytes; reading stopped here. Remove generated or data files");
    stopped_ = true;
  }

  const TreeLimits& lim_;
  LoadedTree out_;
  std::uint64_t entries_ = 0;
  std::uint64_t total_ = 0;
  bool stopped_ = false;
};

// Splits a tree path into segments, refusing anything that could leave the
// directory or name it ambiguously.
Result<std::vector<std::string>> safe_segments(const std::string& path) {
  std::vector<std::string> segs;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg.empty() || seg == "." || seg == ".." || seg.find('\0') != std::string::npos)
      return fail("tree path '" + detail::printable(path) +
                  "' is absolute or has an empty, '.' or '..' segment; refusing to write it");
    segs.push_back(std::move(seg));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return segs;
}

// Opens (creating as needed) the directory made of segs[0, n) below root.
// Every step is O_NOFOLLOW: an existing symlink is never traversed.
Result<Fd> open_dir_chain(int root, const std::vector<std::string>& segs, std::size_t n,
                          const std::string& shown) {
  Fd cur(::dup(root));
  if (!cur.ok()) return fail("dup failed: " + errno_text(errno));
  for (std::size_t i = 0; i < n; ++i) {
    if (::mkdirat(cur.get(), segs[i].c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create directory for '" + shown + "': " + errno_text(errno));
    Fd next(::openat(cur.get(), segs[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok())
      return fail("cannot open directory '" + detail::printable(segs[i]) + "' for '" + shown +
                  "': " + errno_text(errno) + " (a file or link where a directory belongs?)");
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

const PackageFile* PackageTree::find(std::string_view path) const {
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const PackageFile& f, std::string_view p) { return f.path < p; });
  if (it != files.end() && it->path == path) return &*it;
  // Trees built by hand may be unsorted; fall back to a scan rather than miss.
  for (const auto& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

std::uint64_t PackageTree::total_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files) n += f.content.size();
  return n;
}

namespace detail {

std::size_t segment_count(std::string_view path) {
  return path.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

std::string segment_problem(std::string_view segment) {
  for (std::size_t i = 0; i < segment.size();) {
    const auto c = static_cast<unsigned char>(segment[i]);
    if (c < 0x20 || c == 0x7F) return "contains a control character";
    if (c == '\\') return "contains a backslash (use '/' between directories)";
    const std::size_t n = utf8_sequence(segment, i);
    if (n == 0) return "is not valid UTF-8";
    i += n;
  }
  return "";
}

std::string printable(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0 || c < 0x20 || c == 0x7F || c == '\\') {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> case_collisions(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::pair<std::string, std::string>, std::string> seen;  // (parent, folded name) -> first
  for (const auto& p : paths) {
    const std::size_t slash = p.rfind('/');
    std::string parent = slash == std::string::npos ? "" : p.substr(0, slash);
    std::string folded = slash == std::string::npos ? p : p.substr(slash + 1);
    for (char& c : folded)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    auto [it, inserted] = seen.emplace(std::make_pair(std::move(parent), std::move(folded)), p);
    if (!inserted && it->second != p) out.emplace_back(it->second, p);
  }
  return out;
}

}  // namespace detail

Result<LoadedTree> read_package_dir(const std::string& dir, const TreeLimits& limits) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot read package directory '" + dir + "': " + errno_text(errno) +
                "; pass an existing, readable directory");
  DirReader reader(limits);
  reader.walk(fd, "");  // takes ownership of fd
  return reader.take();
}

Result<void> write_tree(const PackageTree& tree, const std::string& fresh_dir) {
  if (::mkdir(fresh_dir.c_str(), 0755) != 0) {
    if (errno == EEXIST)
      return fail("'" + fresh_dir + "' already exists; write_tree only writes into a new directory, "
                  "never over existing files: choose another path or remove it first");
    return fail("cannot create '" + fresh_dir + "': " + errno_text(errno));
  }
  return write_tree_into(tree, fresh_dir, {});
}

Result<void> write_tree_into(const PackageTree& tree, const std::string& fresh_dir,
                             const std::vector<std::string>& in_place) {
  Fd root(::open(fresh_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.ok()) return fail("cannot open the directory '" + fresh_dir + "': " + errno_text(errno));

  for (const auto& d : tree.dirs) {
    auto segs = safe_segments(d);
    if (!segs) return tl::unexpected(segs.error());
    auto fd = open_dir_chain(root.get(), *segs, segs->size(), detail::printable(d));
    if (!fd) return tl::unexpected(fd.error());
  }
  for (const auto& f : tree.files) {
    const std::string shown = detail::printable(f.path);
    auto segs = safe_segments(f.path);
    if (!segs) return tl::unexpected(segs.error());
    auto parent = open_dir_chain(root.get(), *segs, segs->size() - 1, shown);
    if (!parent) return tl::unexpected(parent.error());
    const bool over = std::find(in_place.begin(), in_place.end(), f.path) != in_place.end();
    // In place: the existing (empty) file's inode keeps its content, so a bind of it made
    // before (a sandbox started ahead of its job) shows what is written now.
    Fd out(over ? ::openat(parent->get(), segs->back().c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC)
                : ::openat(parent->get(), segs->back().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           f.executable ? 0755 : 0644));
    if (!out.ok())
      return fail("cannot " + std::string(over ? "open the placeholder " : "create ") + "'" + shown + "' in '" +
                  fresh_dir + "': " + errno_text(errno) + (errno == EEXIST ? " (the tree lists it twice)" : ""));
    std::size_t done = 0;
    while (done < f.content.size()) {
      const ssize_t n = ::write(out.get(), f.content.data() + done, f.content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("cannot write '" + shown + "' in '" + fresh_dir + "': " + errno_text(errno));
      done += static_cast<std::size_t>(n);
    }
    // close() reports delayed write errors (NFS, quotas): check it.
    if (::close(out.release()) != 0)
      return fail("cannot write '" + shown + "' in '" + fresh_dir + "': " + errno_text(errno));
  }
  return ok();
}

TreeLimits repository_limits() {
  TreeLimits limits;
  limits.max_depth = 32;
  limits.max_path_bytes = 320;
  return limits;
}

}  // namespace kzoo::package
