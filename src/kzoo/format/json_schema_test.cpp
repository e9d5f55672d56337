// SchemaSet: the bundled schemas accept good documents, and every keyword
// they use rejects a document that breaks it, with a violation that names the
// value and what is expected.
#include "kzoo/format/json_schema.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <thread>

#include "kzoo/format/schema_audit.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;

// One valid document per bundled schema.
json valid(const std::string& name) {
  if (name == "desc") {
    return json::parse(R"({
      "schema_version": "1", "name": "rmsnorm_residual",
      "category": {"arch": "any", "op_class": "norm", "sub_class": "rmsnorm", "quant": "bf16"},
      "summary": "x + residual, then RMSNorm, in place",
      "description": "Adds the residual and normalises each row.",
      "io_signature": [{"name": "x", "direction": "inout", "dtype": "bfloat16", "shape": ["M", 4096]}],
      "quantization": {"scheme": "none", "granularity": "per_block", "block_size": 128},
      "reference_sources": [{"kind": "task", "ref": "rmsnorm-residual"}],
      "status": "normal", "tags": ["norm"], "owner": "kzoo"})");
  }
  if (name == "bench_result") {
    return json::parse(R"({"schema_version": "1", "kernel_id": "any/norm/rmsnorm/bf16/eager",
      "cases": [{"test_case_id": "m4096", "metrics_best": {"GB/s": 1500.5}, "metrics_current": {"GB/s": 1400},
                 "best_commit": "0123456789abcdef0123456789abcdef01234567", "updated_at": "2026-01-31T12:00:00Z"}]})");
  }
  if (name == "test_case_meta") {
    return json::parse(R"({"test_case_id": "m4096", "params": {"workload": "synthetic", "shape": {"M": 4096}},
      "primary_metric": "GB/s", "metrics": [{"name": "GB/s", "unit": "GB/s", "direction": "higher"}],
      "tolerance": {"correctness_atol": 0.001, "correctness_rtol": 0}})");
  }
  if (name == "benchmark_output") {
    return json::parse(R"({"schema_version": "1", "kernel_id": "a/b", "ran_at": "2026-01-31T12:00:00.5+01:00",
      "runner_id": "gpu-1", "arch": "sm_90", "overall": {"accept": false, "accept_reason": "case m2 failed", "build_ok": true},
      "cases": [{"test_case_id": "m1", "status": "ok", "correct": true, "error_rel": 0.001, "error_abs_max": 0.01,
                 "metrics": {"GB/s": 1500.0}, "samples": 100, "spread": 0.02, "gates": {}, "message": null},
                {"test_case_id": "m2", "status": "error", "correct": null, "error_rel": null, "error_abs_max": null,
                 "metrics": {"GB/s": null}, "samples": null, "spread": null, "gates": {}, "message": "raised"}]})");
  }
  if (name == "submission_envelope") {
    return json::parse(R"({"kernel_id": "a/b", "submitter_id": "alice@example",
      "package_filename": "b.tar.gz", "optimization_summary": "vectorised loads"})");
  }
  if (name == "kernel_package_meta") {
    return json::parse(R"({"path": "pkg", "has_dot_kernel_package": true,
      "required_files_present": [".kernel_package/desc.yaml"], "required_files_missing": [],
      "kernel_id": "a/b", "violations": [{"path": "pkg/x", "pointer": "/a", "rule": "schema.type", "detail": "d"},
                                         {"path": "pkg/y", "rule": "tar.symlink", "detail": "d"}]})");
  }
  if (name == "task") {
    return json::parse(R"({"name": "rmsnorm-residual", "family": "Normalisation",
      "difficulty": {"tier": "T1"},
      "definition": {"entry_point": "run",
        "inputs": [{"name": "x", "shape": ["M", "N"], "dtype": "bfloat16"}],
        "outputs": [{"name": "y", "shape": ["M", "N"], "dtype": "bfloat16"}],
        "reference": {"language": "python/pytorch", "source": "def run(x): return x"}},
      "workloads": {"synthetic": {"dims": ["M", "N"], "graded": [[4096, 8192]], "correctness": [[3, 5], [1, true, [1, 2], 0.5]]}},
      "grading": {"metric": "GB/s", "reward": {"kind": "absolute-uncapped", "canonical_work": "2*M*N"},
                  "tolerance": {"value": 0.01, "comparator": "relative-frobenius"}},
      "environment": {"gpus": 1}})");
  }
  if (name == "export_result") {
    return json::parse(R"({"schema_version": "1", "kernel_id": "h200/norm/softmax/bf16/k", "task": "softmax",
      "test_case_id": "b", "params": {"workload": "rows", "shape": {"M": 4096}}, "shape": "workload rows at M=4096",
      "device_class": "h200", "metric": "GB/s", "direction": "higher", "value": 3100.5, "time_us": 412.0,
      "roofline_us": 280.1, "roofline_pct": 68.0, "speedup_over_incumbent": 1.1, "speedup_over_eager": 2.4,
      "status": "ok", "correct": true, "error_rel": 1e-6, "error_abs_max": 2e-3, "verdict": "accepted",
      "commit": "0123456789abcdef0123456789abcdef01234567", "evidence_commit": null, "rules_version": 2,
      "rules_commit": null, "software": {"torch": "2.11.0"}, "submission_id": 3, "job_id": 4, "submitter_id": "ann",
      "route": null, "kind": "submission", "graded_at": "2026-12-01T00:00:00Z"})");
  }
  if (name == "board_metrics") {
    return json::parse(R"({"score": 1.5, "cost": 12.25, "subtasks": [
      {"id": "a/b", "speedup": 2.25, "metric": 10.5, "correct": true},
      {"id": "a/c", "speedup": null, "metric": null, "correct": false}]})");
  }
  if (name == "scienceslack") {
    return json::parse(R"({"schema_version": "1", "benchmark": {
      "id": "kernelbench-operators", "title": "KernelBench operators", "task": "GPU kernel optimization",
      "metric": {"name": "speed-up", "direction": "higher"}, "baseline": {"name": "PyTorch eager", "value": 1},
      "kernels": ["a/b", "a/c"], "version": 2, "status": "active", "started": "2026-11-01", "adopt": "auto",
      "maintainers": ["alice@example"],
      "guardrails": {"prose": ["Correct on fresh inputs."], "atol": null, "rtol": 0.01, "inputs": 3,
                     "timed_runs": 100, "warmup": 10, "device_class": "h200", "runner": "the H200 runner"},
      "checks": [{"name": "verify", "script": ".kernel_package/benchmark.py", "metrics": "metrics.json",
                  "partition": "main"}],
      "partitions": [{"name": "main", "time_limit": "01:00:00", "default_time": "00:10:00", "cpus": 4,
                      "memory_mb": 8192, "gpus": 1}]}})");
  }
  throw std::invalid_argument(name);
}

