// The submission tarball reader and the packer. Every archive here, hostile or
// not, is built by the helpers below with libarchive's own writer.
#include "kzoo/package/tarball.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

namespace kzoo::package {
namespace {

using ::testing::HasSubstr;

// ---- archive builders ------------------------------------------------------

struct TarEntry {
  std::string name{};
  unsigned type = AE_IFREG;
  std::string content{};
  unsigned perm = 0644;
  std::string symlink{};                  // AE_IFLNK target
  std::string hardlink{};                 // a hard link to this earlier entry
  std::optional<std::int64_t> claimed{};  // header size, when it differs from content
  bool sparse = false;
};

TarEntry directory(std::string name) { return TarEntry{.name = std::move(name), .type = AE_IFDIR, .perm = 0755}; }
TarEntry file(std::string name, std::string content = "print('hi')\n") {
  return TarEntry{.name = std::move(name), .content = std::move(content)};
}

la_ssize_t collect(archive*, void* out, const void* buf, size_t len) {
  auto* sink = static_cast<std::pair<std::string, bool>*>(out);
  if (sink->second) return -1;  // closed for writing: see header_only
  sink->first.append(static_cast<const char*>(buf), len);
  return static_cast<la_ssize_t>(len);
}

void put_entry(archive* a, const TarEntry& t) {
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(e.get(), t.name.c_str());
  archive_entry_set_filetype(e.get(), t.type);
  archive_entry_set_perm(e.get(), t.perm);
  archive_entry_set_size(e.get(), t.claimed.value_or(static_cast<std::int64_t>(t.content.size())));
  if (t.type == AE_IFCHR || t.type == AE_IFBLK) archive_entry_set_rdev(e.get(), makedev(1, 3));
  if (!t.symlink.empty()) archive_entry_set_symlink(e.get(), t.symlink.c_str());
  if (!t.hardlink.empty()) archive_entry_set_hardlink(e.get(), t.hardlink.c_str());
  if (t.sparse) {
    archive_entry_sparse_add_entry(e.get(), 0, 512);
    archive_entry_sparse_add_entry(e.get(), 1 << 20, 512);
  }
  // ARCHIVE_WARN: a name the C locale cannot convert, written as raw bytes (what we want).
  ASSERT_GE(archive_write_header(a, e.get()), ARCHIVE_WARN) << t.name << ": " << archive_error_string(a);
  if (!t.content.empty()) archive_write_data(a, t.content.data(), t.content.size());
}

// An archive of `entries` in `format` (pax_restricted = what tar czf makes)
// through `filter` (a libarchive filter code), uncompressed if ARCHIVE_FILTER_NONE.
std::string build(const std::vector<TarEntry>& entries, int filter = ARCHIVE_FILTER_GZIP,
                  int format = ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, const char* level = nullptr) {
  std::pair<std::string, bool> sink;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  archive_write_set_format(a.get(), format);
  archive_write_add_filter(a.get(), filter);
  if (level) archive_write_set_filter_option(a.get(), nullptr, "compression-level", level);
  archive_write_set_bytes_in_last_block(a.get(), 1);
  archive_write_open(a.get(), &sink, nullptr, collect, nullptr);
  for (const auto& t : entries) put_entry(a.get(), t);
  archive_write_close(a.get());
  return sink.first;
}
std::string tgz(const std::vector<TarEntry>& entries) { return build(entries); }

// `data` as one gzip member (libarchive's raw format through the gzip filter).
std::string gzip(const std::string& data) {
  std::pair<std::string, bool> sink;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  archive_write_set_format_raw(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  archive_write_open(a.get(), &sink, nullptr, collect, nullptr);
  put_entry(a.get(), file("raw", data));
  archive_write_close(a.get());
  return sink.first;
}

// The uncompressed tar header(s) of one entry, without its data: for headers
// that claim more than anyone should write.
std::string header_only(const TarEntry& t) {
  std::pair<std::string, bool> sink;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_per_block(a, 0);  // unbuffered: the header arrives at once
  archive_write_open(a, &sink, nullptr, collect, nullptr);
  put_entry(a, t);
  std::string header = sink.first;
  sink.second = true;  // the writer's padding of the missing data now fails fast
  archive_write_free(a);
  return header;
}

const std::string kEndOfTar(1024, '\0');

// A valid package, as `tar czf F -C root hopper/norm/softmax` lists it.
std::vector<TarEntry> package(const std::string& kid = "hopper/norm/softmax", bool explicit_dirs = true) {
  std::vector<TarEntry> v;
  if (explicit_dirs) {
    v.push_back(directory(kid + "/"));
    v.push_back(directory(kid + "/.kernel_package/"));
  }
  v.push_back(file(kid + "/.kernel_package/desc.yaml", "name: softmax\n"));
  v.push_back(file(kid + "/.kernel_package/benchmark.py", "import kzoo_judge\n"));
  if (explicit_dirs) v.push_back(directory(kid + "/src/"));
  v.push_back(file(kid + "/src/softmax.py", "def softmax(x):\n    return x\n"));
  return v;
}

std::vector<TarEntry> plus(std::vector<TarEntry> v, std::vector<TarEntry> more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

TarballRead read(const std::string& bytes, const std::optional<std::string>& expected = {},
                 const TreeLimits& limits = {}) {
  return read_package_tarball_bytes(bytes, expected, limits);
}

std::vector<std::string> rules(const TarballRead& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations) out.push_back(v.rule);
  return out;
}

const Violation* find_rule(const TarballRead& r, const std::string& rule) {
  for (const auto& v : r.violations)
    if (v.rule == rule) return &v;
  return nullptr;
}

std::string temp_dir() {
  std::string t = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/kzoo_tar_XXXXXX");
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
  return t;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// ---- valid packages ---------------------------------------------------------

TEST(TarballRead, ValidPackageWithMultiSegmentKernelId) {
  const TarballRead r = read(tgz(package()), "hopper/norm/softmax");
  EXPECT_TRUE(r.violations.empty()) << ::testing::PrintToString(rules(r));
  EXPECT_EQ(r.kernel_id, "hopper/norm/softmax");
  ASSERT_EQ(r.tree.files.size(), 3u);
  EXPECT_EQ(r.tree.files[0].path, ".kernel_package/benchmark.py");
  EXPECT_EQ(r.tree.files[2].path, "src/softmax.py");
  EXPECT_EQ(r.tree.files[2].content, "def softmax(x):\n    return x\n");
  EXPECT_EQ(r.tree.dirs, (std::vector<std::string>{".kernel_package", "src"}));
}

TEST(TarballRead, ParentDirectoriesNeedNotBeEntries) {
  const TarballRead r = read(tgz(package("hopper/norm/softmax", /*explicit_dirs=*/false)));
  EXPECT_TRUE(r.violations.empty()) << ::testing::PrintToString(rules(r));
  EXPECT_EQ(r.kernel_id, "hopper/norm/softmax");
  EXPECT_EQ(r.tree.dirs, (std::vector<std::string>{".kernel_package", "src"}));
}

TEST(TarballRead, AncestorsOfTheKernelIdAndDotSlashPrefixesAreAccepted) {
  auto entries = plus({directory("./"), directory("./hopper/"), directory("./hopper/norm/")}, {});
  for (auto e : package()) entries.push_back(TarEntry{.name = "./" + e.name, .type = e.type, .content = e.content, .perm = e.perm});
  const TarballRead r = read(tgz(entries));
  EXPECT_TRUE(r.violations.empty()) << ::testing::PrintToString(rules(r));
  EXPECT_EQ(r.kernel_id, "hopper/norm/softmax");
  EXPECT_EQ(r.tree.files.size(), 3u);
}

TEST(TarballRead, ExecutableBitIsKept) {
  auto entries = package();
  entries.push_back(TarEntry{.name = "hopper/norm/softmax/src/run.sh", .content = "#!/bin/sh\n", .perm = 0755});
  const TarballRead r = read(tgz(entries));
  ASSERT_TRUE(r.violations.empty());
  EXPECT_TRUE(r.tree.find("src/run.sh")->executable);
  EXPECT_FALSE(r.tree.find("src/softmax.py")->executable);
}

// ---- not a gzip tarball -----------------------------------------------------

struct NotGzipCase {
  std::string what;
  std::string bytes;
  std::string says;
};

TEST(TarballRead, NonGzipInputIsNamedAndTheFixIsGiven) {
  std::string random(4096, '\0');
  std::mt19937 rng(7);
  for (auto& c : random) c = static_cast<char>(rng() & 0xFF);
  random[0] = 'Z';  // not by chance a gzip magic
  std::vector<NotGzipCase> cases = {
      {"plain tar", build(package(), ARCHIVE_FILTER_NONE), "uncompressed tar"},
      {"bzip2", build(package(), ARCHIVE_FILTER_BZIP2), "bzip2"},
      {"xz", build(package(), ARCHIVE_FILTER_XZ), "xz"},
      {"zstd", build(package(), ARCHIVE_FILTER_ZSTD), "zstd"},
      {"zip", build(package(), ARCHIVE_FILTER_NONE, ARCHIVE_FORMAT_ZIP), "zip"},
      {"random bytes", random, "starts with bytes 5a"},
      {"empty file", "", "empty file"},
  };
  for (const auto& c : cases) {
    ASSERT_FALSE(c.what != "empty file" && c.bytes.empty()) << c.what << ": the writer made nothing";
    const TarballRead r = read(c.bytes);
    ASSERT_EQ(rules(r), std::vector<std::string>{"tar.not-gzip"}) << c.what;
    EXPECT_THAT(r.violations[0].detail, HasSubstr(c.says)) << c.what;
    EXPECT_THAT(r.violations[0].detail, HasSubstr("kzoo pack DIR -o FILE.tar.gz")) << c.what;
    EXPECT_THAT(r.violations[0].detail, HasSubstr("tar czf")) << c.what;
    EXPECT_TRUE(r.kernel_id.empty());
  }
}

TEST(TarballRead, GzipThatHoldsNoTarIsCorrupt) {
  const TarballRead r = read(gzip("just some text, not a tar archive\n"));
  EXPECT_EQ(rules(r), std::vector<std::string>{"tar.corrupt"});
}

TEST(TarballRead, TruncatedArchivesAreReportedWhereverTheyAreCut) {
  auto entries = package();
  std::string big(200000, 'x');
  std::mt19937 rng(1);
  for (auto& c : big) c = static_cast<char>('a' + rng() % 26);  // incompressible enough to span blocks
  entries.push_back(file("hopper/norm/softmax/src/big.py", big));
  const std::string whole = tgz(entries);
  for (std::size_t cut : {std::size_t{12}, whole.size() / 3, whole.size() / 2, whole.size() - 9}) {
    const TarballRead r = read(whole.substr(0, cut));
    EXPECT_EQ(rules(r), std::vector<std::string>{"tar.truncated"}) << "cut at " << cut << " of " << whole.size();
    EXPECT_TRUE(r.tree.files.empty());
  }
}

// ---- entry types --------------------------------------------------------------

TEST(TarballRead, OnlyRegularFilesAndDirectoriesAreTaken) {
  const std::string k = "hopper/norm/softmax/src/";
  TarEntry symlink{.name = k + "link", .type = AE_IFLNK, .symlink = "/etc/passwd"};
  TarEntry hardlink{.name = k + "hard", .hardlink = "hopper/norm/softmax/src/softmax.py"};
  TarEntry chr{.name = k + "null", .type = AE_IFCHR};
  TarEntry blk{.name = k + "sda", .type = AE_IFBLK};
  TarEntry fifo{.name = k + "pipe", .type = AE_IFIFO};
  TarEntry sparse{.name = k + "holes.bin", .content = std::string(1024, 'a'), .claimed = 2 << 20, .sparse = true};
  const TarballRead r = read(tgz(plus(package(), {symlink, hardlink, chr, blk, fifo, sparse})));
  EXPECT_EQ(rules(r), (std::vector<std::string>{"tar.symlink", "tar.hardlink", "tar.special", "tar.special",
                                                "tar.special", "tar.special"}));
  EXPECT_THAT(find_rule(r, "tar.symlink")->detail, HasSubstr("/etc/passwd"));
  EXPECT_EQ(find_rule(r, "tar.symlink")->path, k + "link");
  EXPECT_THAT(r.violations[2].detail, HasSubstr("character device"));
  EXPECT_THAT(r.violations[3].detail, HasSubstr("block device"));
  EXPECT_THAT(r.violations[4].detail, HasSubstr("FIFO"));
  EXPECT_THAT(r.violations[5].detail, HasSubstr("sparse"));
  EXPECT_EQ(r.tree.files.size(), 3u);  // the refused entries are not in the tree
}

TEST(TarballRead, SocketsCannotBeInATarButAreRefusedIfTheWriterMakesOne) {
  std::pair<std::string, bool> sink;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  archive_write_set_format_pax_restricted(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_open(a.get(), &sink, nullptr, collect, nullptr);
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(e.get(), "k/.kernel_package/sock");
  archive_entry_set_filetype(e.get(), AE_IFSOCK);
  if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) GTEST_SKIP() << "tar cannot hold a socket";
  archive_write_close(a.get());
  EXPECT_TRUE(has_rule(read(sink.first).violations, "tar.special"));
}

// ---- names ----------------------------------------------------------------------

TEST(TarballRead, TraversalAndAbsolutePathsAreRefusedAndAllAreReported) {
  const TarballRead r = read(tgz(plus(package(), {file("../x"), file("hopper/norm/softmax/a/../../../../x"),
                                                  file("/etc/passwd"), file("hopper/norm/softmax/src/..")})));
  EXPECT_EQ(rules(r), (std::vector<std::string>{"tar.dotdot", "tar.dotdot", "tar.absolute-path", "tar.dotdot"}));
  EXPECT_EQ(r.violations[2].path, "/etc/passwd");
  EXPECT_EQ(r.tree.files.size(), 3u);
}

TEST(TarballRead, UnportableNamesAreBadNames) {
  const std::string k = "hopper/norm/softmax/src/";
  const TarballRead r = read(tgz(plus(package(), {file(k + "tab\there.py"), file(k + "back\\slash.py"),
                                                  file(k + "double//slash.py"), file(k + "./dot.py"),
                                                  file(k + "latin1-\xe9.py"), file(k + "bell\x07.py")})));
  EXPECT_EQ(rules(r), std::vector<std::string>(6, "tar.bad-name"));
  EXPECT_EQ(r.violations[4].path, k + "latin1-\\xe9.py");  // escaped: safe to print and put in JSON
  EXPECT_THAT(r.violations[4].detail, HasSubstr("UTF-8"));
  EXPECT_THAT(r.violations[1].detail, HasSubstr("backslash"));
}

TEST(TarballRead, ValidUtf8NamesAreLeftToThePackageRules) {
  const TarballRead r = read(tgz(plus(package(), {file("hopper/norm/softmax/src/caf\xc3\xa9.py")})));
  EXPECT_TRUE(r.violations.empty()) << ::testing::PrintToString(rules(r));
  EXPECT_NE(r.tree.find("src/caf\xc3\xa9.py"), nullptr);
}

TEST(TarballRead, DuplicatesAndCaseCollisionsAreRefused) {
  const std::string k = "hopper/norm/softmax/src/";
  const TarballRead r = read(tgz(plus(package(), {file(k + "softmax.py", "evil"), file(k + "Softmax.py"),
                                                  file(k + "lib"), file(k + "lib/x.py")})));
  EXPECT_EQ(rules(r), (std::vector<std::string>{"tar.duplicate", "tar.duplicate", "tar.case-collision"}));
  EXPECT_THAT(r.violations[1].detail, HasSubstr("both a file and a directory"));
  EXPECT_THAT(r.violations[2].detail, HasSubstr("Softmax.py"));
  // The first of two duplicates is kept; the tree is not trustworthy anyway.
  EXPECT_EQ(r.tree.find("src/softmax.py")->content, "def softmax(x):\n    return x\n");
}

TEST(TarballRead, CaseCollisionsOfImpliedDirectoriesAreReportedOnce) {
  const TarballRead r = read(tgz(plus(package(), {file("hopper/norm/softmax/Src/a.py"),
                                                  file("hopper/norm/softmax/Src/b.py")})));
  ASSERT_EQ(rules(r), std::vector<std::string>{"tar.case-collision"});
  EXPECT_EQ(r.violations[0].path, "hopper/norm/softmax/src");
}

TEST(TarballRead, PathLengthAndDepthAreCappedBelowTheKernelId) {
  const std::string k = "hopper/norm/softmax/";
  std::string deep = k;
  for (int i = 0; i < 25; ++i) deep += "d/";
  const TarballRead r =
      read(tgz(plus(package(), {file(k + std::string(241, 'a')), file(deep + "x.py"),
                                file(k + "src/" + std::string(230, 'b') + ".py"),
                                file(k + std::string(5000, 'c'))})));
  // The 5000-byte name is refused as it streams by (so hostile names cannot
  // fill memory), the others once the kernel ID is known.
  EXPECT_EQ(rules(r), (std::vector<std::string>{"tar.path-too-long", "tar.path-too-long", "tar.too-deep"}));
  EXPECT_EQ(r.violations[0].path.size(), k.size() + 5000);
  EXPECT_NE(r.tree.find("src/" + std::string(230, 'b') + ".py"), nullptr) << "240 bytes is within the cap";
}

// ---- layout -----------------------------------------------------------------------

TEST(TarballRead, EntriesOutsideTheKernelIdAreRefused) {
  const TarballRead r = read(tgz(plus(package(), {file("hopper/norm/other.py"), file("README.md")})));
  EXPECT_EQ(rules(r), (std::vector<std::string>{"tar.top-level", "tar.top-level"}));
  EXPECT_THAT(r.violations[0].detail, HasSubstr("outside the kernel ID directory 'hopper/norm/softmax'"));
}

TEST(TarballRead, TwoPackagesAreNested) {
  const TarballRead r = read(tgz(plus(package("hopper/norm/softmax"), package("hopper/norm/layernorm"))));
  EXPECT_TRUE(has_rule(r.violations, "tar.nested-package"));
  EXPECT_THAT(find_rule(r, "tar.nested-package")->detail, HasSubstr("'hopper/norm/layernorm'"));
  const TarballRead inner = read(tgz(plus(package("a"), package("a/src/b"))));
  EXPECT_TRUE(has_rule(inner.violations, "tar.nested-package"));
  EXPECT_EQ(inner.kernel_id, "a");
}

TEST(TarballRead, MissingKernelIdOrPackageIsTopLevel) {
  const TarballRead bare = read(tgz({file(".kernel_package/desc.yaml"), file("src/softmax.py")}));
  ASSERT_EQ(rules(bare), std::vector<std::string>{"tar.top-level"});
  EXPECT_THAT(bare.violations[0].detail, HasSubstr("top level"));
  EXPECT_TRUE(bare.kernel_id.empty());
  const TarballRead none = read(tgz({file("hopper/src/softmax.py")}));
  ASSERT_EQ(rules(none), std::vector<std::string>{"tar.top-level"});
  EXPECT_THAT(none.violations[0].detail, HasSubstr("no .kernel_package/ directory"));
  const TarballRead empty = read(gzip(kEndOfTar));
  EXPECT_EQ(rules(empty), std::vector<std::string>{"tar.top-level"});
}

TEST(TarballRead, ExpectedKernelIdMustMatch) {
  const TarballRead r = read(tgz(package()), "hopper/norm/layernorm");
  ASSERT_EQ(rules(r), std::vector<std::string>{"tar.top-level"});
  EXPECT_THAT(r.violations[0].detail, HasSubstr("'hopper/norm/softmax'"));
  EXPECT_THAT(r.violations[0].detail, HasSubstr("'hopper/norm/layernorm'"));
}

// ---- caps and bombs -------------------------------------------------------------------

// A gzip stream of `files` members "k/.kernel_package/z" of `each` zero bytes:
// concatenated gzip members, so a 10 GB bomb costs one compression of `each`.
std::string zero_bomb(std::size_t files, std::size_t each) {
  const std::string zeros = gzip(std::string(each, '\0'));
  const std::string header =
      gzip(header_only(TarEntry{.name = "k/.kernel_package/z", .claimed = static_cast<std::int64_t>(each)}));
  std::string out;
  out.reserve(files * (zeros.size() + header.size()));
  for (std::size_t i = 0; i < files; ++i) out += header + zeros;
  return out + gzip(kEndOfTar);
}

TEST(TarballRead, ZipBombStopsAtTheRatioBeforeReadingOn) {
  // 4 GiB once expanded; garbage after the first 64 MiB proves the reader
  // stopped early: had it gone on, it would have reported tar.corrupt.
  std::string bomb = zero_bomb(64, 1 << 20);
  bomb += std::string(100000, 'G');
  TreeLimits limits;
  limits.max_compressed_bytes = 1u << 30;
  const TarballRead r = read(bomb, {}, limits);
  ASSERT_EQ(rules(r), std::vector<std::string>{"tar.ratio"});
  EXPECT_THAT(r.violations[0].detail, HasSubstr("compression bomb"));
  EXPECT_TRUE(r.tree.files.empty());
}

TEST(TarballRead, WithoutARatioCapTheTotalSizeStopsTheBomb) {
  std::string bomb = zero_bomb(64, 1 << 20) + std::string(100000, 'G');
  TreeLimits limits;
  limits.max_ratio = 1e12;
  const TarballRead r = read(bomb, {}, limits);
  EXPECT_EQ(rules(r), std::vector<std::string>{"tar.too-large"});
}

TEST(TarballRead, AHeaderClaimingTenGigabytesIsRefusedBeforeItsData) {
  const std::string k = "hopper/norm/softmax/src/";
  const std::string claim = header_only(TarEntry{.name = k + "huge.bin", .claimed = 10'000'000'000});
  // Only the header: no data follows, so reading the data would be tar.truncated.
  const std::string plain = build(package(), ARCHIVE_FILTER_NONE);
  const TarballRead r = read(gzip(plain.substr(0, plain.size() - kEndOfTar.size()) + claim));
  EXPECT_TRUE(has_rule(r.violations, "tar.file-too-large")) << ::testing::PrintToString(rules(r));
  EXPECT_FALSE(has_rule(r.violations, "tar.truncated"));
  TreeLimits limits;
  limits.max_file_bytes = 1ull << 40;
  EXPECT_EQ(rules(read(gzip(claim), {}, limits)), std::vector<std::string>{"tar.too-large"});
}

TEST(TarballRead, AHugePaxHeaderIsRefusedNotBuffered) {
  // 2 MiB of extended attributes make a 2.8 MB pax header; libarchive refuses
  // special headers over 1 MiB, so it never sits in memory whole.
  std::pair<std::string, bool> sink;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  archive_write_set_format_pax(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_open(a.get(), &sink, nullptr, collect, nullptr);
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(e.get(), "k/.kernel_package/desc.yaml");
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_size(e.get(), 0);
  const std::string value(2u << 20, 'v');
  archive_entry_xattr_add_entry(e.get(), "user.big", value.data(), value.size());
  ASSERT_EQ(archive_write_header(a.get(), e.get()), ARCHIVE_OK);
  archive_write_close(a.get());
  TreeLimits limits;
  limits.max_ratio = 1e12;
  const TarballRead r = read(sink.first, {}, limits);
  ASSERT_EQ(rules(r), std::vector<std::string>{"tar.corrupt"});
  EXPECT_THAT(r.violations[0].detail, HasSubstr("too large"));
}

TEST(TarballRead, FileAndTotalCapsApplyToRealData) {
  TreeLimits limits;
  limits.max_file_bytes = 1000;
  limits.max_total_bytes = 2500;
  const std::string k = "hopper/norm/softmax/src/";
  EXPECT_EQ(rules(read(tgz(plus(package(), {file(k + "a.py", std::string(1001, 'a'))})), {}, limits)),
            std::vector<std::string>{"tar.file-too-large"});
  const TarballRead r = read(tgz(plus(package(), {file(k + "a.py", std::string(1000, 'a')),
                                                  file(k + "b.py", std::string(1000, 'b')),
                                                  file(k + "c.py", std::string(1000, 'c'))})),
                             {}, limits);
  EXPECT_EQ(rules(r), std::vector<std::string>{"tar.too-large"});
  EXPECT_EQ(r.violations[0].path, k + "c.py");
}

TEST(TarballRead, HundredThousandTinyEntriesStopAtTheEntryCap) {
  std::vector<TarEntry> entries = package();
  for (int i = 0; i < 100000; ++i) entries.push_back(file("hopper/norm/softmax/src/f" + std::to_string(i), ""));
  const std::string bytes = build(entries, ARCHIVE_FILTER_GZIP, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, "1");
  TreeLimits limits;
  limits.max_ratio = 1e12;  // headers compress past 100:1; this test is about the count
  limits.max_compressed_bytes = 1u << 30;
  const TarballRead r = read(bytes, {}, limits);
  ASSERT_EQ(rules(r), std::vector<std::string>{"tar.too-many-entries"});
  EXPECT_THAT(r.violations[0].path, HasSubstr("/f4090"));  // the 4097th entry
}

TEST(TarballRead, CompressedSizeIsCapped) {
  TreeLimits limits;
  limits.max_compressed_bytes = 100;
  const std::string bytes = tgz(package());
  EXPECT_EQ(rules(read(bytes, {}, limits)), std::vector<std::string>{"tar.compressed-too-large"});
  const std::string dir = temp_dir();
  write_file(dir + "/p.tar.gz", bytes);
  auto r = read_package_tarball(dir + "/p.tar.gz", {}, limits);
  ASSERT_TRUE(r);
  EXPECT_EQ(rules(*r), std::vector<std::string>{"tar.compressed-too-large"});
}

TEST(TarballRead, RandomlyDamagedArchivesAreReportedNeverTrusted) {
  // Flip bytes of a valid archive and cut it: every result is either a clean
  // read of the package or carries violations; none may crash (run under ASan).
  const std::string good = tgz(package());
  std::mt19937 rng(42);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bad = good;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k)
      bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    if (i % 3 == 0) bad.resize(rng() % bad.size());
    const TarballRead r = read(bad);
    if (r.violations.empty()) {
      EXPECT_EQ(r.kernel_id, "hopper/norm/softmax");
      EXPECT_FALSE(r.tree.files.empty());
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 250) << "the gzip CRC should catch nearly every flipped byte";
}

// ---- the file variant ---------------------------------------------------------------------

TEST(TarballReadFile, ReadsTheSameAsFromMemory) {
  const std::string dir = temp_dir();
  write_file(dir + "/p.tar.gz", tgz(package()));
  auto r = read_package_tarball(dir + "/p.tar.gz", "hopper/norm/softmax");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->violations.empty());
  EXPECT_EQ(r->tree.files.size(), 3u);
}

TEST(TarballReadFile, ArchiveViolationsNameTheFile) {
  const std::string dir = temp_dir();
  write_file(dir + "/p.tar.gz", build(package(), ARCHIVE_FILTER_NONE));
  auto r = read_package_tarball(dir + "/p.tar.gz");
  ASSERT_TRUE(r);
  ASSERT_EQ(rules(*r), std::vector<std::string>{"tar.not-gzip"});
  EXPECT_EQ(r->violations[0].path, dir + "/p.tar.gz");
  write_file(dir + "/cut.tar.gz", tgz(package()).substr(0, 40));
  EXPECT_EQ(rules(*read_package_tarball(dir + "/cut.tar.gz")), std::vector<std::string>{"tar.truncated"});
}

TEST(TarballReadFile, OnlyAnUnopenableFileIsAnError) {
  const std::string dir = temp_dir();
  auto missing = read_package_tarball(dir + "/nope.tar.gz");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("nope.tar.gz"));
  EXPECT_FALSE(read_package_tarball(dir));  // a directory
}

// ---- packing ------------------------------------------------------------------------------

PackageTree sample_tree() {
  PackageTree t;
  t.files = {{".kernel_package/desc.yaml", "name: softmax\n"},
             {".kernel_package/build_test_env.py", "#!/usr/bin/env python3\n", true},
             {"src/" + std::string(150, 'n') + ".py", "long name: needs a pax header\n"},
             {"src/kernels/softmax.cu", "__global__ void k() {}\n"},
             {"README.md", "# softmax\n"}};
  t.dirs = {"empty"};  // an empty directory survives the round trip
  return t;
}

// Names of a tarball's entries in archive order.
std::vector<std::string> entry_names(const std::string& bytes) {
  std::vector<std::string> names;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_open_memory(a.get(), bytes.data(), bytes.size());
  archive_entry* e;
  while (archive_read_next_header(a.get(), &e) == ARCHIVE_OK) {
    EXPECT_EQ(archive_entry_mtime(e), 0);
    EXPECT_EQ(archive_entry_uid(e), 0);
    EXPECT_EQ(archive_entry_gid(e), 0);
    const char* uname = archive_entry_uname(e);
    EXPECT_STREQ(uname ? uname : "", "");
    names.push_back(archive_entry_pathname(e) + std::string(" ") + std::to_string(archive_entry_perm(e)));
  }
  return names;
}

TEST(PackageTarball, OnlyLongNamesGetAPaxHeader) {
  PackageTree t;
  t.files = {{"src/a.py", "x"}};
  auto bytes = package_tarball_bytes(t, "k");
  ASSERT_TRUE(bytes);
  // The uncompressed stream: three ustar headers (k/, k/src/, k/src/a.py), no 'x' typeflag.
  std::string tar;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_raw(a.get());
  archive_read_open_memory(a.get(), bytes->data(), bytes->size());
  archive_entry* e;
  ASSERT_EQ(archive_read_next_header(a.get(), &e), ARCHIVE_OK);
  char buf[4096];
  for (la_ssize_t n; (n = archive_read_data(a.get(), buf, sizeof buf)) > 0;) tar.append(buf, n);
  ASSERT_GE(tar.size(), 3u * 512);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(tar.substr(i * 512 + 257, 5), "ustar") << "header " << i;
    EXPECT_NE(tar[i * 512 + 156], 'x') << "header " << i << " is a pax header";
  }
  EXPECT_EQ(tar.substr(2 * 512, 10), std::string("k/src/a.py"));
}

TEST(PackageTarball, PackingTwiceGivesIdenticalBytes) {
  auto a = package_tarball_bytes(sample_tree(), "hopper/norm/softmax");
  PackageTree shuffled = sample_tree();
  std::reverse(shuffled.files.begin(), shuffled.files.end());
  auto b = package_tarball_bytes(shuffled, "hopper/norm/softmax");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  ASSERT_GE(a->size(), 10u);
  EXPECT_EQ(a->substr(0, 3), "\x1f\x8b\x08");
  EXPECT_EQ(a->substr(4, 4), std::string(4, '\0')) << "gzip MTIME must be zero";
  EXPECT_EQ(static_cast<unsigned char>((*a)[3]) & 0x08, 0) << "no FNAME in the gzip header";
}

TEST(PackageTarball, PackThenReadGivesTheSameTree) {
  const PackageTree t = sample_tree();
  auto bytes = package_tarball_bytes(t, "hopper/norm/softmax");
  ASSERT_TRUE(bytes) << bytes.error().message;
  const TarballRead r = read(*bytes, "hopper/norm/softmax");
  EXPECT_TRUE(r.violations.empty()) << ::testing::PrintToString(rules(r));
  ASSERT_EQ(r.tree.files.size(), t.files.size());
  for (const auto& f : t.files) {
    const PackageFile* g = r.tree.find(f.path);
    ASSERT_NE(g, nullptr) << f.path;
    EXPECT_EQ(g->content, f.content);
    EXPECT_EQ(g->executable, f.executable) << f.path;
  }
  EXPECT_EQ(r.tree.dirs, (std::vector<std::string>{".kernel_package", "empty", "src", "src/kernels"}));
}

TEST(PackageTarball, DirectoriesComeFirstInEachLevelWithFixedModes) {
  auto bytes = package_tarball_bytes(sample_tree(), "k");
  ASSERT_TRUE(bytes);
  const std::vector<std::string> names = entry_names(*bytes);
  const std::vector<std::string> expected = {
      "k/ 493", "k/.kernel_package/ 493", "k/.kernel_package/build_test_env.py 493",
      "k/.kernel_package/desc.yaml 420", "k/empty/ 493", "k/src/ 493", "k/src/kernels/ 493",
      "k/src/kernels/softmax.cu 420",
      "k/src/" + std::string(150, 'n') + ".py 420", "k/README.md 420"};
  EXPECT_EQ(names, expected);
}

TEST(PackageTarball, RefusesPathsTheReaderWouldRefuse) {
  PackageTree t = sample_tree();
  EXPECT_FALSE(package_tarball_bytes(t, "../up"));
  EXPECT_FALSE(package_tarball_bytes(t, "/abs"));
  EXPECT_FALSE(package_tarball_bytes(t, "a//b"));
  EXPECT_FALSE(package_tarball_bytes(t, ""));
  t.files.push_back({"src/../../escape", "x"});
  auto r = package_tarball_bytes(t, "k");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("src/../../escape"));
  PackageTree utf8 = sample_tree();
  utf8.files.push_back({"src/caf\xc3\xa9.py", "x"});
  EXPECT_FALSE(package_tarball_bytes(utf8, "k")) << "package names are ASCII";
  PackageTree twice = sample_tree();
  twice.files.push_back(twice.files[0]);
  EXPECT_FALSE(package_tarball_bytes(twice, "k"));
}

TEST(PackageTarball, WritesTheFileAndReadsItBack) {
  const std::string dir = temp_dir();
  const std::string out = dir + "/softmax.tar.gz";
  write_file(out, "old contents");
  ASSERT_TRUE(write_package_tarball(sample_tree(), "hopper/norm/softmax", out));
  auto r = read_package_tarball(out, "hopper/norm/softmax");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->violations.empty());
  EXPECT_EQ(r->tree.files.size(), sample_tree().files.size());
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_FALSE(write_package_tarball(sample_tree(), "k", dir + "/no/such/dir/x.tar.gz"));
}

}  // namespace
}  // namespace kzoo::package

