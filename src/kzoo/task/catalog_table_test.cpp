#include "kzoo/task/catalog_table.hpp"

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::task {
namespace {

using ::testing::HasSubstr;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

DeviceClass h200() {
  auto d = load_device_class(default_device_classes_path(), "h200");
  EXPECT_TRUE(d);
  return *d;
}

// The table docs/TASKS.md shows is the one the catalog gives now: a task
// added, recalibrated or re-tiered without `kzoo task table --update` fails here.
TEST(CatalogTable, DocsTasksMdIsCurrent) {
  const std::string doc_path = std::string(KZOO_SOURCE_DIR) + "/docs/TASKS.md";
  const std::string doc = slurp(doc_path);
  auto table = render_catalog_table(std::string(KZOO_SOURCE_DIR) + "/catalog", h200());
  ASSERT_TRUE(table) << table.error().message;
  auto regenerated = replace_catalog_table(doc, *table, doc_path);
  ASSERT_TRUE(regenerated) << regenerated.error().message;
  EXPECT_EQ(*regenerated, doc) << "docs/TASKS.md's catalog table is stale: run `build/kzoo task table --update docs/TASKS.md`";
}

TEST(CatalogTable, EveryTaskIsARowWithItsEagerPackageAndRoofline) {
  auto table = render_catalog_table(std::string(KZOO_SOURCE_DIR) + "/catalog", h200());
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_THAT(*table, HasSubstr("| `softmax` | GB/s, `2*R*C*2` | relative-frobenius | T2 | 447 µs | "
                                "`h200/norm/softmax/bf16/softmax_eager` |"));
  EXPECT_THAT(*table, HasSubstr("rowwise, row_pass 0.99"));
  EXPECT_THAT(*table, HasSubstr("(workload `captured`)"));
  EXPECT_THAT(*table, HasSubstr("in place: query, key"));
}

TEST(CatalogTable, MissingMarkersAreNamedWithTheLinesToAdd) {
  auto r = replace_catalog_table("# no table here\n", "| x |\n", "docs/TASKS.md");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("docs/TASKS.md has no catalog table markers"));
  EXPECT_THAT(r.error().message, HasSubstr(std::string(kTableEnd)));
  std::string doc = std::string("a\n") + std::string(kTableBegin) + "\nold\n" + std::string(kTableEnd) + "\nb\n";
  auto ok = replace_catalog_table(doc, "new\n", "d");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, std::string("a\n") + std::string(kTableBegin) + "\nnew\n" + std::string(kTableEnd) + "\nb\n");
}

}  // namespace
}  // namespace kzoo::task