const SchemaSet& schemas() { return SchemaSet::bundled(); }

TEST(SchemaSet, BundlesEveryFormat) {
  EXPECT_EQ(schemas().names(),
            (std::vector<std::string>{"bench_result", "benchmark_output", "board_metrics", "desc", "export_result",
                                      "kernel_package_meta", "scienceslack", "submission_envelope", "task",
                                      "test_case_meta"}));
  EXPECT_EQ(schemas().schema("task")["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_THROW(schemas().validate(json::object(), "nope", "x"), std::out_of_range);
}

TEST(SchemaSet, AcceptsTheValidExamples) {
  for (const auto& name : schemas().names()) {
    const Violations vs = schemas().validate(valid(name), name, name + ".json");
    EXPECT_TRUE(vs.empty()) << name << ": " << (vs.empty() ? "" : to_string(vs[0]));
  }
}

// A change to a valid document, and the one violation it must cause.
struct Breakage {
  std::string schema;
  std::string pointer;  // where to change the valid example
  std::function<void(json&)> change;
  std::string rule;
  std::string want_pointer;  // of the violation
  std::vector<std::string> detail_has;
};

json::json_pointer jp(const std::string& p) { return json::json_pointer(p); }

std::function<void(json&)> set(const std::string& p, json v) {
  return [p, v](json& d) { d[jp(p)] = v; };
}
std::function<void(json&)> erase(const std::string& p) {
  return [p](json& d) {
    auto ptr = jp(p);
    d[ptr.parent_pointer()].erase(ptr.back());
  };
}

const std::vector<Breakage>& breakages() {
  static const std::vector<Breakage> all = {
      // required, at the top and inside $defs reached through $ref
      {"desc", "/name", erase("/name"), "schema.required", "", {"\"name\"", "Operator name"}},
      {"task", "/definition/inputs/0/dtype", erase("/definition/inputs/0/dtype"), "schema.required",
       "/definition/inputs/0", {"\"dtype\""}},
      {"test_case_meta", "/tolerance/correctness_rtol", erase("/tolerance/correctness_rtol"), "schema.required",
       "/tolerance", {"\"correctness_rtol\""}},
      // type, single and multiple
      {"desc", "/summary", set("/summary", 5), "schema.type", "/summary", {"integer 5", "expected string"}},
      {"benchmark_output", "/cases/0/samples", set("/cases/0/samples", 1.5), "schema.type", "/cases/0/samples",
       {"number 1.5", "integer", "null"}},
      {"task", "/workloads/synthetic/graded/0/0", set("/workloads/synthetic/graded/0/0", "big"), "schema.type",
       "/workloads/synthetic/graded/0/0", {"\"big\""}},
      // enum (with and without type), const
      {"desc", "/status", set("/status", "retired"), "schema.enum", "/status",
       {"\"retired\"", "normal, frozen, deprecated"}},
      {"desc", "/io_signature/0/dtype", set("/io_signature/0/dtype", "fp32"), "schema.enum", "/io_signature/0/dtype",
       {"\"fp32\"", "float32"}},
      {"task", "/difficulty/tier", set("/difficulty/tier", "T5"), "schema.enum", "/difficulty/tier", {"\"T5\""}},
      {"task", "/definition/reference/language", set("/definition/reference/language", "cuda"), "schema.const",
       "/definition/reference/language", {"\"cuda\"", "\"python/pytorch\""}},
      // pattern
      {"task", "/name", set("/name", "Bad_Name"), "schema.pattern", "/name",
       {"\"Bad_Name\"", "^[a-z0-9]+(-[a-z0-9]+)*$"}},
      {"submission_envelope", "/submitter_id", set("/submitter_id", "alice smith"), "schema.pattern",
       "/submitter_id", {"\"alice smith\""}},
      {"submission_envelope", "/package_filename", set("/package_filename", "b.zip"), "schema.pattern",
       "/package_filename", {"\"b.zip\"", ".tar"}},
      {"bench_result", "/cases/0/updated_at", set("/cases/0/updated_at", "yesterday"), "schema.pattern",
       "/cases/0/updated_at", {"\"yesterday\""}},
      // minimum
      {"test_case_meta", "/tolerance/correctness_atol", set("/tolerance/correctness_atol", -1e-3),
       "schema.minimum", "/tolerance/correctness_atol", {"-0.001", ">= 0"}},
      {"task", "/environment/gpus", set("/environment/gpus", 0), "schema.minimum", "/environment/gpus", {">= 1"}},
      // maximum
      {"scienceslack", "/benchmark/version", set("/benchmark/version", 1000001), "schema.maximum",
       "/benchmark/version", {"1000001", "<= 1000000"}},
      {"board_metrics", "/subtasks/0/speedup", set("/subtasks/0/speedup", -2), "schema.minimum",
       "/subtasks/0/speedup", {"-2", ">= 0"}},
      // maxItems, uniqueItems
      {"board_metrics", "/subtasks", set("/subtasks", json(1025, json{{"id", "a/b"}, {"speedup", 1}, {"metric", 1}, {"correct", true}})),
       "schema.maxItems", "/subtasks",
       {"1025 items", "at most 1024"}},
      {"scienceslack", "/benchmark/kernels", set("/benchmark/kernels", json::array({"a/b", "a/c", "a/b"})),
       "schema.uniqueItems", "/benchmark/kernels", {"a/b"}},
      // minLength, maxLength
      {"desc", "/summary", set("/summary", ""), "schema.minLength", "/summary", {"0 characters", "at least 1"}},
      {"submission_envelope", "/optimization_summary", set("/optimization_summary", std::string(4001, 'x')),
       "schema.maxLength", "/optimization_summary", {"4001 characters", "at most 4000", "xxx..."}},
      // minItems, minProperties
      {"test_case_meta", "/metrics", set("/metrics", json::array()), "schema.minItems", "/metrics",
       {"0 items", "at least 1"}},
      {"task", "/workloads", set("/workloads", json::object()), "schema.minProperties", "/workloads",
       {"0 properties", "at least 1"}},
      // additionalProperties: false (top level, nested, inside $defs) and as a schema
      {"desc", "/nmae", set("/nmae", "typo"), "schema.additionalProperties", "/nmae", {"\"nmae\"", "name"}},
      {"desc", "/category/archh", set("/category/archh", "x"), "schema.additionalProperties", "/category/archh",
       {"\"archh\"", "arch"}},
      {"task", "/definition/inputs/0/stride", set("/definition/inputs/0/stride", 1), "schema.additionalProperties",
       "/definition/inputs/0/stride", {"\"stride\""}},
      {"bench_result", "/cases/0/metrics_best/a~1b~0c", set("/cases/0/metrics_best/a~1b~0c", "fast"), "schema.type",
       "/cases/0/metrics_best/a~1b~0c", {"\"fast\"", "number"}},
      {"task", "/workloads/captured", set("/workloads/captured", json{{"dims", json::array()}, {"correctness", json::array()}}), "schema.required",
       "/workloads/captured", {"\"graded\""}},
      // items via $ref, two levels deep ($defs/workload -> $defs/shape)
      {"task", "/workloads/synthetic/correctness/1", set("/workloads/synthetic/correctness/1", "3x5"),
       "schema.type", "/workloads/synthetic/correctness/1", {"\"3x5\"", "array"}},
  };
  return all;
}

TEST(SchemaSet, EveryBreakageGivesExactlyItsLeafViolation) {
  for (const auto& b : breakages()) {
    json doc = valid(b.schema);
    b.change(doc);
    const Violations vs = schemas().validate(doc, b.schema, b.schema + ".yaml");
    ASSERT_EQ(vs.size(), 1u) << b.schema << " " << b.pointer << ": " << to_json(vs).dump(1);
    const Violation& v = vs[0];
    EXPECT_EQ(v.path, b.schema + ".yaml");
    EXPECT_EQ(v.rule, b.rule) << b.pointer << ": " << to_string(v);
    EXPECT_EQ(v.pointer, b.want_pointer) << to_string(v);
    for (const auto& s : b.detail_has) {
      EXPECT_NE(v.detail.find(s), std::string::npos) << "detail lacks '" << s << "': " << v.detail;
    }
  }
}

// Every validation keyword the bundled schemas use is exercised above, so a
// schema cannot start relying on a keyword nobody has seen reject anything.
TEST(SchemaSet, TheBreakagesCoverEveryKeywordTheSchemasUse) {
  std::set<std::string> used;
  std::function<void(const json&)> walk = [&](const json& node) {
    if (!node.is_object()) return;
    for (const auto& [k, v] : node.items()) {
      used.insert(k);
      if (k == "properties" || k == "$defs") {
        for (const auto& [_, sub] : v.items()) walk(sub);
      } else if (k == "items" || k == "additionalProperties") {
        walk(v);
      }
    }
  };
  for (const auto& name : schemas().names()) walk(schemas().schema(name));
  std::set<std::string> covered = {"$schema", "$id", "title", "description", "default", "properties", "$defs",
                                   "$ref", "items"};  // structure and annotations
  for (const auto& b : breakages()) covered.insert(b.rule.substr(std::string("schema.").size()));
  for (const auto& k : used) EXPECT_TRUE(covered.count(k)) << "keyword without a rejecting test: " << k;
}

TEST(SchemaSet, ReportsEveryViolationNotOnlyTheFirst) {
  json doc = valid("desc");
  doc.erase("summary");
  doc["status"] = "gone";
  doc["io_signature"][0]["direction"] = "sideways";
  doc["io_signature"][0]["shape"] = {"M", 1.5};
  const Violations vs = schemas().validate(doc, "desc", "desc.yaml");
  std::set<std::string> pointers;
  for (const auto& v : vs) pointers.insert(v.pointer + " " + v.rule);
  EXPECT_EQ(pointers, (std::set<std::string>{" schema.required", "/status schema.enum",
                                             "/io_signature/0/direction schema.enum",
                                             "/io_signature/0/shape/1 schema.type"}));
}

TEST(SchemaSet, TruncatesLongValuesInDetails) {
  json doc = valid("desc");
  doc["status"] = std::string(10000, 'z');
  const Violations vs = schemas().validate(doc, "desc", "desc.yaml");
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_LT(vs[0].detail.size(), 300u);
  EXPECT_NE(vs[0].detail.find("zzz..."), std::string::npos);
}

TEST(SchemaSet, LongStringsUnderAPatternAreRefusedWithoutCrashing) {
  // 200 000 characters overflow std::regex's recursion; the guard must report
  // them without ever matching.
  json doc = valid("task");
  doc["name"] = std::string(200000, 'a');
  const Violations vs = schemas().validate(doc, "task", "task.json");
  ASSERT_EQ(vs.size(), 1u) << to_json(vs).dump();
  EXPECT_EQ(vs[0].rule, "schema.pattern");
  EXPECT_EQ(vs[0].pointer, "/name");
  EXPECT_NE(vs[0].detail.find("200000 bytes"), std::string::npos);
  doc = valid("bench_result");
  doc["cases"][0]["test_case_id"] = std::string(200000, 'b');
  EXPECT_TRUE(has_rule(schemas().validate(doc, "bench_result", "b.yaml"), "schema.pattern"));
}

TEST(SchemaSet, IntegersOfEveryRepresentationAreIntegers) {
  json doc = valid("task");
  doc["environment"]["gpus"] = 8u;  // unsigned, as a YAML/JSON reader gives large ones
  EXPECT_TRUE(schemas().validate(doc, "task", "t").empty());
}

TEST(SchemaSet, ValidatesFromManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 50; ++i) {
        json bad = valid("desc");
        bad["category"]["arch"] = "no spaces allowed";
        if (!schemas().validate(valid("desc"), "desc", "d").empty()) ++failures[t];
        if (!has_rule(schemas().validate(bad, "desc", "d"), "schema.pattern")) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ---- what load() refuses ---------------------------------------------------

std::string load_error(const std::string& schema_text) {
  auto r = SchemaSet::load({{"probe", schema_text}});
  EXPECT_FALSE(r.has_value()) << schema_text;
  return r ? "" : r.error().message;
}

TEST(SchemaSetLoad, ParsesDraft07And202012AsDraft7) {
  for (const char* dialect : {"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"}) {
    auto r = SchemaSet::load({{"probe", std::string(R"({"$schema": ")") + dialect +
                                            R"(", "type": "object", "properties": {"n": {"$ref": "#/$defs/n"}},
                                              "$defs": {"n": {"type": "integer", "exclusiveMinimum": 0}}})"}});
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_TRUE(r->validate({{"n", 1}}, "probe", "p").empty());
    // draft-07 meaning: exclusiveMinimum is a number, not draft-04's boolean.
    auto vs = r->validate({{"n", 0}}, "probe", "p");
    ASSERT_EQ(vs.size(), 1u);
    EXPECT_EQ(vs[0].rule, "schema.exclusiveMinimum");
    EXPECT_EQ(vs[0].pointer, "/n");
  }
}

TEST(SchemaSetLoad, RefusesKeywordsValijsonWouldSilentlyIgnore) {
  const char* head = R"({"$schema": "https://json-schema.org/draft/2020-12/schema", )";
  EXPECT_NE(load_error(std::string(head) + R"("type": "array", "prefixItems": [{"type": "string"}]})")
                .find("prefixItems"), std::string::npos);
  EXPECT_NE(load_error(std::string(head) + R"("dependentRequired": {"a": ["b"]}})").find("dependentRequired"),
            std::string::npos);
  EXPECT_NE(load_error(std::string(head) + R"("unevaluatedProperties": false})").find("not-enforced"),
            std::string::npos);
  EXPECT_NE(load_error(std::string(head) + R"("properties": {"a": {"$ref": "#/$defs/x", "minimum": 3}},
                                              "$defs": {"x": {"type": "integer"}}})")
                .find("beside $ref"), std::string::npos);
}

TEST(SchemaSetLoad, RefusesWhatItCannotExplainOrCheck) {
  const std::string head = R"({"$schema": "http://json-schema.org/draft-07/schema#", )";
  EXPECT_NE(load_error(head + R"("anyOf": [{"type": "string"}]})").find("unsupported"), std::string::npos);
  EXPECT_NE(load_error(head + R"("requird": ["a"]})").find("requird"), std::string::npos);  // a typo
  EXPECT_NE(load_error(head + R"("format": "date-time"})").find("format"), std::string::npos);
  EXPECT_NE(load_error(head + R"("properties": {"a": {"$ref": "#/$defs/missing"}}})").find("bad-ref"),
            std::string::npos);
  EXPECT_NE(load_error(head + R"("properties": {"a": {"$ref": "other.json#/x"}}})").find("bad-ref"),
            std::string::npos);
  EXPECT_NE(load_error(head + R"("pattern": "([a-z"})").find("pattern"), std::string::npos);
  EXPECT_NE(load_error(head + R"("type": "text"})").find("unknown type"), std::string::npos);
  EXPECT_NE(load_error(R"({"type": "object"})").find("$schema"), std::string::npos);
  EXPECT_NE(load_error(R"({"$schema": "http://json-schema.org/draft-04/schema#"})").find("draft-04"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"$schema": "http://json-schema.org/draft-07/schema#", "a": 1, "a": 2})")
                .find("json.duplicate-key"), std::string::npos);
}

TEST(SchemaSetLoad, TheBundledSchemasPassTheAudit) {
  for (const auto& name : schemas().names()) {
    EXPECT_TRUE(audit_schema(schemas().schema(name), name).empty()) << name;
  }
}

TEST(SchemaAt, FollowsPropertiesItemsMapsAndRefs) {
  const json& task = schemas().schema("task");
  const json* dtype = schema_at(task, "/definition/inputs/3/dtype");
  ASSERT_NE(dtype, nullptr);
  EXPECT_TRUE(dtype->contains("enum"));
  const json* graded = schema_at(task, "/workloads/any-name/graded/0");
  ASSERT_NE(graded, nullptr);
  EXPECT_EQ((*graded)["type"], "array");
  EXPECT_EQ(schema_at(task, "/no/such/place"), nullptr);
}

}  // namespace
}  // namespace kzoo::format
