#include "kzoo/server/data_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kzoo/board/agents_md.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server {

namespace fs = std::filesystem;

bool is_data_dir(const std::string& dir) {
  std::error_code ec;
  DataPaths p{dir};
  return fs::is_directory(p.repo(), ec) && (fs::is_regular_file(p.state_db(), ec) || fs::is_regular_file(p.config(), ec));
}

Result<DataPaths> init_data_dir(const std::string& dir, const std::string& catalog, const ServerConfig& cfg,
                                const std::string& board_device_class) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return fail(fmt::format("{} exists and is not a directory", dir));
    if (!fs::is_empty(dir, ec))
      return fail(fmt::format("{} is not empty: kzoo init only creates a data directory in an absent or empty one "
                              "(is_data_dir: {})",
                              dir, is_data_dir(dir) ? "yes, it is one already" : "no"));
  }
  if (!fs::is_regular_file(fs::path(catalog) / ".kernel_data", ec))
    return fail(fmt::format("{} is not a kernel_data root (no .kernel_data marker): give the catalog with "
                            "--catalog DIR or KZOO_CATALOG",
                            catalog));
  fs::create_directories(dir, ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", dir, ec.message()));
  DataPaths p{fs::absolute(dir).lexically_normal().string()};
  if (!p.root.empty() && p.root.back() == '/') p.root.pop_back();
  p.state = cfg.state;
  auto repo = store::KernelRepo::init_from_catalog(catalog, p.repo());
  if (!repo) return fail("initialising " + p.repo() + ": " + repo.error().message);
  // AGENTS.md first, so that the rules' commit, tagged `checks`, is main's head.
  if (auto r = board::ensure_agents_md(*repo); !r) return fail("writing AGENTS.md: " + r.error().message);
  // The board's rules (board/rules.hpp), tagged `checks`, unless the catalog
  // brings its own scienceslack.json (then a maintainer tags it).
  if (!fs::exists(fs::path(catalog) / board::kRulesFile, ec)) {
    std::string device_class = board_device_class;
    if (device_class.empty() || device_class == "auto") device_class = fs::exists("/dev/nvidiactl", ec) ? "h200" : "cpu";
    if (auto r = board::init_rules(*repo, device_class); !r) return fail("writing the board's rules: " + r.error().message);
  }
  auto db = store::open_state(p.state_url());
  if (!db) return fail("creating the state " + p.state_url() + ": " + db.error().message);
  fs::create_directory(p.uploads(), ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", p.uploads(), ec.message()));
  fs::permissions(p.uploads(), fs::perms::owner_all, ec);
  std::ofstream out(p.config(), std::ios::trunc);
  out << to_json(cfg).dump(2) << "\n";
  out.close();
  if (!out) return fail("cannot write " + p.config());
  return p;
}

Result<ServeLock> ServeLock::acquire(const DataPaths& paths, const std::string& server_id) {
  const bool shared = store::is_postgres_url(paths.state_url());
  const std::string file = shared ? paths.root + "/serve-" + server_id + ".lock" : paths.lock();
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return fail(fmt::format("cannot open {}: {}", file, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK)
      return fail(shared ? fmt::format("another kzoo serve with server_id {} is using {} (it holds {}): stop it, or "
                                       "give this one another --server-id",
                                       server_id, paths.root, file)
                         : fmt::format("another kzoo serve is using {} (it holds {}): stop it, or give another --data "
                                       "DIR (several servers share one directory only with a PostgreSQL state)",
                                       paths.root, file));
    return fail(fmt::format("cannot lock {}: {}", file, std::strerror(e)));
  }
  return ServeLock(fd);
}

ServeLock::~ServeLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace kzoo::server
