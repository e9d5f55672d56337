// The seed's desc.yaml `status`, enforced on a real server: a frozen kernel
// refuses submissions (409 naming the status and who may change it, nothing
// recorded); a deprecated one takes them and is marked where kernels are
// listed.
#include <filesystem>

#include <gtest/gtest.h>

#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
namespace fs = std::filesystem;

const std::string kFrozen = "hopper/norm/softmax/fp32/frozen";
const std::string kDeprecated = "hopper/norm/softmax/fp32/old";

class KernelStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path root = tmp_.path() / "catalog";
    write_catalog(root);
    for (const auto& [id, status] : {std::pair{kFrozen, "frozen"}, std::pair{kDeprecated, "deprecated"}})
      for (auto [path, content] : package_files(id)) {
        if (path == ".kernel_package/desc.yaml") content += std::string("status: ") + status + "\n";
        write_file(root / id / path, content);
      }
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp_ / "data";
    cfg.catalog = root;
    cfg.listen_port = 0;
    cfg.threads = 2;
    svc_ = std::make_unique<RunningService>(cfg);
    token_ = make_token(tmp_ / "data");
  }

  Answer submit(const std::string& kernel_id) {
    auto tgz = package::package_tarball_bytes(tree_of(package_files(kernel_id)), kernel_id);
    EXPECT_TRUE(tgz);
    auto a = upload_submission(svc_->url(),
                               {{"kernel_id", kernel_id}, {"package_filename", "k.tar.gz"}, {"optimization_summary", "x"}},
                               *tgz, "k.tar.gz", {}, 120, token_);
    EXPECT_TRUE(a) << a.error().message;
    return a ? *a : Answer{};
  }

  std::size_t submissions() {
    auto db = store::open_state(store::default_state_url(tmp_ / "data"));
    store::SubmissionFilter f;
    return (*db)->list_submissions(f)->size();
  }

  TempDir tmp_;
  std::unique_ptr<RunningService> svc_;
  std::string token_;
};

TEST_F(KernelStatusTest, AFrozenKernelRefusesSubmissionsNamingItsStatusAndWhoMayChangeIt) {
  auto a = submit(kFrozen);
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["error"]["code"], "kernel_frozen");
  EXPECT_EQ(a.body["error"]["field"], "kernel_id");
  const std::string msg = a.body["error"]["message"];
  EXPECT_NE(msg.find("status: frozen"), std::string::npos) << msg;
  EXPECT_NE(msg.find("maintainer"), std::string::npos) << msg;
  EXPECT_EQ(submissions(), 0u) << "a refused request records nothing";
  std::size_t uploads = 0;
  for (const auto& e : fs::directory_iterator(tmp_.path() / "data/uploads")) uploads += !e.path().filename().string().empty();
  EXPECT_EQ(uploads, 0u) << "its bytes are not kept";
}

TEST_F(KernelStatusTest, ADeprecatedKernelTakesSubmissionsAndIsMarkedWhereKernelsAreListed) {
  EXPECT_EQ(submit(kDeprecated).status, 202);
  EXPECT_EQ(submit(kKernelId).status, 202);
  auto k = http_get(svc_->url(), "/api/kernels");
  ASSERT_TRUE(k && k->status == 200);
  std::map<std::string, nlohmann::json> status;
  for (const auto& x : k->body["kernels"]) status[x["kernel_id"]] = x["status"];
  EXPECT_EQ(status[kDeprecated], "deprecated");
  EXPECT_EQ(status[kFrozen], "frozen");
  EXPECT_TRUE(status[kKernelId].is_null()) << "a kernel that declares no status is normal";
}

}  // namespace
}  // namespace kzoo::server
