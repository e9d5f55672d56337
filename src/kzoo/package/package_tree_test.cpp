// Reading a package directory without following links, and writing a tree
// into a fresh directory without ever leaving it.
#include "kzoo/package/package_tree.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kzoo/package/tarball.hpp"

namespace kzoo::package {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A fresh directory under $TMPDIR, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string t = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/kzoo_tree_XXXXXX");
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  ::chmod(path.c_str(), mode);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> rules(const Violations& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.rule);
  return out;
}

std::vector<std::string> paths(const PackageTree& t) {
  std::vector<std::string> out;
  for (const auto& f : t.files) out.push_back(f.path);
  return out;
}

// A small package on disk, as an author would have it.
void make_package(const TempDir& d) {
  write_file(d / "pkg/.kernel_package/desc.yaml", "name: softmax\n");
  write_file(d / "pkg/.kernel_package/build_test_env.py", "#!/usr/bin/env python3\n", 0755);
  write_file(d / "pkg/src/softmax.py", "def softmax(x):\n    return x\n");
  write_file(d / "pkg/src/kernels/k.cu", "__global__ void k() {}\n");
  fs::create_directories(d / "pkg/empty");
}

// ---- PackageTree ----------------------------------------------------------------

TEST(PackageTree, FindAndTotalBytes) {
  PackageTree t;
  t.files = {{"a.py", "12345"}, {"src/b.py", "678"}};
  EXPECT_EQ(t.find("src/b.py")->content, "678");
  EXPECT_EQ(t.find("src"), nullptr);
  EXPECT_EQ(t.total_bytes(), 8u);
  PackageTree unsorted;
  unsorted.files = {{"z", "1"}, {"a", "2"}};
  EXPECT_EQ(unsorted.find("a")->content, "2");
}

TEST(PackageTreeNames, SegmentsArePortableUtf8WithoutControlsOrBackslashes) {
  EXPECT_EQ(detail::segment_problem("softmax.py"), "");
  EXPECT_EQ(detail::segment_problem("caf\xc3\xa9"), "");
  EXPECT_THAT(detail::segment_problem("a\\b"), HasSubstr("backslash"));
  EXPECT_THAT(detail::segment_problem("a\tb"), HasSubstr("control"));
  EXPECT_THAT(detail::segment_problem("\xff"), HasSubstr("UTF-8"));
  EXPECT_THAT(detail::segment_problem("\xc0\xaf"), HasSubstr("UTF-8")) << "overlong '/'";
  EXPECT_THAT(detail::segment_problem("\xed\xa0\x80"), HasSubstr("UTF-8")) << "a surrogate";
  EXPECT_EQ(detail::printable("a\xff\n\\b\xc3\xa9"), "a\\xff\\x0a\\x5cb\xc3\xa9");
}

// ---- read_package_dir ------------------------------------------------------------

TEST(ReadPackageDir, ReadsFilesAndDirectoriesSortedWithTheExecutableBit) {
  TempDir d;
  make_package(d);
  auto r = read_package_dir(d / "pkg");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->violations.empty());
  EXPECT_EQ(paths(r->tree), (std::vector<std::string>{".kernel_package/build_test_env.py",
                                                      ".kernel_package/desc.yaml", "src/kernels/k.cu",
                                                      "src/softmax.py"}));
  EXPECT_EQ(r->tree.dirs, (std::vector<std::string>{".kernel_package", "empty", "src", "src/kernels"}));
  EXPECT_TRUE(r->tree.find(".kernel_package/build_test_env.py")->executable);
  EXPECT_FALSE(r->tree.find("src/softmax.py")->executable);
  EXPECT_EQ(r->tree.find("src/softmax.py")->content, "def softmax(x):\n    return x\n");
}

