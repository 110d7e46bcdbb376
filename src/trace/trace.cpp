#include "epochcast/trace/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "parse_util.hpp"

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

void ImpossibleValues::record(Metric m, double v, std::string_view text, const std::string& where) {
  ++total_;
  auto it = std::find_if(by_metric_.begin(), by_metric_.end(), [&](const auto& p) { return p.first == m; });
  if (it == by_metric_.end()) {
    PerMetric first;
    first.first_where = where;
    // The value as the source wrote it, bounded (a message quotes it).
    first.first_text = text.empty() ? fmt::format("{:g}", v) : detail::printable(text, 64);
    by_metric_.emplace_back(m, std::move(first));
    it = by_metric_.end() - 1;
  }
  ++it->second.count;
}

void ImpossibleValues::report(const std::string& source, Trace& trace) const {
  trace.diagnostics.impossible_values += total_;
  for (const auto& [m, p] : by_metric_) {
    bool any_left = false;
    if (const Channel* c = trace.find(m))
      any_left = std::any_of(c->values.begin(), c->values.end(), [](double v) { return !std::isnan(v); });
    trace.diagnostics.warnings.push_back(fmt::format(
        "{}: {} impossible {} value(s) ({}) read as missing; the first at {}: '{}'{}", detail::printable(source, 4096),
        p.count, info(m).tag,
        describe_limits(m), p.first_where, p.first_text,
        any_left ? "" : fmt::format("; the channel {} is missing: none of its values is possible", info(m).tag)));
  }
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
