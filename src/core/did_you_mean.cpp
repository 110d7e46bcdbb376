#include "epochcast/core/did_you_mean.hpp"

#include <algorithm>
#include <vector>

namespace epochcast {

namespace {
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions ("predcit" is 1 away).
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[m];
}

std::optional<std::string> closest_name(std::string_view word, std::span<const std::string> candidates) {
  if (word.empty()) return std::nullopt;
  const std::size_t allowed = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  std::size_t best_d = allowed + 1;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (word.size() >= 2 && c.size() > word.size() && edit_distance(word, std::string_view(c).substr(0, word.size())) == 0)
      d = std::min<std::size_t>(d, 1);  // a prefix: "pred" for predict
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace epochcast