TEST(ReadPackageDir, SymlinksAreReportedAndNeverFollowed) {
  TempDir d;
  make_package(d);
  write_file(d / "outside/secret.txt", "secret");
  ASSERT_EQ(::symlink((d / "outside/secret.txt").c_str(), (d / "pkg/src/link.py").c_str()), 0);
  ASSERT_EQ(::symlink((d / "outside").c_str(), (d / "pkg/src/linkdir").c_str()), 0);
  auto r = read_package_dir(d / "pkg");
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(r->violations), (std::vector<std::string>{"tree.symlink", "tree.symlink"}));
  EXPECT_EQ(r->violations[0].path, "src/link.py");
  EXPECT_THAT(r->violations[0].detail, HasSubstr("outside/secret.txt"));
  for (const auto& f : r->tree.files) EXPECT_NE(f.content, "secret") << f.path;
}

TEST(ReadPackageDir, FifosSocketsAndDevicesAreSpecial) {
  TempDir d;
  make_package(d);
  ASSERT_EQ(::mkfifo((d / "pkg/src/pipe").c_str(), 0644), 0);  // reading it would block forever
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = d / "pkg/src/sock";
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const bool have_device = ::mknod((d / "pkg/src/null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  auto r = read_package_dir(d / "pkg");
  ::close(s);
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(r->violations), std::vector<std::string>(have_device ? 3 : 2, "tree.special"));
  if (have_device) {
    EXPECT_THAT(r->violations[0].detail, HasSubstr("character device"));
  }
  EXPECT_THAT(r->violations[have_device ? 1 : 0].detail, HasSubstr("FIFO"));
  EXPECT_THAT(r->violations.back().detail, HasSubstr("socket"));
  EXPECT_EQ(r->tree.files.size(), 4u);
}

TEST(ReadPackageDir, OversizedFilesAreSkippedAndTheWalkGoesOn) {
  TempDir d;
  make_package(d);
  write_file(d / "pkg/src/weights.bin", std::string(5000, 'w'));
  TreeLimits limits;
  limits.max_file_bytes = 4096;
  auto r = read_package_dir(d / "pkg", limits);
  ASSERT_TRUE(r);
  ASSERT_EQ(rules(r->violations), std::vector<std::string>{"tree.file-too-large"});
  EXPECT_THAT(r->violations[0].detail, HasSubstr("5000 bytes"));
  EXPECT_EQ(r->tree.files.size(), 4u);
}

TEST(ReadPackageDir, TotalSizeAndEntryCountStopTheWalk) {
  TempDir d;
  for (int i = 0; i < 10; ++i) write_file(d / ("pkg/f" + std::to_string(i)), std::string(100, 'x'));
  TreeLimits total;
  total.max_total_bytes = 450;
  auto r = read_package_dir(d / "pkg", total);
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(r->violations), std::vector<std::string>{"tree.too-large"});
  EXPECT_EQ(r->tree.files.size(), 4u);
  TreeLimits count;
  count.max_entries = 6;
  r = read_package_dir(d / "pkg", count);
  EXPECT_EQ(rules(r->violations), std::vector<std::string>{"tree.too-many-entries"});
  EXPECT_EQ(r->violations[0].path, "f6");
  EXPECT_EQ(r->tree.files.size(), 6u);
}

TEST(ReadPackageDir, LongAndDeepPathsAreRefused) {
  TempDir d;
  make_package(d);
  write_file(d / ("pkg/src/" + std::string(240, 'a')), "x");
  std::string deep = "pkg";
  for (int i = 0; i < 5; ++i) deep += "/d";
  write_file(d / (deep + "/x.py"), "x");
  TreeLimits limits;
  limits.max_depth = 5;
  auto r = read_package_dir(d / "pkg", limits);
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(r->violations), (std::vector<std::string>{"tree.too-deep", "tree.path-too-long"}));
  EXPECT_EQ(r->violations[0].path, "d/d/d/d/d/x.py");
}

TEST(ReadPackageDir, UnportableNamesAndCaseCollisionsAreReported) {
  TempDir d;
  make_package(d);
  write_file(d / "pkg/src/latin1-\xe9.py", "x");
  write_file(d / "pkg/src/back\\slash.py", "x");
  write_file(d / "pkg/src/Softmax.py", "x");
  auto r = read_package_dir(d / "pkg");
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(r->violations), (std::vector<std::string>{"tree.bad-name", "tree.bad-name", "tree.case-collision"}));
  EXPECT_EQ(r->violations[1].path, "src/latin1-\\xe9.py");
  EXPECT_THAT(r->violations[2].detail, HasSubstr("'src/softmax.py' and 'src/Softmax.py'"));
}

