#include "kzoo/package/kernel_id.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace kzoo::package {
namespace {
namespace fs = std::filesystem;

TEST(CheckKernelId, AcceptsARelativePathOfPlainSegments) {
  EXPECT_TRUE(check_kernel_id("hopper/norm/softmax/bf16/eager", "x").empty());
  EXPECT_TRUE(check_kernel_id("a", "x").empty());
  EXPECT_TRUE(check_kernel_id("A-1/b_2/c.3", "x").empty());
}

TEST(CheckKernelId, RefusesTheEmptyId) {
  auto v = check_kernel_id("", "pkg");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "kernel-id.empty");
  EXPECT_EQ(v[0].path, "pkg");
}

TEST(CheckKernelId, RefusesDotSegmentsAndEmptySegments) {
  EXPECT_TRUE(has_rule(check_kernel_id("a/../b", "x"), "kernel-id.segment"));
  EXPECT_TRUE(has_rule(check_kernel_id("./a", "x"), "kernel-id.segment"));
  EXPECT_TRUE(has_rule(check_kernel_id("a//b", "x"), "kernel-id.segment"));
  EXPECT_TRUE(has_rule(check_kernel_id("/a/b", "x"), "kernel-id.segment"));
  EXPECT_TRUE(has_rule(check_kernel_id("a/b/", "x"), "kernel-id.segment"));
}

TEST(CheckKernelId, RefusesCharactersOutsideTheSegmentAlphabet) {
  for (const char* bad : {"a b/c", "a/b\\c", "a/\xc3\xa9t\xc3\xa9", "a/b:c", "a/b\nc", "a/b*"}) {
    auto v = check_kernel_id(bad, "x");
    EXPECT_TRUE(has_rule(v, "kernel-id.segment")) << bad;
  }
}

TEST(CheckKernelId, MessagesEscapeControlBytes) {
  auto v = check_kernel_id("a/b\x1b[31mc", "x");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].detail.find('\x1b'), std::string::npos) << v[0].detail;
  EXPECT_NE(v[0].detail.find("\\x1b"), std::string::npos) << v[0].detail;
}

TEST(CheckKernelId, CapsSegmentsAndBytes) {
  std::string deep;
  for (int i = 0; i < 17; ++i) deep += (i ? "/s" : "s");
  EXPECT_TRUE(has_rule(check_kernel_id(deep, "x"), "kernel-id.too-long"));
  std::string sixteen;
  for (int i = 0; i < 16; ++i) sixteen += (i ? "/s" : "s");
  EXPECT_TRUE(check_kernel_id(sixteen, "x").empty());
  EXPECT_TRUE(has_rule(check_kernel_id(std::string(201, 'a'), "x"), "kernel-id.too-long"));
  EXPECT_TRUE(check_kernel_id(std::string(200, 'a'), "x").empty());
}

class KernelDataTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kzoo_kernel_id_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    root_ = base_ / "kernel_data";
    pkg_ = root_ / "hopper" / "norm" / "softmax" / "bf16" / "eager";
    fs::create_directories(pkg_ / "src");
    std::ofstream(root_ / ".kernel_data").put('\n');
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path base_, root_, pkg_;
};

TEST_F(KernelDataTree, FindsTheRootByWalkingUp) {
  auto r = find_kernel_data_root((pkg_ / "src").string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fs::path(*r), fs::canonical(root_));
  auto self = find_kernel_data_root(root_.string());
  ASSERT_TRUE(self);
  EXPECT_EQ(fs::path(*self), fs::canonical(root_));
}

TEST_F(KernelDataTree, NoMarkerMeansNoRootAndTheMessageSaysWhatToDo) {
  auto r = find_kernel_data_root(base_.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--root"), std::string::npos);
  EXPECT_NE(r.error().message.find(base_.string()), std::string::npos);
}

TEST_F(KernelDataTree, KernelIdIsThePathRelativeToTheRoot) {
  auto id = kernel_id_of(pkg_.string());
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(*id, "hopper/norm/softmax/bf16/eager");
  auto with_slash = kernel_id_of(pkg_.string() + "/");
  ASSERT_TRUE(with_slash);
  EXPECT_EQ(*with_slash, "hopper/norm/softmax/bf16/eager");
  auto dotted = kernel_id_of((root_ / "hopper" / ".." / "hopper" / "norm").string());
  ASSERT_TRUE(dotted);
  EXPECT_EQ(*dotted, "hopper/norm");
}

TEST_F(KernelDataTree, AnExplicitRootWinsOverTheMarker) {
  auto id = kernel_id_of(pkg_.string(), (root_ / "hopper").string());
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, "norm/softmax/bf16/eager");
}

TEST_F(KernelDataTree, TheRootItselfAndOutsidePathsAreNotPackages) {
  EXPECT_FALSE(kernel_id_of(root_.string()));
  auto outside = kernel_id_of(base_.string(), root_.string());
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("not inside"), std::string::npos);
}

TEST_F(KernelDataTree, TheRepositoryCatalogIsARoot) {
  auto r = find_kernel_data_root(std::string(KZOO_SOURCE_DIR) + "/catalog/kernel_data");
  ASSERT_TRUE(r) << r.error().message;
}

}  // namespace
}  // namespace kzoo::package
