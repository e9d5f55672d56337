// The runner's bytecode cache: compiled Python modules for the judge's interpreter,
// kept by kzoo outside every sandbox and bound into each one read-only.
//
// Why: the sandbox binds the interpreter read-only and sets PYTHONDONTWRITEBYTECODE,
// so an interpreter whose site-packages hold no bytecode (a venv made without
// compiling, as uv makes them by default) compiled every module `import torch`
// loads at every judge's and every child's start, and no run could keep the result:
// 2.9-4.3 s of each start on the H200 runner (docs/PERF.md). The cache is filled
// once per interpreter, torch install and judge, by judge/kzoo_judge/bytecode.py run
// trusted and unsandboxed; a sandbox then gets PYTHONPYCACHEPREFIX pointing at it.
// Python checks every cached module against its source's mtime and size at import,
// so a stale entry is compiled again in memory, never trusted.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

// KZOO_BYTECODE_CACHE ("off": none; a relative path is taken from the working directory);
// else, run as root, /var/cache/kzoo/bytecode (the sandbox then runs as another uid, which
// root's home would shut out); else
// $XDG_CACHE_HOME/kzoo/bytecode, else $HOME/.cache/kzoo/bytecode; "" when there is none.
std::string default_bytecode_cache();

struct BytecodeCacheRequest {
  std::string dir;           // the cache
  std::string python;        // the judge's interpreter, as the sandbox runs it
  std::string judge_dir;     // the host directory holding kzoo_judge/
  std::string judge_inside;  // where the sandbox shows it
  std::chrono::seconds timeout{300};
  std::function<void(std::string_view)> say;  // a line before and after a warm-up
};

// The stamp of one interpreter, judge and judge path in `dir`: the files whose
// change makes the cache stale, [path, mtime_ns, size] each (bytecode.py).
std::string bytecode_stamp_path(const BytecodeCacheRequest& r);

// Whether the stamp at `path` exists and every file it lists is unchanged.
bool bytecode_stamp_holds(const std::string& path);

// `r.dir`, warmed first unless its stamp holds: an error says why it cannot be
// used (the caller runs without it, as before). Refused when it is not kzoo's own
// (another owner, writable by others) or the sandbox's uid cannot reach it. One
// warm-up at a time per cache (a lock file); one that failed is not tried again
// by this process.
Result<std::string> ensure_bytecode_cache(const BytecodeCacheRequest& r);

}  // namespace kzoo::runner
