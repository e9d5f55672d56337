#include "kzoo/runner/bytecode_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/runner/grade.hpp"
#include "kzoo/runner/test_support.hpp"
#include "kzoo/runner/workdir.hpp"

namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace kzoo::runner {
namespace {

using testing::EnvVar;

const std::string kJudge = std::string(KZOO_SOURCE_DIR) + "/judge";

BytecodeCacheRequest request(const std::string& dir, const std::string& judge = kJudge) {
  BytecodeCacheRequest r;
  r.dir = dir;
  r.python = "/usr/bin/python3";
  r.judge_dir = judge;
  r.judge_inside = "/kzoo/judge";
  return r;
}

// A file under `dir` whose path ends with `tail` and whose name starts with `stem` (the cache
// tag, cpython-3XX, is the interpreter's).
bool cached(const std::string& dir, const std::string& tail, const std::string& stem) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string p = it->path().string();
    const std::string name = it->path().filename().string();
    if (p.find(tail) != std::string::npos && name.rfind(stem + ".cpython-", 0) == 0 && name.size() > 4 &&
        name.compare(name.size() - 4, 4, ".pyc") == 0)
      return true;
  }
  return false;
}

long long mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

TEST(BytecodeCacheDefault, IsTheUsersCacheOrRootsSystemCacheUnlessNamedOrTurnedOff) {
  EnvVar a("KZOO_BYTECODE_CACHE", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", "/home/someone");
  const bool root = ::geteuid() == 0;  // the sandbox then runs as another uid, shut out of root's home
  EXPECT_EQ(default_bytecode_cache(), root ? "/var/cache/kzoo/bytecode" : "/home/someone/.cache/kzoo/bytecode");
  {
    EnvVar x("XDG_CACHE_HOME", "/var/cache/me");
    EXPECT_EQ(default_bytecode_cache(), root ? "/var/cache/kzoo/bytecode" : "/var/cache/me/kzoo/bytecode");
    EnvVar k("KZOO_BYTECODE_CACHE", "/srv/kzoo/bytecode");
    EXPECT_EQ(default_bytecode_cache(), "/srv/kzoo/bytecode");
    EnvVar rel("KZOO_BYTECODE_CACHE", "cache/./bytecode");  // as kzoo prepare --bytecode-cache takes it
    EXPECT_EQ(default_bytecode_cache(), (fs::current_path() / "cache/bytecode").string());
  }
  EnvVar off("KZOO_BYTECODE_CACHE", "off");
  EXPECT_EQ(default_bytecode_cache(), "");
  if (!root) {
    EnvVar k("KZOO_BYTECODE_CACHE", nullptr), h("HOME", nullptr);
    EXPECT_EQ(default_bytecode_cache(), "");  // nowhere to keep it: none, not the working directory
  }
}

TEST(BytecodeCache, IsWarmedOnceWithTorchAndTheJudgeAtThePathTheSandboxShows) {
  testing::TempDir dir;
  std::vector<std::string> said;
  auto r = request(dir.path() + "/cache");
  r.say = [&](std::string_view line) { said.emplace_back(line); };
  auto got = ensure_bytecode_cache(r);
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_EQ(*got, r.dir);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[0], HasSubstr("compiling the judge's Python modules into " + r.dir));
  EXPECT_THAT(said[1], HasSubstr("torch"));
  // torch where Python looks for it under the prefix; the judge at /kzoo/judge, not at its host path alone.
  EXPECT_TRUE(cached(r.dir, "/torch/", "__init__"));
  EXPECT_TRUE(cached(r.dir + "/kzoo/judge/kzoo_judge", "/kzoo/judge/kzoo_judge/", "judge"));
  EXPECT_TRUE(cached(r.dir + "/kzoo/judge/kzoo_judge", "/kzoo/judge/kzoo_judge/", "child"));
  // The judge's are checked by their source's hash (flags 3: hash-based, checked): two judges shown
  // at /kzoo/judge can share an mtime and a size.
  for (const auto& e : fs::directory_iterator(r.dir + "/kzoo/judge/kzoo_judge")) {
    const std::string head = testing::read_file(e.path().string()).substr(0, 8);
    ASSERT_EQ(head.size(), 8u) << e.path();
    EXPECT_EQ(static_cast<unsigned char>(head[4]), 3u) << e.path();
  }
  const std::string stamp = bytecode_stamp_path(r);
  EXPECT_TRUE(bytecode_stamp_holds(stamp));

  // Fresh: the second call runs nothing and leaves the stamp as it was.
  const long long before = mtime_ns(stamp);
  said.clear();
  auto again = ensure_bytecode_cache(r);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_TRUE(said.empty());
  EXPECT_EQ(mtime_ns(stamp), before);
}

