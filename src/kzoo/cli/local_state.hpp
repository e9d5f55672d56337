// Commands that work on a data directory's state directly (kzoo user, token,
// jobs, release, audit, maintain): whoever may write the directory runs the
// site, and the audit trail names them as local:<account>.
#pragma once

#include <memory>
#include <string>

#include "kzoo/store/state_db.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::cli {

// The audit trail's "who" for commands run on the data directory.
store::Actor local_actor();

// The state of data directory `data` (kzoo.json's state URL, else its
// state.db), its actor set to local_actor(); an error naming the fix when
// `data` is no data directory.
Result<std::unique_ptr<store::StateDb>> open_local_state(const std::string& data);

}  // namespace kzoo::cli
