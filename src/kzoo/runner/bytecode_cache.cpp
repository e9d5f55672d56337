#include "kzoo/runner/bytecode_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kzoo/runner/signature.hpp"
#include "kzoo/util/command.hpp"
#include "kzoo/util/read_file.hpp"

namespace fs = std::filesystem;

namespace kzoo::runner {

namespace {

// Stamps whose warm-up failed in this process: not tried again for every grade.
std::mutex g_failed_mutex;
std::set<std::string> g_failed;

// Held for a warm-up: two runners warming one cache would compile everything twice.
class LockFile {
 public:
  explicit LockFile(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~LockFile() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Why every judge must not load modules from `dir`, or "": it is kzoo's own (its owner, not
// writable by others: a planted module would run in every judge), and the sandbox's uid can
// reach it (run as root, the sandbox runs as another uid, which must traverse every folder
// above it).
std::string unfit_owner(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "cannot read " + dir + ": " + std::strerror(errno);
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    return fmt::format("{} belongs to uid {}, not to kzoo's uid {}: every judge would load the modules it holds "
                       "(remove it, or set KZOO_BYTECODE_CACHE to a folder of kzoo's own)",
                       dir, st.st_uid, me);
  if ((st.st_mode & 022) != 0)
    return fmt::format("{} is writable by others (mode {:o}): every judge would load the modules it holds (chmod 755 "
                       "it, or set KZOO_BYTECODE_CACHE to a folder of kzoo's own)",
                       dir, st.st_mode & 07777);
  if (me == 0) {
    for (fs::path p = fs::path(dir); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      struct stat up {};
      if (::stat(p.c_str(), &up) == 0 && (up.st_mode & 001) == 0)
        return fmt::format("the sandbox's uid cannot reach {}: {} is mode {:o} (kzoo runs as root and drops the "
                           "sandbox to another uid; set KZOO_BYTECODE_CACHE to a folder others may traverse, such "
                           "as /var/cache/kzoo/bytecode)",
                           dir, p.string(), up.st_mode & 07777);
    }
  }
  return "";
}

}  // namespace

std::string default_bytecode_cache() {
  if (const char* v = std::getenv("KZOO_BYTECODE_CACHE"); v != nullptr && *v != '\0') {
    if (std::string_view(v) == "off") return "";
    // Relative to where kzoo was started, as `kzoo prepare --bytecode-cache` takes it: both name one folder.
    std::error_code ec;
    auto abs = fs::absolute(v, ec).lexically_normal().string();
    return ec ? std::string(v) : abs;
  }
  // Run as root, kzoo drops the sandbox to another uid (docs/SANDBOX.md, "The uid drop"),
  // which cannot reach root's home: the system's cache folder instead.
  if (::geteuid() == 0) return "/var/cache/kzoo/bytecode";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/') return std::string(x) + "/kzoo/bytecode";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h == '/') return std::string(h) + "/.cache/kzoo/bytecode";
  return "";
}

std::string bytecode_stamp_path(const BytecodeCacheRequest& r) {
  // One stamp per interpreter path, judge and judge path: the cache itself is shared
  // (its files sit at their sources' absolute paths, named by the interpreter's cache tag).
  std::string key = r.python + '\n' + r.judge_dir + '\n' + r.judge_inside;
  return r.dir + "/stamps/" + hmac_sha256_hex("kzoo bytecode stamp", key).substr(0, 24) + ".json";
}

bool bytecode_stamp_holds(const std::string& path) {
  auto text = util::read_file_capped(path, 1u << 20);
  if (!text) return false;
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object() || doc.value("version", 0) != 1 || !doc.contains("checks") || !doc["checks"].is_array() ||
      doc["checks"].empty())
    return false;
  for (const auto& c : doc["checks"]) {
    if (!c.is_array() || c.size() != 3 || !c[0].is_string() || !c[1].is_number_integer() || !c[2].is_number_integer())
      return false;
    struct stat st {};
    if (::stat(c[0].get<std::string>().c_str(), &st) != 0) return false;
    const long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    if (mtime_ns != c[1].get<long long>() || static_cast<long long>(st.st_size) != c[2].get<long long>()) return false;
  }
  return true;
}

Result<std::string> ensure_bytecode_cache(const BytecodeCacheRequest& r) {
  if (r.dir.empty() || r.dir.front() != '/') return fail("the bytecode cache must be an absolute path, not '" + r.dir + "'");
  const std::string stamp = bytecode_stamp_path(r);
  if (bytecode_stamp_holds(stamp)) {
    if (auto why = unfit_owner(r.dir); !why.empty()) return fail(why);
    return r.dir;
  }
  {
    std::lock_guard<std::mutex> lock(g_failed_mutex);
    if (g_failed.count(stamp)) return fail("its warm-up already failed in this process");
  }
  auto failed = [&](std::string why) -> Result<std::string> {
    std::lock_guard<std::mutex> lock(g_failed_mutex);
    g_failed.insert(stamp);
    return fail(std::move(why));
  };
  std::error_code ec;
  std::vector<fs::path> made;  // the folders made now, outermost last
  for (fs::path p = fs::path(r.dir) / "stamps"; !p.empty() && p != p.root_path() && !fs::exists(p, ec); p = p.parent_path())
    made.push_back(p);
  fs::create_directories(r.dir + "/stamps", ec);
  if (ec) return failed("cannot create " + r.dir + "/stamps: " + ec.message() + " (set KZOO_BYTECODE_CACHE to a writable folder, or to off)");
  for (const auto& p : made) fs::permissions(p, fs::perms(0755), ec);  // under a umask of 077 nobody else could read them
  if (auto why = unfit_owner(r.dir); !why.empty()) return failed(why);
  LockFile lock(r.dir + "/.lock");
  if (!lock.held()) return failed("cannot open " + r.dir + "/.lock: " + std::strerror(errno));
  if (bytecode_stamp_holds(stamp)) return r.dir;  // warmed by another runner while this one waited
  const std::string script = r.judge_dir + "/kzoo_judge/bytecode.py";
  if (!fs::is_regular_file(script, ec)) return failed("no " + script + " (a judge older than this kzoo)");
  if (r.say) r.say(fmt::format("compiling the judge's Python modules into {} (once per interpreter, torch and judge)", r.dir));
  auto ran = util::run_command({r.python, "-I", "-X", "pycache_prefix=" + r.dir, script, stamp, r.judge_dir, r.judge_inside},
                               r.timeout);
  if (!ran) return failed(ran.error().message);
  if (ran->exit_code != 0) {
    std::string tail = last_line(ran->err);
    return failed(fmt::format("{} {} exited with status {}{}", r.python, script, ran->exit_code,
                              tail.empty() ? "" : ": " + tail));
  }
  if (!bytecode_stamp_holds(stamp)) return failed("the warm-up wrote no stamp that holds at " + stamp);
  if (r.say) r.say(last_line(ran->out));
  return r.dir;
}

}  // namespace kzoo::runner
