// The one grouped-fold rule (fit's out-of-fold sets, eval --protocol kfold).
#include "../../../src/model/group_folds.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace epochcast {
namespace {

TEST(GroupFolds, EveryGroupInOneFoldEveryFoldUsedAndTheSeedDecides) {
  std::vector<std::string> labels;
  for (int i = 0; i < 60; ++i) labels.push_back("g" + std::to_string(i % 7));
  const GroupFolds a = group_folds(labels, 3, 42);
  ASSERT_EQ(a.folds, 3u);
  ASSERT_EQ(a.fold_of_item.size(), labels.size());
  std::set<std::size_t> used;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(a.fold_of_item[i], a.fold_of_label.at(labels[i]));  // a group never straddles folds
    used.insert(a.fold_of_item[i]);
  }
  EXPECT_EQ(used.size(), 3u);
  // Round-robin: 7 groups in 3 folds are 3, 2, 2.
  std::vector<int> per_fold(3, 0);
  for (const auto& [label, f] : a.fold_of_label) ++per_fold[f];
  std::multiset<int> sizes(per_fold.begin(), per_fold.end());
  EXPECT_EQ(sizes, (std::multiset<int>{2, 2, 3}));
  EXPECT_EQ(group_folds(labels, 3, 42).fold_of_label, a.fold_of_label);  // deterministic
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 6 && !differs; ++seed) differs = group_folds(labels, 3, seed).fold_of_label != a.fold_of_label;
  EXPECT_TRUE(differs);
  // k is capped at the number of groups.
  EXPECT_EQ(group_folds({"x", "y", "x"}, 5, 1).folds, 2u);
  EXPECT_EQ(group_folds({}, 5, 1).folds, 0u);
}

}  // namespace
}  // namespace epochcast
