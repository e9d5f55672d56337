// The submission's page gives per case what the API gives: the shape, the %
// of the roofline, the speed-ups over the incumbent and over eager, the top
// kernels and, on a failure, the errors with the worst element -- escaped,
// since kernel names and messages come from the submission's own process.
#include "kzoo/server/pages.hpp"

#include <gtest/gtest.h>

namespace kzoo::server {
namespace {

using nlohmann::json;

json submission_with(json cases) {
  return {{"id", 7},          {"kernel_id", "cpu/k"},   {"submitter_id", "ann"}, {"summary", "fused"},
          {"state", "rejected"}, {"verdict", {{"cases", std::move(cases)}}}, {"reasons", json::array({"slow"})},
          {"accepted_commit", ""}, {"created_at", "2026-12-01T00:00:00Z"}, {"route", ""}, {"kind", "submission"},
          {"jobs", json::array()},  {"pull", false}};
}

TEST(SubmissionPage, EachCaseShowsItsShapeRooflineSpeedUpsAndTopKernels) {
  json ok = {{"test_case_id", "c0"}, {"status", "ok"}, {"correct", true}, {"metrics", {{"GB/s", 812.0}}},
             {"speedup", 1.25},
             {"feedback",
              {{"shape", "workload rows at M=4096"},
               {"roofline_pct", 64.25},
               {"speedup_over_eager", 2.5},
               {"top_kernels", json::array({{{"name", "<script>k</script>"}, {"count", 2}, {"time_us", 12.5}, {"share", 0.9}}})}}}};
  const std::string html = render_submission_page(submission_with(json::array({ok})));
  EXPECT_NE(html.find("workload rows at M=4096"), std::string::npos);
  EXPECT_NE(html.find(">64.2<"), std::string::npos) << "the % of the roofline";
  EXPECT_NE(html.find(">1.2500<"), std::string::npos) << "over the incumbent";
  EXPECT_NE(html.find(">2.500<"), std::string::npos) << "over eager";
  EXPECT_NE(html.find("&lt;script&gt;k&lt;/script&gt; ×2.0 12.5 µs (90%)"), std::string::npos) << html;
  EXPECT_EQ(html.find("<script>k"), std::string::npos) << "a kernel's name is the submission's text: escaped";
}

TEST(SubmissionPage, AFailedCaseShowsItsErrorsAndWorstElement) {
  json bad = {{"test_case_id", "c1"}, {"status", "incorrect"}, {"correct", false}, {"metrics", json::object()},
              {"feedback",
               {{"error_abs_max", 3.5},
                {"error_rel", 0.25},
                {"worst", {{"output", "y"}, {"index", {3, 17}}, {"shape", {{"M", 8}}}, {"out", 4.0}, {"expected", 0.5}}}}}};
  const std::string html = render_submission_page(submission_with(json::array({bad})));
  EXPECT_NE(html.find("largest absolute error 3.5, relative 0.25"), std::string::npos) << html;
  EXPECT_NE(html.find("worst element y[3,17] = 4.0 where the reference has 0.5 at shape {&quot;M&quot;:8}"),
            std::string::npos)
      << html;
}

}  // namespace
}  // namespace kzoo::server
