// Test helper: the real traces' truth.json aligned to the trace's own time axis.
#pragma once

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epochcast/core/text.hpp"
#include "epochcast/epoch/segmentation.hpp"

namespace epochcast::testing {

// Seconds since 1970-01-01 of "YYYY/MM/DD HH:MM:SS.mmm" read as UTC; only differences are used,
// so the time zone cancels out (both strings are in the trace's own local time).
inline double stamp_seconds(const std::string& stamp) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  if (std::sscanf(stamp.c_str(), "%d/%d/%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &s) != 6) return 0;
  const std::int64_t days = text::days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

struct RealTruth {
  double period_s = 0;               // mean of end - start
  std::vector<EpochSpan> epochs;     // seconds from the trace's first sample
  bool validation = true;
};

inline RealTruth load_truth(const std::string& path, const std::string& first_timestamp) {
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  RealTruth t;
  const double origin = stamp_seconds(first_timestamp);
  for (const auto& e : j.at("epochs"))
    t.epochs.push_back({stamp_seconds(e.at("start_stamp").get<std::string>()) - origin,
                        stamp_seconds(e.at("end_stamp").get<std::string>()) - origin});
  t.period_s = j.at("mean_epoch_s").get<double>();
  const auto& w = j.at("workload");
  t.validation = !(w.contains("val") && w.at("val").is_boolean() && !w.at("val").get<bool>());
  return t;
}

// Median over truth boundaries (every start and the last end) of the distance to the nearest
// detected boundary.
inline double median_boundary_error_s(const std::vector<EpochSpan>& truth,
                                      const std::vector<EpochSpan>& detected) {
  std::vector<double> tb, db;
  for (const auto& e : truth) tb.push_back(e.start_s);
  if (!truth.empty()) tb.push_back(truth.back().end_s);
  for (const auto& e : detected) db.push_back(e.start_s);
  if (!detected.empty()) db.push_back(detected.back().end_s);
  if (db.empty()) return 1e9;
  std::vector<double> err;
  for (double t : tb) {
    double best = 1e18;
    for (double d : db) best = std::min(best, std::abs(t - d));
    err.push_back(best);
  }
  std::sort(err.begin(), err.end());
  return err.size() % 2 ? err[err.size() / 2] : 0.5 * (err[err.size() / 2 - 1] + err[err.size() / 2]);
}

}  // namespace epochcast::testing
