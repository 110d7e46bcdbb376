// The default-model cache is checked, not trusted (issue 22): a valid model placed at the cache
// path that was not fitted from the bundled data is refitted, never labelled the default; the
// cache directory is created 0700.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

fs::path only_model(const fs::path& dir) {
  fs::path found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("model-") && e.path().extension() == ".json") found = e.path();
  return found;
}

TEST(CacheTrust, AModelFromOtherDataAtTheCachePathIsRefitted) {
  TempDir dir("cache-trust");
  const testing::EnvVars env = {{"XDG_CACHE_HOME", (dir.path() / "xdg").string()}};
  const std::string trace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";
  auto r = run_cli({"predict", trace, "--gpus", "t4", "--json"}, env, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path cache = dir.path() / "xdg" / "epochcast";
  struct stat st {};
  ASSERT_EQ(::stat(cache.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const fs::path file = only_model(cache);
  ASSERT_FALSE(file.empty());

  // Another valid model at the same path: fitted (say) from other data.
  nlohmann::json model = nlohmann::json::parse(testing::read_file(file.string()));
  const std::string real = model["training"]["data_fingerprint"];
  const std::string fake = "fnv1a64:0123456789abcdef";
  ASSERT_NE(real, fake);
  model["training"]["data_fingerprint"] = fake;
  std::ofstream(file) << model.dump();

  r = run_cli({"predict", trace, "--gpus", "t4", "--json"}, env, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json after = nlohmann::json::parse(testing::read_file(only_model(cache).string()));
  EXPECT_EQ(after["training"]["data_fingerprint"], real) << "the foreign model was used, not refitted";
  for (const auto& e : fs::directory_iterator(cache))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "temporary left: " << e.path();
}

}  // namespace
}  // namespace epochcast
