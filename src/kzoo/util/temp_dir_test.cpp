#include "kzoo/util/temp_dir.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace kzoo {
namespace {

namespace fs = std::filesystem;

TEST(TempDirectory, IsFreshReachableByOthersAndGoneWithItsContents) {
  std::string path;
  {
    auto d = TempDirectory::make("kzoo-test-");
    ASSERT_TRUE(d) << d.error().message;
    path = d->path();
    EXPECT_TRUE(fs::is_directory(path));
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_exec, fs::perms::others_exec);
    fs::create_directories(path + "/w/src");
    std::ofstream(path + "/w/src/x.py") << "x\n";
    auto moved = std::move(*d);  // the new owner removes it, once
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(TempDirectory, AKeptOneStays) {
  std::string path;
  {
    auto d = TempDirectory::make("kzoo-test-");
    ASSERT_TRUE(d);
    path = d->path();
    d->keep();
  }
  EXPECT_TRUE(fs::is_directory(path));
  fs::remove_all(path);
}

}  // namespace
}  // namespace kzoo
