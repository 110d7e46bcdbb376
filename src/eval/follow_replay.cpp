#include "eval/follow_replay.hpp"

#include <algorithm>

namespace epochcast::eval {

FollowOutcome replay_follow(const Trace& trace, double stop_s, double poll_s, double bar, const DetectOptions& options) {
  FollowOutcome out;
  Detector det(options);
  Trace prefix = trace;
  for (auto& c : prefix.channels) c.values.clear();
  prefix.time_s.clear();
  std::size_t i = 0;
  while (i < trace.size() && trace.time_s[i] <= stop_s) {
    const double until = trace.time_s[i] + poll_s;
    for (; i < trace.size() && (trace.time_s[i] < until || prefix.time_s.empty()); ++i) {
      prefix.time_s.push_back(trace.time_s[i]);
      for (std::size_t c = 0; c < trace.channels.size(); ++c)
        prefix.channels[c].values.push_back(trace.channels[c].values[i]);
    }
    det.push(prefix);
    ++out.pushes;
    const Segmentation& s = det.current();
    if (s.found && s.confidence >= bar) {
      out.confident = true;
      out.at_s = prefix.time_s.back();
      out.period_s = s.period_s;
      out.confidence = s.confidence;
      break;
    }
  }
  out.runs = det.runs();
  return out;
}

}  // namespace epochcast::eval
