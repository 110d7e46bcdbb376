#include "epochcast/trace/trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast {

const Channel* Trace::find(Metric m) const {
  for (const auto& c : channels)
    if (c.metric == m) return &c;
  return nullptr;
}

Channel* Trace::find(Metric m) {
  for (auto& c : channels)
    if (c.metric == m) return &c;
  return nullptr;
}

Channel& Trace::channel(Metric m) {
  if (Channel* c = find(m)) return *c;
  channels.push_back(Channel{m, std::vector<double>(time_s.size(),
                                                   std::numeric_limits<double>::quiet_NaN())});
  return channels.back();
}

double Trace::median_interval_s() const {
  if (time_s.size() < 2) return 0.0;
  std::vector<double> d(time_s.size() - 1);
  for (std::size_t i = 1; i < time_s.size(); ++i) d[i - 1] = time_s[i] - time_s[i - 1];
  auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
  std::nth_element(d.begin(), mid, d.end());
  return *mid;
}

double Trace::max_interval_s() const {
  double best = 0.0;
  for (std::size_t i = 1; i < time_s.size(); ++i) best = std::max(best, time_s[i] - time_s[i - 1]);
  return best;
}

}  // namespace epochcast
