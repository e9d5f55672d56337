// The docs generator: tables from schemas, and the committed page kept fresh.
#include "kzoo/format/schema_docs.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "kzoo/format/json_schema.hpp"

namespace kzoo::format {
namespace {

using ojson = nlohmann::ordered_json;

const FieldRow* row(const std::vector<FieldRow>& rows, const std::string& field) {
  for (const auto& r : rows) {
    if (r.field == field) return &r;
  }
  return nullptr;
}

TEST(FieldRows, FlattenObjectsArraysMapsAndEnumsInSchemaOrder) {
  const ojson schema = ojson::parse(R"({
    "type": "object", "required": ["zeta", "cases"],
    "properties": {
      "zeta": {"type": "string", "description": "First, though it sorts last.", "pattern": "^z$"},
      "category": {"type": "object", "required": ["arch"], "additionalProperties": false,
                   "properties": {"arch": {"type": "string", "description": "Arch."}}},
      "cases": {"type": "array", "minItems": 1,
                "items": {"type": "object", "required": ["id"], "properties": {
                  "id": {"type": "string"},
                  "status": {"enum": ["ok", "error"]},
                  "metrics": {"type": "object", "additionalProperties": {"type": "number"}}}}},
      "shape": {"type": "array", "items": {"type": ["string", "integer"]}},
      "spec": {"$ref": "#/$defs/spec"}
    },
    "$defs": {"spec": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}}})");
  const auto rows = field_rows(schema);
  std::vector<std::string> fields;
  for (const auto& r : rows) fields.push_back(r.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"zeta", "category", "category.arch", "cases", "cases[].id",
                                              "cases[].status", "cases[].metrics", "shape", "spec"}));
  EXPECT_TRUE(row(rows, "zeta")->required);
  EXPECT_EQ(row(rows, "zeta")->description, "First, though it sorts last. Pattern `^z$`.");
  EXPECT_FALSE(row(rows, "category")->required);
  EXPECT_TRUE(row(rows, "category.arch")->required);
  EXPECT_EQ(row(rows, "category")->description, "No other fields.");
  EXPECT_EQ(row(rows, "cases")->type, "array of object");
  EXPECT_EQ(row(rows, "cases")->description, "At least 1 item.");
  EXPECT_EQ(row(rows, "cases[].status")->type, "enum: ok error");
  EXPECT_EQ(row(rows, "cases[].metrics")->type, "map of name to number");
  EXPECT_EQ(row(rows, "shape")->type, "array of string or integer");
  EXPECT_EQ(row(rows, "spec")->type, "spec");
  const auto defs = definition_rows(schema, "spec");
  ASSERT_EQ(defs.size(), 1u);
  EXPECT_EQ(defs[0].field, "n");
  EXPECT_EQ(defs[0].description, "Minimum 1.");
}

std::string render_bundled() {
  auto doc = render_formats_doc(embedded_schemas());
  EXPECT_TRUE(doc.has_value()) << doc.error().message;
  return doc ? *doc : "";
}

TEST(RenderFormatsDoc, HasASectionAndTablePerFormat) {
  const std::string doc = render_bundled();
  for (const char* file : {"desc", "bench_result", "test_case_meta", "benchmark_output", "submission_envelope",
                           "kernel_package_meta", "task"}) {
    EXPECT_NE(doc.find(std::string("Source: `schemas/") + file + ".schema.json`"), std::string::npos) << file;
  }
  EXPECT_NE(doc.find("| Field | Type | Required | Description |"), std::string::npos);
  EXPECT_NE(doc.find("| `category.arch` | string | ✓ |"), std::string::npos);
  EXPECT_NE(doc.find("| `cases[].test_case_id` | string | ✓ |"), std::string::npos);
  EXPECT_NE(doc.find("| `status` | enum: normal frozen deprecated |  |"), std::string::npos);
  EXPECT_NE(doc.find("### tensorSpec"), std::string::npos);
  EXPECT_NE(doc.find("draft 7"), std::string::npos);  // the dialect note
  // Formats follow the data's path: desc before bench_result before task.
  EXPECT_LT(doc.find("## desc.yaml"), doc.find("## bench_result.yaml"));
  EXPECT_LT(doc.find("## bench_result.yaml"), doc.find("## KBench task"));
  // A table cell never breaks the table.
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    int cells = 0;
    for (std::size_t i = 0; i < line.size(); ++i) cells += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_EQ(cells, 5) << line;
  }
}

TEST(RenderFormatsDoc, EveryPropertyOfKzoosOwnSchemasIsDescribed) {
  // task.schema.json is the KBench seed verbatim; the others are kzoo's.
  for (const auto& name : SchemaSet::bundled().names()) {
    if (name == "task") continue;
    for (const auto& file : embedded_schemas()) {
      if (file.name != name + ".schema.json") continue;
      for (const auto& r : field_rows(ojson::parse(file.content))) {
        EXPECT_FALSE(r.description.empty()) << name << ": " << r.field;
        EXPECT_NE(r.description.rfind("Pattern", 0), 0u) << name << ": " << r.field << " has only constraints";
      }
    }
  }
}

TEST(RenderFormatsDoc, RefusesASchemaThatIsNotJson) {
  const EmbeddedFile bad[] = {{"broken.schema.json", "{not json"}};
  auto doc = render_formats_doc(bad);
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().message.find("broken.schema.json"), std::string::npos);
}

TEST(RenderFormatsDoc, TheCommittedPageIsCurrent) {
  std::ifstream in(std::string(KZOO_SOURCE_DIR) + "/docs/formats.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/formats.md missing: run build/kzoo docs -o docs/formats.md";
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), render_bundled()) << "docs/formats.md is stale: run build/kzoo docs -o docs/formats.md";
}

int run(const std::string& args) {
  int status = std::system((std::string(KZOO_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(KzooDocs, WritesAndChecksThePage) {
  const std::string dir = ::testing::TempDir();
  const std::string page = dir + "/formats.md";
  ASSERT_EQ(run("docs -o " + page), 0);
  EXPECT_EQ(run("docs --check " + page), 0);
  {
    std::ofstream out(page, std::ios::app);
    out << "hand edit\n";
  }
  EXPECT_EQ(run("docs --check " + page), 1);
  EXPECT_EQ(run("docs --check " + dir + "/does-not-exist.md"), 2);
  // The stale message tells the user the exact command.
  const std::string cmd = std::string(KZOO_BINARY) + " docs --check " + page + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  EXPECT_NE(out.find("is stale: run `build/kzoo docs -o "), std::string::npos) << out;
}

}  // namespace
}  // namespace kzoo::format