TEST(BytecodeCache, IsWarmedAgainWhenTheJudgeChanges) {
  testing::TempDir dir;
  const std::string judge = dir.path() + "/judge";
  fs::create_directories(judge);
  fs::copy(kJudge + "/kzoo_judge", judge + "/kzoo_judge", fs::copy_options::recursive);
  auto r = request(dir.path() + "/cache", judge);
  ASSERT_TRUE(ensure_bytecode_cache(r).has_value());
  const std::string stamp = bytecode_stamp_path(r);
  ASSERT_TRUE(bytecode_stamp_holds(stamp));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  testing::write_file(judge + "/kzoo_judge/spin.py", testing::read_file(judge + "/kzoo_judge/spin.py") + "# changed\n");
  EXPECT_FALSE(bytecode_stamp_holds(stamp));
  int warmups = 0;
  r.say = [&](std::string_view line) { warmups += line.find("compiling") != std::string_view::npos; };
  ASSERT_TRUE(ensure_bytecode_cache(r).has_value());
  EXPECT_EQ(warmups, 1);
  EXPECT_TRUE(bytecode_stamp_holds(stamp));
}

TEST(BytecodeCacheStamp, HoldsOnlyWhenEveryFileItNamesIsUnchanged) {
  testing::TempDir dir;
  const std::string f = dir / "watched.py", stamp = dir / "stamp.json";
  testing::write_file(f, "x = 1\n");
  auto line = [&](long long mtime, long long size) {
    return "{\"version\": 1, \"checks\": [[\"" + f + "\", " + std::to_string(mtime) + ", " + std::to_string(size) + "]]}";
  };
  testing::write_file(stamp, line(mtime_ns(f), 6));
  EXPECT_TRUE(bytecode_stamp_holds(stamp));
  testing::write_file(stamp, line(mtime_ns(f) + 1, 6));
  EXPECT_FALSE(bytecode_stamp_holds(stamp));
  testing::write_file(stamp, line(mtime_ns(f), 7));
  EXPECT_FALSE(bytecode_stamp_holds(stamp));
  for (const char* bad : {"", "{", "[]", "{\"version\": 2, \"checks\": []}", "{\"version\": 1, \"checks\": []}",
                          "{\"version\": 1, \"checks\": [[\"/no/such/file\", 0, 0]]}", "{\"version\": 1, \"checks\": [[1, 2, 3]]}"}) {
    testing::write_file(stamp, bad);
    EXPECT_FALSE(bytecode_stamp_holds(stamp)) << bad;
  }
  EXPECT_FALSE(bytecode_stamp_holds(dir / "missing.json"));
}

TEST(BytecodeCache, SaysWhyItCannotBeUsedAndChangesNothing) {
  testing::TempDir dir;
  auto relative = ensure_bytecode_cache(request("cache"));
  ASSERT_FALSE(relative.has_value());
  EXPECT_THAT(relative.error().message, HasSubstr("absolute path"));

  auto nowhere = ensure_bytecode_cache(request("/proc/kzoo-no-such-cache"));
  ASSERT_FALSE(nowhere.has_value());
  EXPECT_THAT(nowhere.error().message, HasSubstr("KZOO_BYTECODE_CACHE"));

  fs::create_directories(dir / "old/kzoo_judge");  // a judge without bytecode.py
  auto old = ensure_bytecode_cache(request(dir / "cache", dir / "old"));
  ASSERT_FALSE(old.has_value());
  EXPECT_THAT(old.error().message, HasSubstr("kzoo_judge/bytecode.py"));

  testing::write_file(dir / "broken/kzoo_judge/bytecode.py", "raise SystemExit('cannot warm here')\n");
  auto r = request(dir / "cache", dir / "broken");
  auto broken = ensure_bytecode_cache(r);
  ASSERT_FALSE(broken.has_value());
  EXPECT_THAT(broken.error().message, HasSubstr("cannot warm here"));
  EXPECT_FALSE(fs::exists(bytecode_stamp_path(r)));
  // Not tried again by this process: every grade would pay the failed attempt.
  int tries = 0;
  r.say = [&](std::string_view) { ++tries; };
  auto twice = ensure_bytecode_cache(r);
  ASSERT_FALSE(twice.has_value());
  EXPECT_THAT(twice.error().message, HasSubstr("already failed"));
  EXPECT_EQ(tries, 0);
}

