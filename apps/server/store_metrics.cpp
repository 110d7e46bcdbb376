#include "store_metrics.hpp"

#include <fmt/format.h>

#include <string_view>

namespace epochcast::server {

namespace {

// The exposition format's label value escapes: backslash, double quote, newline.
std::string escape_label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

std::string prediction_error_exposition(const std::vector<PairPredictionError>& errors) {
  std::string out;
  auto family = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& e : errors)
      out += fmt::format("{}{{source_gpu=\"{}\",target_gpu=\"{}\"}} {}\n", name, escape_label(e.source_gpu),
                         escape_label(e.target_gpu), value(e));
  };
  family("epochcast_prediction_error_ratio",
         "Mean |predicted - measured| / measured epoch time of the predictions a later run of the same job checked",
         [](const PairPredictionError& e) { return fmt::format("{:.6g}", e.mean_abs_error_ratio); });
  family("epochcast_prediction_log_ratio",
         "Mean log(predicted / measured) epoch time of the checked predictions (> 0: predicted slower than measured)",
         [](const PairPredictionError& e) { return fmt::format("{:.6g}", e.mean_log_ratio); });
  family("epochcast_prediction_checks", "Predictions checked by a later run of the same job on the target GPU",
         [](const PairPredictionError& e) { return std::to_string(e.checked); });
  return out;
}

}  // namespace epochcast::server