TEST(ReadPackageDir, AMissingDirectoryIsAnError) {
  TempDir d;
  auto r = read_package_dir(d / "nope");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("nope"));
}

// ---- write_tree ----------------------------------------------------------------------

TEST(WriteTree, WritesAFreshDirectoryThatReadsBackTheSame) {
  TempDir d;
  make_package(d);
  auto original = read_package_dir(d / "pkg");
  ASSERT_TRUE(original);
  ASSERT_TRUE(write_tree(original->tree, d / "copy"));
  auto copy = read_package_dir(d / "copy");
  ASSERT_TRUE(copy);
  EXPECT_TRUE(copy->violations.empty());
  EXPECT_EQ(paths(copy->tree), paths(original->tree));
  EXPECT_EQ(copy->tree.dirs, original->tree.dirs);
  EXPECT_EQ(read_file(d / "copy/src/softmax.py"), "def softmax(x):\n    return x\n");
  EXPECT_TRUE(copy->tree.find(".kernel_package/build_test_env.py")->executable);
  EXPECT_FALSE(copy->tree.find("src/softmax.py")->executable);
}

TEST(WriteTree, NeverWritesIntoAnExistingDirectory) {
  TempDir d;
  write_file(d / "dest/src/softmax.py", "mine");
  PackageTree t;
  t.files = {{"src/softmax.py", "theirs"}};
  auto r = write_tree(t, d / "dest");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("already exists"));
  EXPECT_EQ(read_file(d / "dest/src/softmax.py"), "mine");
}

TEST(WriteTree, PathsThatCouldEscapeAreRefused) {
  for (const std::string bad : {"../escape", "a/../../escape", "/tmp/escape", "a//b", "./a", "a/.", ""}) {
    TempDir d;
    PackageTree t;
    t.files = {{bad, "x"}};
    auto r = write_tree(t, d / "dest");
    EXPECT_FALSE(r) << "'" << bad << "'";
    EXPECT_FALSE(fs::exists(d / "escape")) << bad;
    PackageTree as_dir;
    as_dir.dirs = {bad};
    EXPECT_FALSE(write_tree(as_dir, d / "dest2")) << "'" << bad << "' as a directory";
  }
}

TEST(WriteTree, ADuplicateIsAnErrorNotAnOverwrite) {
  TempDir d;
  PackageTree t;
  t.files = {{"a.py", "first"}, {"a.py", "second"}};
  auto r = write_tree(t, d / "dest");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("twice"));
  EXPECT_EQ(read_file(d / "dest/a.py"), "first");
  PackageTree file_then_dir;
  file_then_dir.files = {{"a", "x"}, {"a/b", "y"}};
  EXPECT_FALSE(write_tree(file_then_dir, d / "dest2"));
}

TEST(WriteTree, DirectoryToTarballToDirectoryRoundTrip) {
  TempDir d;
  make_package(d);
  auto original = read_package_dir(d / "pkg");
  ASSERT_TRUE(original);
  auto bytes = package_tarball_bytes(original->tree, "hopper/norm/softmax");
  ASSERT_TRUE(bytes);
  const TarballRead read = read_package_tarball_bytes(*bytes, "hopper/norm/softmax");
  ASSERT_TRUE(read.violations.empty());
  ASSERT_TRUE(write_tree(read.tree, d / "unpacked"));
  auto again = read_package_dir(d / "unpacked");
  ASSERT_TRUE(again);
  EXPECT_EQ(paths(again->tree), paths(original->tree));
  EXPECT_EQ(again->tree.dirs, original->tree.dirs);
  for (const auto& f : original->tree.files) {
    EXPECT_EQ(again->tree.find(f.path)->content, f.content);
    EXPECT_EQ(again->tree.find(f.path)->executable, f.executable);
  }
}

}  // namespace
}  // namespace kzoo::package
