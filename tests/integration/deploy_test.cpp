// deploy/: the recording rules pass promtool, and the Grafana dashboard, the rules and the
// Kubernetes example name only what watch exports and accepts.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cli_run.hpp"
#include "epochcast/fleet/watch.hpp"

using namespace epochcast;

namespace {

std::string deploy(const std::string& rel) { return std::string(EPOCHCAST_SOURCE_DIR) + "/deploy/" + rel; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A snapshot with every family filled: one busy GPU, a found job with a priced prediction.
fleet::FleetSnapshot full_snapshot() {
  fleet::FleetSnapshot s;
  s.last_pass = fleet::PassStats{};
  fleet::GpuView g;
  g.uuid = "GPU-1";
  g.busy = true;
  fleet::JobView j;
  j.id = "GPU-1/2026-12-02T00:00:00Z";
  j.labels = {{"pod", "p"}, {"namespace", "n"}};
  j.analysed = j.found = true;
  j.epoch_s = 100;
  j.confidence = 0.9;
  j.predictions.push_back({"a100-80gb", 150, 120, 190, {{"aws", "p4de.24xlarge", 0.1}}});
  g.jobs.push_back(j);
  s.gpus.push_back(g);
  return s;
}

// The metric names watch exports, and its label names (epochcast_job is one).
std::set<std::string> exported_names() {
  std::set<std::string> names;
  const std::string all = fleet::fleet_metrics_text(full_snapshot());
  std::istringstream text(all);
  for (std::string line; std::getline(text, line);)
    if (line.rfind("# TYPE ", 0) == 0) names.insert(line.substr(7, line.find(' ', 7) - 7));
  const std::regex label(R"(([A-Za-z_]+)=\")");
  for (auto it = std::sregex_iterator(all.begin(), all.end(), label); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  return names;
}

std::set<std::string> referenced(const std::string& text) {
  std::set<std::string> out;
  const std::regex name(R"(\bepochcast[_:][A-Za-z0-9_:]*)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it)
    out.insert(it->str());
  return out;
}

std::set<std::string> recorded_names() {
  std::set<std::string> out;
  std::istringstream rules(slurp(deploy("prometheus/epochcast-rules.yml")));
  for (std::string line; std::getline(rules, line);)
    if (const auto at = line.find("- record: "); at != std::string::npos) out.insert(line.substr(at + 10));
  return out;
}

TEST(DeployExamples, RecordingRulesPassPromtool) {
  const auto r = epochcast::testing::run_command("/usr/bin/promtool check rules " + deploy("prometheus/epochcast-rules.yml") + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("SUCCESS"), std::string::npos) << r.out;
}

TEST(DeployExamples, RulesNameOnlyExportedMetrics) {
  const auto exported = exported_names();
  ASSERT_GE(exported.size(), 9u);
  for (const std::string& n : referenced(slurp(deploy("prometheus/epochcast-rules.yml"))))
    if (n.find(':') == std::string::npos) EXPECT_TRUE(exported.contains(n)) << n << " is not exported";
}

TEST(DeployExamples, DashboardParsesAndNamesOnlyExportedOrRecordedMetrics) {
  const auto dash = nlohmann::json::parse(slurp(deploy("grafana/epochcast-fleet.json")));
  ASSERT_TRUE(dash.contains("panels"));
  std::string exprs;
  std::size_t targets = 0;
  for (const auto& p : dash["panels"])
    for (const auto& t : p.value("targets", nlohmann::json::array())) {
      exprs += t.at("expr").get<std::string>() + "\n";
      ++targets;
    }
  for (const auto& v : dash["templating"]["list"])
    if (v.contains("query") && v["query"].is_object()) exprs += v["query"].value("query", "") + "\n";
  EXPECT_GE(targets, 5u);
  const auto exported = exported_names();
  const auto recorded = recorded_names();
  const auto names = referenced(exprs);
  EXPECT_GE(names.size(), 5u);
  for (const std::string& n : names) EXPECT_TRUE(exported.contains(n) || recorded.contains(n)) << n;
}

TEST(DeployExamples, KubernetesExampleUsesOnlyWatchFlags) {
  const std::string yaml = slurp(deploy("kubernetes/epochcast-watch.yaml"));
  const auto help = epochcast::testing::run_cli("watch --help");
  ASSERT_EQ(help.status, 0);
  const std::regex flag(R"(- (--[a-z-]+)=)");
  std::size_t n = 0;
  for (auto it = std::sregex_iterator(yaml.begin(), yaml.end(), flag); it != std::sregex_iterator(); ++it, ++n)
    EXPECT_NE(help.out.find((*it)[1].str() + " "), std::string::npos) << (*it)[1].str() << " is not a watch flag";
  EXPECT_GE(n, 4u);
}

}  // namespace