namespace kzoo::package {
namespace {

// A whole tree from its root (a batch job's submit directory): several
// packages and files beside them, no kernel-ID layout, the same entry rules.
TEST(TarballRead, AWholeTreeReadsFromItsRootWithTheSameEntryRules) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/tree.tar.gz";
  write_file(path, tgz(plus(plus(package("a/one"), package("b/two")), {file("README.md", "# kernels\n")})));
  auto r = read_tree_tarball(path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->violations.empty()) << ::testing::PrintToString(rules(*r));
  EXPECT_EQ(r->kernel_id, "");
  ASSERT_EQ(r->tree.files.size(), 7u);
  EXPECT_EQ(r->tree.files[0].path, "README.md");
  EXPECT_EQ(r->tree.files[1].path, "a/one/.kernel_package/benchmark.py");
  TarEntry symlink{.name = "b/two/src/link", .type = AE_IFLNK, .symlink = "/etc/passwd"};
  write_file(path, tgz(plus(package("b/two"), {symlink, file("../escape", "x")})));
  auto bad = read_tree_tarball(path);
  ASSERT_TRUE(bad);
  EXPECT_NE(find_rule(*bad, "tar.symlink"), nullptr);
  EXPECT_NE(find_rule(*bad, "tar.dotdot"), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kzoo::package
