// MLflow metric history (`MlflowClient().get_metric_history(run, key)` for each key, gathered into
// one DataFrame and written with to_csv(index=False)): columns key,value,timestamp,step in any
// order (run_id and others ignored), one sample per row, timestamp in Unix milliseconds. System
// metrics are keys system/gpu_N_utilization_percentage, …_power_usage_watts,
// …_memory_usage_megabytes, system/cpu_utilization_percentage; the job's own `epoch` metric,
// logged once per epoch, marks where each epoch ended (Trace::epoch_markers_s).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::kNaN;
using detail::printable;
using detail::trim;

void TraceParser::mlflow_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (!header_done_ && mlflow_key_ < 0) {
    std::vector<std::string> names;
    detail::split_csv_cells(text, names);
    for (std::size_t i = 0; i < names.size(); ++i) {
      const int c = static_cast<int>(i);
      if (names[i] == "key") mlflow_key_ = c;
      else if (names[i] == "value") mlflow_value_ = c;
      else if (names[i] == "timestamp") mlflow_time_ = c;
      else if (names[i] == "step") mlflow_step_ = c;
    }
    if (mlflow_key_ < 0 || mlflow_value_ < 0 || mlflow_time_ < 0)
      fail(1, "(header)", "an MLflow metric history needs the columns key, value and timestamp");
    header_text_ = std::string(t);
    mlflow_width_ = names.size();
    have_timestamps_ = true;
    return;
  }
  if (t == header_text_) {
    ++repeated_headers_;
    return;
  }
  split_csv(text, true);
  if (fields_.size() != mlflow_width_)
    fail(text.size() + 1, "(row)", fmt::format("wrong column count ({}, expected {})", fields_.size(), mlflow_width_));
  const std::string_view key = trim(fields_[static_cast<std::size_t>(mlflow_key_)]);
  const std::string_view value_text = trim(fields_[static_cast<std::size_t>(mlflow_value_)]);
  const std::string_view time_text = trim(fields_[static_cast<std::size_t>(mlflow_time_)]);
  double ms = 0;
  if (!detail::parse_double(time_text, ms) || !(ms >= 0 && ms < 1e14))
    fail_at(text, fields_[static_cast<std::size_t>(mlflow_time_)], "timestamp",
            fmt::format("not a timestamp in Unix milliseconds: '{}'", printable(time_text)));
  double v = kNaN;
  if (!value_text.empty() && value_text != "NaN" && value_text != "nan" &&
      (!detail::parse_double(value_text, v) || !std::isfinite(v)))
    fail_at(text, fields_[static_cast<std::size_t>(mlflow_value_)], std::string(key), detail::bad_number(value_text));
  const double stamp = unix_stamp(ms / 1000.0);
  if (key == "epoch") {
    epoch_markers_.push_back(stamp);  // logged as each epoch ends
    return;
  }
  int gpu = -1;
  std::optional<SourceMetric> sm;
  if (const auto gk = detail::mlflow_gpu_key(key)) {
    gpu = gk->first;
    sm = metric_by_mlflow_gpu_key(gk->second);
  } else {
    sm = metric_by_tracker_host_key(key);
  }
  if (!sm) {
    if (std::find(ignored_names_.begin(), ignored_names_.end(), key) == ignored_names_.end() && ignored_names_.size() < 1000)
      ignored_names_.emplace_back(key);
    return;
  }
  const int slot = pivot_slot(sm->metric, key);
  if (slot < 0) return;
  if (gpu >= 0) pivot_identity(gpu, {}, {});
  pivot_add(gpu, std::llround(stamp * 1e6), slot, v * sm->factor);
}

}  // namespace epochcast
