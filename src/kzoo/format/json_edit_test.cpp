#include "kzoo/format/json_edit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::format {
namespace {

using nlohmann::json;

const char* kTask = R"({
  "name": "t",
  "grading": {
    "metric": "GB/s",
    "tolerance": {
      "value": 1e-5,
      "comparator": "relative-frobenius",
      "measured_floor_E": 3.1e-08
    }
  },
  "workloads": {"w": {"graded": [[1, 2], [3, 4]]}}
}
)";

TEST(JsonEdit, AnExistingValueIsReplacedAndNothingElseMoves) {
  auto out = set_json_member(kTask, {"grading", "tolerance"}, "measured_floor_E", 4.5e-07, "task.json");
  ASSERT_TRUE(out) << out.error().message;
  std::string expected = kTask;
  expected.replace(expected.find("3.1e-08"), 7, "4.5e-07");
  EXPECT_EQ(*out, expected);
}

TEST(JsonEdit, AnAbsentKeyGoesAfterTheLastMemberWithItsIndentation) {
  auto out = set_json_member(kTask, {"grading", "tolerance"}, "basis", "4 seeds", "task.json");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_THAT(*out, ::testing::HasSubstr("\"measured_floor_E\": 3.1e-08,\n      \"basis\": \"4 seeds\"\n    }"));
  EXPECT_EQ(json::parse(*out)["grading"]["tolerance"]["basis"], "4 seeds");
  EXPECT_EQ(json::parse(*out)["grading"]["tolerance"]["value"], 1e-5);  // the spelling "1e-5" is kept too
  EXPECT_THAT(*out, ::testing::HasSubstr("\"value\": 1e-5,"));
}

TEST(JsonEdit, InlineObjectsStayInline) {
  auto out = set_json_member(kTask, {"workloads", "w"}, "roofline_us", 300, "task.json");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_THAT(*out, ::testing::HasSubstr(R"("w": {"graded": [[1, 2], [3, 4]], "roofline_us": 300})"));
  auto empty = set_json_member(R"({"a": {}})", {"a"}, "b", true, "x.json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, R"({"a": {"b": true}})");
}

TEST(JsonEdit, KeysWithEscapesAndStringsHoldingBracesAreFound) {
  const char* text = R"({"s": "a } { \" ]", "k\"ey": {"x": 1}})";
  auto out = set_json_member(text, {"k\"ey"}, "x", 2, "x.json");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, R"({"s": "a } { \" ]", "k\"ey": {"x": 2}})");
}

TEST(JsonEdit, MalformedTextOrAPathThatIsNotAnObjectIsRefusedNamingTheFile) {
  auto bad = set_json_member(R"({"a": 1,})", {}, "b", 1, "task.json");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("task.json"));
  auto not_object = set_json_member(kTask, {"name"}, "x", 1, "task.json");
  ASSERT_FALSE(not_object);
  EXPECT_THAT(not_object.error().message, ::testing::HasSubstr("/name is not an object"));
  auto missing = set_json_member(kTask, {"grading", "nope"}, "x", 1, "task.json");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, ::testing::HasSubstr("/grading/nope"));
}

}  // namespace
}  // namespace kzoo::format
