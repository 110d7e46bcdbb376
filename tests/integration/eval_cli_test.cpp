// `epochcast eval --predictions` through the built CLI: one CSV row per held-out pair, with the
// stack's and every learner's log ratio, whose scores are eval's own; a path that cannot be
// written fails at once with the io status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

using CliRun = epochcast::testing::CommandResult;
const std::string kDataset = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) out.push_back(cell);
  return out;
}

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("epochcast_eval_cli_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Three CNN models of the bundled dataset keep a test quick (3 lomo fits).
void write_small_dataset(const std::string& data) {
  std::ifstream in(kDataset);
  std::string header, line;
  ASSERT_TRUE(std::getline(in, header));
  const auto cols = split(header);
  const auto model_col = std::find(cols.begin(), cols.end(), "model") - cols.begin();
  ASSERT_LT(model_col, static_cast<long>(cols.size()));
  std::ofstream small(data);
  small << header << "\n";
  while (std::getline(in, line)) {
    const auto c = split(line);
    if (c.size() > static_cast<std::size_t>(model_col) &&
        (c[model_col] == "AlexNet" || c[model_col] == "CIFAR10_CNN" || c[model_col] == "InceptionResNetV2"))
      small << line << "\n";
  }
}

TEST(EvalCli, PredictionsFileListsEveryHeldOutPairWithEvalsOwnScores) {
  const std::string data = temp("data.csv"), out = temp("pred.csv");
  write_small_dataset(data);
  std::string line;
  const CliRun r = epochcast::testing::run_cli("eval --data " + data + " --protocol lomo --json --predictions " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::ifstream pred(out);
  ASSERT_TRUE(std::getline(pred, line));
  EXPECT_EQ(line, "workload,model,source,target,y,stack,xgboost,kernel_ridge,knn,extra_trees");
  std::size_t rows = 0;
  double stack_ape = 0, knn_ape = 0;
  while (std::getline(pred, line)) {
    const auto c = split(line);
    ASSERT_EQ(c.size(), 10u) << line;
    EXPECT_NE(c[2], c[3]);
    const double y = std::stod(c[4]);
    stack_ape += std::abs(std::exp(std::stod(c[5]) - y) - 1) * 100;
    knn_ape += std::abs(std::exp(std::stod(c[8]) - y) - 1) * 100;
    ++rows;
  }
  EXPECT_EQ(rows, j["pairs"].get<std::size_t>());
  EXPECT_GT(rows, 100u);
  EXPECT_NEAR(stack_ape / rows, j["mape_pct"].get<double>(), 1e-6);
  EXPECT_NEAR(knn_ape / rows, j["learners"]["knn"]["mape_pct"].get<double>(), 1e-6);
  std::filesystem::remove(data);
  std::filesystem::remove(out);
}

// A full disk while writing the list: fmt's std::system_error escaped as "internal" (exit 70)
// with "cannot write to file", the file unnamed.
TEST(EvalCli, PredictionsOnAFullDiskIsAnIoErrorNamingTheFile) {
  const std::string data = temp("full_data.csv");
  write_small_dataset(data);
  const CliRun r = epochcast::testing::run_cli("eval --data " + data + " --protocol lomo --predictions /dev/full 2>&1");
  std::filesystem::remove(data);
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("cannot write predictions to '/dev/full': No space left on device"), std::string::npos)
      << r.out;
}

TEST(EvalCli, UnwritablePredictionsPathFailsBeforeFitting) {
  const CliRun r = epochcast::testing::run_cli("eval --predictions /nonexistent-dir/p.csv 2>&1");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("cannot write predictions to '/nonexistent-dir/p.csv'"), std::string::npos) << r.out;
}

}  // namespace
