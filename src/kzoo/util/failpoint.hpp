#pragma once
// Fault injection for the crash tests: `KZOO_FAILPOINT=<name>` makes the
// process SIGKILL itself when it reaches the failpoint of that name, so a
// test can land a `kill -9` exactly inside a window a timer would only hit
// by luck (between a commit and the job's completion, say). Unset in normal
// runs: one cached getenv, then a string compare per failpoint reached.
// The names in use are listed in docs/STORE.md ("Crash windows").

#include <string_view>

namespace kzoo::util {

// SIGKILLs this process if KZOO_FAILPOINT names `name`; returns otherwise.
void failpoint(std::string_view name);

}  // namespace kzoo::util
