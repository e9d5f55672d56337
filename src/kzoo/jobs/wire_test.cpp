// The runner API's JSON (wire.hpp): what one side writes the other reads back
// unchanged, and what a hostile or broken peer sends is refused naming the
// field.
#include "kzoo/jobs/wire.hpp"

#include <gtest/gtest.h>

namespace kzoo::jobs {
namespace {

using nlohmann::json;

TEST(Wire, AJobCrossesUnchanged) {
  store::Job j;
  j.id = 7;
  j.submission_id = 3;
  j.state = store::State::running;
  j.attempts = 2;
  j.max_attempts = 3;
  j.lease_owner = "abcd/node-1";
  j.lease_expires_at = 1'700'000'060'000;
  j.created_at = 1'700'000'000'000;
  j.started_at = 1'700'000'001'000;
  j.held = false;
  store::Job back = job_from_json(job_to_json(j));
  EXPECT_EQ(back.id, 7);
  EXPECT_EQ(back.submission_id, 3);
  EXPECT_EQ(back.state, store::State::running);
  EXPECT_EQ(back.attempts, 2);
  EXPECT_EQ(back.lease_owner, "abcd/node-1");
  EXPECT_EQ(back.lease_expires_at, j.lease_expires_at);
  EXPECT_EQ(back.started_at, j.started_at);
  EXPECT_FALSE(back.finished_at);
}

TEST(Wire, ACompletionCrossesUnchangedAndABadOneIsRefusedByField) {
  store::Completion c{store::Outcome::accepted, {{"x", 1}}, {{"accept", true}}, {"faster"}, std::string(40, 'a')};
  auto back = completion_from_json(completion_to_json(c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->outcome, store::Outcome::accepted);
  EXPECT_EQ(back->accepted_commit, c.accepted_commit);
  EXPECT_EQ(back->reasons, c.reasons);
  EXPECT_EQ(back->result["x"], 1);
  auto bad_outcome = completion_from_json({{"outcome", "merged"}});
  ASSERT_FALSE(bad_outcome);
  EXPECT_NE(bad_outcome.error().message.find("outcome"), std::string::npos);
  auto bad_reasons = completion_from_json({{"outcome", "rejected"}, {"reasons", {1, 2}}});
  ASSERT_FALSE(bad_reasons);
  EXPECT_NE(bad_reasons.error().message.find("reasons"), std::string::npos);
  EXPECT_FALSE(completion_from_json(json::array()));
}

TEST(Wire, ATreeCrossesByteForByteAndEscapingPathsAreRefused) {
  package::PackageTree t;
  t.files.push_back({"src/kernel.py", std::string("binary\0\xff bytes", 14), false});
  t.files.push_back({"src/run.sh", "#!/bin/sh\n", true});
  auto back = tree_from_json(tree_to_json(t));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->files.size(), 2u);
  EXPECT_EQ(back->files[0].content, t.files[0].content);
  EXPECT_TRUE(back->files[1].executable);
  EXPECT_EQ(back->dirs, std::vector<std::string>{"src"});
  for (const json& bad : {json{{{"path", "../x"}, {"base64", ""}}}, json{{{"path", "/etc/passwd"}, {"base64", ""}}},
                          json{{{"path", "a"}, {"base64", "!!!"}}}, json{{{"path", "a"}}}, json::object()})
    EXPECT_FALSE(tree_from_json(bad)) << bad.dump();
}

TEST(Wire, ABoardContextNamesOnlyMainOrARoute) {
  BoardContext c;
  c.branch = "routes/ann-fast";
  c.baseline_commit = std::string(40, 'b');
  c.standing = {{"cuda/softmax", 1.25}};
  auto back = board_context_from_json(board_context_to_json(c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->branch, "routes/ann-fast");
  EXPECT_FALSE(back->rules);
  EXPECT_EQ(back->standing.at("cuda/softmax"), 1.25);
  json j = board_context_to_json(c);
  j["branch"] = "refs/heads/main";
  auto refused = board_context_from_json(j);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("branch"), std::string::npos);
}

}  // namespace
}  // namespace kzoo::jobs
