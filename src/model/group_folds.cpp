#include "group_folds.hpp"

#include <algorithm>
#include <random>

namespace epochcast {

GroupFolds group_folds(const std::vector<std::string>& label_of_item, std::size_t k, std::uint64_t seed) {
  std::vector<std::string> labels(label_of_item);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  std::mt19937_64 rng(seed);
  std::shuffle(labels.begin(), labels.end(), rng);
  GroupFolds out;
  out.folds = std::min(k, labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) out.fold_of_label[labels[i]] = out.folds ? i % out.folds : 0;
  out.fold_of_item.reserve(label_of_item.size());
  for (const auto& l : label_of_item) out.fold_of_item.push_back(out.fold_of_label.at(l));
  return out;
}

}  // namespace epochcast
