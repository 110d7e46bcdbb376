// Folds grouped by a label (a CNN model, a workload): every item of one group lands in one fold,
// so a fold's test items share no group with its training items. The one dealing rule of the
// fit's out-of-fold sets and of `eval --protocol kfold`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace epochcast {

struct GroupFolds {
  std::vector<std::size_t> fold_of_item;              // per input item
  std::map<std::string, std::size_t> fold_of_label;   // per distinct label
  std::size_t folds = 0;                              // min(k, distinct labels)
};

// The distinct labels sorted, shuffled by mt19937_64(seed) and dealt round-robin to
// min(k, distinct labels) folds. Deterministic for a seed (std::shuffle of libstdc++).
[[nodiscard]] GroupFolds group_folds(const std::vector<std::string>& label_of_item, std::size_t k, std::uint64_t seed);

}  // namespace epochcast
