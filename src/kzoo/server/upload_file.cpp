#include "kzoo/server/upload_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <openssl/evp.h>

namespace kzoo::server {
namespace {

std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    s += digits[d[i] >> 4];
    s += digits[d[i] & 15];
  }
  return s;
}

Result<void> fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot open {} to sync it: {}", dir, std::strerror(errno)));
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) return fail(fmt::format("cannot sync {}: {}", dir, std::strerror(e)));
  return ok();
}

}  // namespace

struct UploadFile::Impl {
  std::string dir, temp;
  int fd = -1;
  std::uint64_t cap = 0, size = 0;
  bool over = false, committed = false;
  EVP_MD_CTX* md = nullptr;

  ~Impl() {
    if (fd >= 0) ::close(fd);
    if (!committed && !temp.empty()) ::unlink(temp.c_str());
    if (md) EVP_MD_CTX_free(md);
  }
};

UploadFile::UploadFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UploadFile::UploadFile(UploadFile&&) noexcept = default;
UploadFile& UploadFile::operator=(UploadFile&&) noexcept = default;
UploadFile::~UploadFile() = default;

Result<UploadFile> UploadFile::create(const std::string& dir, std::uint64_t cap, const std::string& owner) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->cap = cap;
  std::string tmpl = dir + "/" + std::string(kIncomingPrefix) + owner + "-XXXXXX";
  // mkostemp: O_EXCL and mode 0600 by construction.
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot create an upload file in {}: {}", dir, std::strerror(errno)));
  impl->fd = fd;
  impl->temp = tmpl;
  impl->md = EVP_MD_CTX_new();
  if (!impl->md || EVP_DigestInit_ex(impl->md, EVP_sha256(), nullptr) != 1) return fail("cannot start SHA-256");
  return UploadFile(std::move(impl));
}

Result<void> UploadFile::write(std::string_view bytes) {
  auto& m = *impl_;
  if (m.fd < 0) return fail("upload file is already finished");
  if (bytes.size() > m.cap - m.size) {
    m.over = true;
    return fail(fmt::format("upload is larger than the cap of {} bytes", m.cap));
  }
  EVP_DigestUpdate(m.md, bytes.data(), bytes.size());
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(m.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(fmt::format("cannot write {}: {}", m.temp, std::strerror(errno)));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  m.size += bytes.size();
  return ok();
}

bool UploadFile::over_cap() const { return impl_->over; }
std::uint64_t UploadFile::size() const { return impl_->size; }
const std::string& UploadFile::temp_path() const { return impl_->temp; }

Result<std::string> UploadFile::finish() {
  auto& m = *impl_;
  if (m.fd < 0) return fail("upload file is already finished");
  if (::fsync(m.fd) != 0) return fail(fmt::format("cannot sync {}: {}", m.temp, std::strerror(errno)));
  ::close(m.fd);
  m.fd = -1;
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(m.md, d, &n);
  return hex(d, n);
}

Result<std::string> UploadFile::commit(const std::string& name) {
  auto& m = *impl_;
  if (m.fd >= 0) return fail("finish() the upload before committing it");
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    return fail(fmt::format("upload name \"{}\" must be a plain, visible file name", name));
  std::string final_path = m.dir + "/" + name;
  // renameat2(RENAME_NOREPLACE) would be exact; link+unlink gives the same
  // "never overwrite" guarantee on every filesystem glibc 2.36 supports.
  if (::link(m.temp.c_str(), final_path.c_str()) != 0)
    return fail(fmt::format("cannot store the upload as {}: {}", final_path, std::strerror(errno)));
  ::unlink(m.temp.c_str());
  m.committed = true;
  if (auto r = fsync_dir(m.dir); !r) return tl::unexpected(r.error());
  return final_path;
}

Result<int> remove_incoming(const std::string& dir, const std::string& owner) {
  const std::string prefix = std::string(kIncomingPrefix) + (owner.empty() ? "" : owner + "-");
  DIR* d = ::opendir(dir.c_str());
  if (!d) return fail(fmt::format("cannot list {}: {}", dir, std::strerror(errno)));
  int removed = 0;
  while (dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (name.starts_with(prefix) && ::unlinkat(::dirfd(d), e->d_name, 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(bytes.data(), bytes.size(), d, &n, EVP_sha256(), nullptr);
  return hex(d, n);
}

}  // namespace kzoo::server
