// libFuzzer: the streaming tarball reader on hostile archives. The input is
// read as a recipe of entries -- [type][name length][name][size][content] --
// that libarchive writes as a real gzip'd tar (pax or GNU, chosen by the first
// byte), so the fuzzer reaches the reader's own rules (traversal, absolute and
// duplicate/case-colliding paths, links, devices, FIFOs, caps) rather than
// stopping at gzip and header checksums. Invariants: no crash or leak; a read
// without violations yields only regular files with relative, clean paths.
// kzoo-fuzz-sources: package/package_tree.cpp package/kernel_id.cpp format/utf8.cpp
#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "kzoo/package/tarball.hpp"

namespace {

la_ssize_t append(archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

struct Reader {
  const std::uint8_t* p;
  std::size_t left;
  std::uint8_t byte() { return left ? (--left, *p++) : 0; }
  std::string bytes(std::size_t n) {
    n = n < left ? n : left;
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    left -= n;
    return s;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in{data, size};
  std::string tar;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  const bool gnu = in.byte() & 1;
  if ((gnu ? archive_write_set_format_gnutar(a.get()) : archive_write_set_format_pax_restricted(a.get())) != ARCHIVE_OK ||
      archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
      archive_write_open(a.get(), &tar, nullptr, append, nullptr) != ARCHIVE_OK)
    return 0;
  static const unsigned kTypes[] = {AE_IFREG, AE_IFREG, AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFIFO, AE_IFREG};
  for (int entries = 0; in.left && entries < 64; ++entries) {
    const std::uint8_t t = in.byte();
    std::string name = in.bytes(in.byte());
    std::string content = in.bytes(in.byte() * 4u);
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    const unsigned type = kTypes[t % 8];
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), (t & 0x80) ? 0755 : 0644);
    if (type == AE_IFLNK) archive_entry_set_symlink(e.get(), content.c_str());
    if ((t & 0x40) && type == AE_IFREG) archive_entry_set_hardlink(e.get(), content.c_str());
    const bool has_data = type == AE_IFREG && !(t & 0x40);
    archive_entry_set_size(e.get(), has_data ? static_cast<la_int64_t>(content.size()) : 0);
    if (archive_write_header(a.get(), e.get()) < ARCHIVE_WARN) continue;
    if (has_data) archive_write_data(a.get(), content.data(), content.size());
  }
  archive_write_close(a.get());

  kzoo::package::TreeLimits limits;
  limits.max_entries = 32;
  limits.max_file_bytes = 512;
  limits.max_total_bytes = 4096;
  auto r = kzoo::package::read_package_tarball_bytes(tar, std::nullopt, limits);
  // Also the raw gzip bytes cut short: truncated archives are refused, never crash.
  kzoo::package::read_package_tarball_bytes(std::string_view(tar).substr(0, tar.size() / 2), std::nullopt, limits);
  if (r.violations.empty()) {
    for (const auto& f : r.tree.files) {
      if (f.path.empty() || f.path.front() == '/' || f.content.size() > limits.max_file_bytes) std::abort();
      std::size_t start = 0;
      while (start <= f.path.size()) {  // every segment: not empty, ".", ".."
        std::size_t end = f.path.find('/', start);
        if (end == std::string::npos) end = f.path.size();
        std::string_view seg(f.path.data() + start, end - start);
        if (seg.empty() || seg == "." || seg == "..") std::abort();
        start = end + 1;
      }
    }
  }
  return 0;
}