TEST(BytecodeCache, IsRefusedWhenOthersCouldHavePlantedModulesInIt) {
  testing::TempDir dir;
  auto r = request(dir / "cache");
  ASSERT_TRUE(ensure_bytecode_cache(r).has_value());
  fs::permissions(r.dir, fs::perms(0777));
  auto open = ensure_bytecode_cache(r);  // its stamp holds: still refused
  ASSERT_FALSE(open.has_value());
  EXPECT_THAT(open.error().message, HasSubstr("writable by others (mode 777)"));
  fs::permissions(r.dir, fs::perms(0755));
  EXPECT_TRUE(ensure_bytecode_cache(r).has_value());
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(r.dir.c_str(), 65534, 65534), 0);
    auto foreign = ensure_bytecode_cache(r);
    ASSERT_FALSE(foreign.has_value());
    EXPECT_THAT(foreign.error().message, HasSubstr("belongs to uid 65534"));
  }
}

TEST(BytecodeCache, RunAsRootIsRefusedWhereTheSandboxsUidCannotReachIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox runs as this user: it reaches whatever kzoo does";
  testing::TempDir dir;
  fs::create_directories(dir / "private");
  fs::permissions(dir / "private", fs::perms(0700));
  auto r = request(dir / "private/cache");
  auto shut = ensure_bytecode_cache(r);
  ASSERT_FALSE(shut.has_value());
  EXPECT_THAT(shut.error().message, HasSubstr("the sandbox's uid cannot reach " + r.dir + ": " + dir.path() +
                                              "/private is mode 700"));
}

TEST(BytecodeCache, MakesTheFoldersItCreatesReadableWhateverTheUmask) {
  testing::TempDir dir;
  const mode_t old = ::umask(077);
  auto got = ensure_bytecode_cache(request(dir / "a/b/cache"));
  ::umask(old);
  ASSERT_TRUE(got.has_value()) << got.error().message;
  for (const char* d : {"a", "a/b", "a/b/cache", "a/b/cache/stamps", "a/b/cache/kzoo/judge/kzoo_judge"})
    EXPECT_EQ(fs::status(dir / d).permissions() & fs::perms::all, fs::perms(0755)) << d;
}

// The sandbox reads the cache, cannot write it, and the judge's torch loads from it.
TEST(BytecodeCacheInTheSandbox, ServesTorchReadOnly) {
  if (auto why = testing::bwrap_unusable_reason(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  auto skel = make_workdir_skeleton(dir / "w");
  ASSERT_TRUE(skel.has_value()) << skel.error().message;
  GradeOptions o;
  o.judge_dir = kJudge;
  o.bytecode_cache = dir / "cache";
  auto setup = harness_setup(*skel, "", o);
  ASSERT_TRUE(setup.has_value()) << setup.error().message;
  SandboxSpec spec = setup->spec;
  spec.env = setup->env;
  spec.wall_limit = std::chrono::seconds(120);
  spec.argv = {"/usr/bin/python3", "-c",
               "import sys, os, torch, tabnanny\n"
               "from kzoo_judge import bytecode\n"
               // tabnanny: a module no judge imports, whose bytecode Debian keeps beside its source
               "print(sys.pycache_prefix, bytecode.state(torch), bytecode.state(sys.modules['kzoo_judge.bytecode']),\n"
               "      bytecode.state(tabnanny))\n"
               "try:\n"
               "    open(os.path.join(sys.pycache_prefix, 'planted.pyc'), 'wb').write(b'x')\n"
               "    print('written')\n"
               "except OSError:\n"
               "    print('read-only')\n"};
  auto ran = run_sandbox(spec, setup->options);
  ASSERT_TRUE(ran.has_value()) << ran.error().message;
  ASSERT_EQ(ran->exit_code, 0) << ran->stderr_tail;
  EXPECT_EQ(ran->stdout_data, o.bytecode_cache + " current current current\nread-only\n");
  EXPECT_FALSE(fs::exists(o.bytecode_cache + "/planted.pyc"));

  // Turned off: no prefix, nothing bound.
  o.bytecode_cache.clear();
  auto plain = harness_setup(*skel, "", o);
  ASSERT_TRUE(plain.has_value());
  for (const auto& [k, v] : plain->env) EXPECT_NE(k, "PYTHONPYCACHEPREFIX");
}

}  // namespace
}  // namespace kzoo::runner
