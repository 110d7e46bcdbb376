// The one table of fit settings, the learner registry and the defaults they share.
#include "epochcast/model/fit_parameters.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../../../src/model/learners.hpp"
#include "../../../src/model/stacked_internal.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

using ::testing::HasSubstr;

// The internal learner settings start where the public ones do (issue 18 found 300 vs 50
// boosting rounds): a learner made without FitOptions is the default stack's learner.
TEST(LearnerConfig, DefaultsAreFitOptions) {
  const LearnerConfig c;
  const LearnerConfig via = stacked::learner_config(FitOptions{});
  EXPECT_EQ(c.xgb_rounds, via.xgb_rounds);
  EXPECT_EQ(c.xgb_max_depth, via.xgb_max_depth);
  EXPECT_EQ(c.xgb_eta, via.xgb_eta);
  EXPECT_EQ(c.trees, via.trees);
  EXPECT_EQ(c.tree_min_leaf, via.tree_min_leaf);
  EXPECT_EQ(c.tree_max_features, via.tree_max_features);
  EXPECT_EQ(c.knn_k, via.knn_k);
  EXPECT_EQ(c.threads, via.threads);
}

// The model file's options object has exactly the table's keys, and reads back to the same
// options, whatever values they hold.
TEST(FitParameters, ModelFileOptionsAreTheTable) {
  FitOptions o;
  ASSERT_EQ(find_fit_parameter("xgb_rounds")->set(o, "77"), "");
  ASSERT_EQ(find_fit_parameter("kernel_ridge")->set(o, "false"), "");
  ASSERT_EQ(find_fit_parameter("xgb_eta")->set(o, "0.125"), "");
  ASSERT_EQ(find_fit_parameter("seed")->set(o, "18446744073709551615"), "");
  const nlohmann::json j = stacked::options_to_json(o);
  std::set<std::string> keys, names;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  for (const auto& p : fit_parameters()) names.insert(std::string(p.name));
  EXPECT_EQ(keys, names);
  EXPECT_EQ(j["seed"].get<std::uint64_t>(), 18446744073709551615ULL);
  const FitOptions back = stacked::options_from_json(nlohmann::json::parse(j.dump()));
  for (const auto& p : fit_parameters()) EXPECT_EQ(p.value_text(back), p.value_text(o)) << p.name;
  EXPECT_EQ(back.xgb_rounds, 77);
  EXPECT_FALSE(back.kernel_ridge);
}

TEST(FitParameters, RangesAreEnforcedAndNothingChangesOnARefusal) {
  for (const auto& p : fit_parameters()) {
    FitOptions o;
    const std::string before = p.value_text(o);
    EXPECT_EQ(p.set(o, p.default_text()), "") << p.name << ": its default is in its range";
    EXPECT_NE(p.set(o, "x"), "") << p.name;
    EXPECT_EQ(p.value_text(o), before) << p.name;
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_EQ(p.flag.empty(), p.flag_kind == FitParameter::Flag::kNone) << p.name;
    if (p.is_bool()) continue;
    if (p.min > 0) EXPECT_NE(p.set(o, fmt::format("{}", p.min / 2)), "") << p.name;
    if (p.kind() == "integer" && p.name != "seed") {
      EXPECT_THAT(p.set(o, fmt::format("{}", p.max + 1)), HasSubstr("whole number from")) << p.name;
      EXPECT_EQ(p.set(o, fmt::format("{}", p.max)), "") << p.name;
    }
  }
  FitOptions o;
  EXPECT_THAT(find_fit_parameter("xgb_eta")->set(o, "inf"), HasSubstr("number from 0.001 to 1"));
  EXPECT_NE(find_fit_parameter("trees")->set(o, "1.5"), "");
  EXPECT_NE(find_fit_parameter("trees")->set(o, "10 "), "");
  EXPECT_EQ(find_fit_parameter("nope"), nullptr);
}

TEST(FitParameters, PresetsNameTableParameters) {
  for (const auto& s : fit_presets())
    for (const auto& [name, value] : s.sets) {
      const FitParameter* p = find_fit_parameter(name);
      ASSERT_NE(p, nullptr) << s.flag << " sets " << name;
      FitOptions o;
      EXPECT_EQ(p->set(o, value), "") << s.flag;
    }
}

TEST(LearnerRegistry, EveryNameMakesItsLearnerAndAnUnknownOneListsThem) {
  const LearnerConfig c;
  std::set<std::string> seen;
  for (const auto& e : learner_registry()) {
    EXPECT_TRUE(seen.insert(std::string(e.name)).second) << e.name;
    EXPECT_EQ(make_learner(std::string(e.name), c)->name(), e.name);
  }
  for (const auto& n : stacked::learner_config(FitOptions{}).learners) EXPECT_TRUE(seen.contains(n)) << n;
  try {
    (void)make_learner("lightgbm", c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_THAT(e.what(), HasSubstr("'lightgbm'"));
    EXPECT_THAT(e.what(), HasSubstr("kernel_ridge"));
  }
}

TEST(FitParameters, MarkdownListsEveryParameterPresetAndLearner) {
  const std::string md = fit_parameters_markdown();
  for (const auto& p : fit_parameters()) EXPECT_THAT(md, HasSubstr("| `" + std::string(p.name) + "` |"));
  for (const auto& s : fit_presets()) EXPECT_THAT(md, HasSubstr("| `" + std::string(s.flag) + "` |"));
  for (const auto& l : learner_registry()) EXPECT_THAT(md, HasSubstr("| `" + std::string(l.name) + "` |"));
  EXPECT_THAT(md, HasSubstr("| `xgb_rounds` | `--xgb-rounds N` | integer | 50 | 1 to 2000 |"));
}

}  // namespace
}  // namespace epochcast
