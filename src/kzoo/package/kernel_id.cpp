#include "kzoo/package/kernel_id.hpp"

#include <filesystem>
#include <system_error>

namespace kzoo::package {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxSegments = 16;
constexpr std::size_t kMaxBytes = 200;

bool segment_char_ok(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Printable form of a user-supplied ID for messages: control and non-ASCII
// bytes become \xNN so a hostile ID cannot garble a terminal.
std::string printable(std::string_view s) {
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Absolute, normalised, symlinks resolved where the path exists, so that
// "pkg/../pkg" and a path given through a symlinked parent compare equal.
fs::path normalised(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(p), ec);
  if (ec) abs = fs::path(p);
  fs::path canon = fs::weakly_canonical(abs, ec);
  if (ec) canon = abs.lexically_normal();
  // weakly_canonical keeps a trailing separator ("a/b/" -> "a/b/"); drop it.
  std::string s = canon.generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return fs::path(s);
}

}  // namespace

Violations check_kernel_id(std::string_view id, const std::string& where) {
  Violations out;
  auto add = [&](std::string rule, std::string detail) {
    out.push_back(Violation{where, "", std::move(rule), std::move(detail)});
  };
  if (id.empty()) {
    add("kernel-id.empty",
        "the kernel ID is empty; it is the package's path relative to the kernel_data root, "
        "e.g. \"hopper/norm/softmax/bf16/eager\"");
    return out;
  }
  const std::string shown = printable(id);
  if (id.size() > kMaxBytes) {
    add("kernel-id.too-long", "kernel ID \"" + shown.substr(0, 80) + "...\" is " + std::to_string(id.size()) +
                                  " bytes; at most " + std::to_string(kMaxBytes) + " are allowed");
  }
  if (id.front() == '/' || id.back() == '/') {
    add("kernel-id.segment", "kernel ID \"" + shown +
                                 "\" has a leading or trailing '/'; write it as a relative POSIX path "
                                 "without slashes at either end");
  }
  std::size_t segments = 0;
  std::size_t start = 0;
  bool reported_empty = false;
  while (start <= id.size()) {
    std::size_t slash = id.find('/', start);
    std::string_view seg = id.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    ++segments;
    bool edge = (start == 0 && id.front() == '/') || (slash == std::string_view::npos && id.back() == '/');
    if (seg.empty()) {
      // Leading/trailing slashes are reported above; an inner "//" here.
      if (!edge && !reported_empty) {
        add("kernel-id.segment", "kernel ID \"" + shown + "\" has an empty segment (\"//\"); remove the extra '/'");
        reported_empty = true;
      }
    } else if (seg == "." || seg == "..") {
      add("kernel-id.segment", "kernel ID \"" + shown + "\" has the segment \"" + std::string(seg) +
                                   "\"; segments name real directories, \".\" and \"..\" are not allowed");
    } else {
      for (char c : seg) {
        if (!segment_char_ok(c)) {
          add("kernel-id.segment", "segment \"" + printable(seg) + "\" of kernel ID \"" + shown +
                                       "\" contains " + printable(std::string_view(&c, 1)) +
                                       "; segments must match ^[A-Za-z0-9._-]+$ (rename the directory)");
          break;
        }
      }
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (segments > kMaxSegments) {
    add("kernel-id.too-long", "kernel ID \"" + shown + "\" has " + std::to_string(segments) +
                                  " segments; at most " + std::to_string(kMaxSegments) + " are allowed");
  }
  return out;
}

Result<std::string> find_kernel_data_root(const std::string& dir) {
  fs::path p = normalised(dir);
  std::error_code ec;
  if (!fs::is_directory(p, ec)) {
    return fail("cannot look for the kernel_data root from \"" + dir + "\": not a directory");
  }
  for (fs::path cur = p;; cur = cur.parent_path()) {
    if (fs::exists(cur / std::string(kRootMarker), ec)) return cur.generic_string();
    if (cur == cur.parent_path() || cur.empty()) break;
  }
  return fail("no kernel_data root above \"" + dir + "\": no ancestor directory holds a \"" +
              std::string(kRootMarker) + "\" marker file; pass --root DIR, or create the marker at the root of " +
              "your kernel_data tree");
}

Result<std::string> kernel_id_of(const std::string& dir, const std::optional<std::string>& root) {
  std::string root_dir;
  if (root && !root->empty()) {
    root_dir = *root;
  } else {
    auto found = find_kernel_data_root(dir);
    if (!found) return tl::unexpected(found.error());
    root_dir = *found;
  }
  fs::path d = normalised(dir);
  fs::path r = normalised(root_dir);
  fs::path rel = d.lexically_relative(r);
  std::string id = rel.generic_string();
  while (!id.empty() && id.back() == '/') id.pop_back();
  if (rel.empty() || id == "." || id.empty()) {
    if (d == r) {
      return fail("\"" + dir + "\" is the kernel_data root itself, not a package inside it; "
                  "point at a package directory such as ROOT/hopper/norm/softmax/bf16/eager");
    }
    return fail("\"" + dir + "\" is not inside the kernel_data root \"" + root_dir + "\"");
  }
  if (id == ".." || id.rfind("../", 0) == 0) {
    return fail("\"" + dir + "\" is not inside the kernel_data root \"" + root_dir +
                "\"; pass the root that contains it with --root");
  }
  return id;
}

}  // namespace kzoo::package
