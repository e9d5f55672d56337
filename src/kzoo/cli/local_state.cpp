#include "kzoo/cli/local_state.hpp"

#include <pwd.h>
#include <unistd.h>

#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::cli {

store::Actor local_actor() {
  const passwd* pw = ::getpwuid(::geteuid());
  return {std::string("local:") + (pw && pw->pw_name ? pw->pw_name : std::to_string(::geteuid())), "", ""};
}

Result<std::unique_ptr<store::StateDb>> open_local_state(const std::string& data) {
  if (!server::is_data_dir(data))
    return fail(data + " is not a kzoo data directory (no kernel_data.git and state.db): pass --data DIR, set "
                       "KZOO_DATA, or create one with `kzoo init DIR`");
  auto url = server::resolve_state_url(data, "", server::process_env());
  if (!url) return fail(url.error().message);
  auto db = store::open_state(*url);
  if (!db) return fail(db.error().message);
  (*db)->set_actor(local_actor());
  return std::move(*db);
}

}  // namespace kzoo::cli
