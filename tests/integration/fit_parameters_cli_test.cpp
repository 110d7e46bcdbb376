// The fit's settings through the CLI: flags made from the one table (fit_parameters.hpp), their
// ranges worded as flags, and docs/parameters.md as the build prints it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.hpp"

namespace {

using ::testing::HasSubstr;
using epochcast::testing::run_cli;

// Regenerate after changing the table: build/epochcast fit --help-parameters > docs/parameters.md
TEST(ParametersDoc, CommittedDocIsWhatTheBuildPrints) {
  std::ifstream in(EPOCHCAST_SOURCE_DIR "/docs/parameters.md");
  ASSERT_TRUE(in) << "docs/parameters.md is missing";
  std::stringstream committed;
  committed << in.rdbuf();
  const auto r = run_cli("fit --help-parameters");  // -o is not needed to ask
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, committed.str()) << "docs/parameters.md differs from `epochcast fit --help-parameters`";
  EXPECT_THAT(r.out, HasSubstr("| `xgb_rounds` | `--xgb-rounds N` | integer | 50 |"));
}

// A value outside a parameter's range is refused before any fitting, named by its flag.
TEST(FitParametersCli, OutOfRangeValuesAreRefusedByFlag) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"fit -o /tmp/never.json --xgb-rounds 0", "--xgb-rounds must be a whole number from 1 to 2000, got '0'"},
      {"fit -o /tmp/never.json --trees 2.5", "--trees must be a whole number from 1 to 1000, got '2.5'"},
      {"eval --xgb-eta 5", "--xgb-eta must be a number from 0.001 to 1, got '5'"},
      {"eval --interval-level nan", "--interval-level must be a number from 0.5 to 0.99"},
      {"eval --knn-k -3", "--knn-k: must not be negative, got -3"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args + " 2>&1");
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.says)) << c.args;
  }
}

// A flag's value reaches the model file, presets first and a flag after them wins.
TEST(FitParametersCli, FlagsReachTheModelFile) {
  const std::string path = "/tmp/epochcast_fit_parameters_" + std::to_string(::getpid()) + ".json";
  const auto r = run_cli("fit -o " + path + " --linear-ridge --xgb-rounds 7 --trees 5 --knn-k 3 --no-gpu-folds --seed 9 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(path);
  const nlohmann::json m = nlohmann::json::parse(in);
  std::remove(path.c_str());
  const auto& o = m.at("options");
  EXPECT_EQ(o.at("xgb_rounds"), 7);       // after the preset's 150
  EXPECT_EQ(o.at("xgb_eta"), 0.1);        // the preset's
  EXPECT_EQ(o.at("kernel_ridge"), false);  // the preset's
  EXPECT_EQ(o.at("trees"), 5);
  EXPECT_EQ(o.at("knn_k"), 3);
  EXPECT_EQ(o.at("meta_gpu_folds"), false);
  EXPECT_EQ(o.at("seed"), 9);
}

}  // namespace
