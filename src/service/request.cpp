#include "epochcast/service/request.hpp"
#include "epochcast/model/precision.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "epochcast/model/evaluate.hpp"
#include "epochcast/model/fit_parameters.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {

namespace {

// An epoch (or a given epoch time) between 1 ms and ~4 months: 1e-300 s was once taken, and
// predicted 1.3e-300 s on an H100.
constexpr double kMinEpochS = 1e-3;
constexpr double kMaxEpochS = 1e7;
// The collector's finest interval is 1 ms; a day between samples is no training trace.
constexpr double kMinIntervalS = 1e-3;
constexpr double kMaxIntervalS = 86400;

}  // namespace

FieldError::FieldError(std::string field, std::string problem)
    : Error(ErrorCode::kInvalidArgument, field + " " + problem), field_(std::move(field)), problem_(std::move(problem)) {}

void TraceRequest::validate() const {
  const auto parsed = trace_format_from_string(format);
  if (!parsed) throw FieldError("format", fmt::format("'{}' is not one of auto, nvidia-smi, nvidia-smi-dmon, dcgmi, "
                                                     "prometheus-text, dcgm-csv, grafana-csv, query-range-json, wandb, "
                                                     "mlflow, csv",
                                                     format));
  if (gpu && *gpu < 0) throw FieldError("gpu", fmt::format("must not be negative, got {}", *gpu));
  // 0 is "not given"; written as a negation so NaN fails too.
  if (!(interval_s == 0 || (interval_s >= kMinIntervalS && interval_s <= kMaxIntervalS)))
    throw FieldError("interval_s", "must be a number of seconds from 0.001 to 86400");
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (std::find(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(i), fields[i]) !=
        fields.begin() + static_cast<std::ptrdiff_t>(i))
      throw FieldError("fields", fmt::format("lists '{}' twice", fields[i]));
  if (!fields.empty() && *parsed != TraceFormat::kAuto && *parsed != TraceFormat::kNvidiaSmi)
    throw FieldError("fields", "describes an nvidia-smi csv,noheader log, not format " + format);
  if (!prometheus.url.empty() && prometheus.start.empty())
    throw FieldError("prometheus.start", "is needed with a Prometheus source (Unix s, RFC 3339 UTC or now-15m)");
}

void DetectRequest::validate() const {
  // 0 is "not given"; a negative, NaN or crossed bound would otherwise read as "no period found".
  if (!(min_period_s >= 0 && min_period_s <= kMaxEpochS))
    throw FieldError("min_period_s", "must be a number of seconds in (0, 1e7]");
  if (!(max_period_s >= 0 && max_period_s <= kMaxEpochS))
    throw FieldError("max_period_s", "must be a number of seconds in (0, 1e7]");
  if (min_period_s > 0 && max_period_s > 0 && min_period_s > max_period_s)
    throw FieldError("min_period_s", fmt::format("{} is longer than the longest period asked for, {}", min_period_s, max_period_s));
  if (!(min_confidence >= 0 && min_confidence <= 1))
    throw FieldError("min_confidence", "must be a number in [0, 1]");
  if (min_epochs < 2) throw FieldError("min_epochs", fmt::format("must be at least 2, got {}", min_epochs));
}

void PredictRequest::validate() const {
  if (epochs < 1) throw FieldError("epochs", fmt::format("must be at least 1, got {}", epochs));
  if (!(min_detection_confidence >= 0 && min_detection_confidence <= 1))
    throw FieldError("min_detection_confidence", fmt::format("must be between 0 and 1, got {}", min_detection_confidence));
  // 0 means "not given"; anything else must be a plausible epoch.
  if (!(source_epoch_s == 0 || (source_epoch_s >= kMinEpochS && source_epoch_s <= kMaxEpochS)))
    throw FieldError("source_epoch_s", fmt::format("must be a number of seconds from 0.001 to 1e7, got {}", source_epoch_s));
  // A job key names a job in tables and messages: printable, one line, bounded.
  if (job_key.size() > kMaxJobKeyBytes)
    throw FieldError("job_key", fmt::format("is {} bytes long; at most {}", job_key.size(), kMaxJobKeyBytes));
  for (unsigned char c : job_key)
    if (c < 0x20 || c == 0x7f) throw FieldError("job_key", "holds a control character");
  if (!precision_from_string(precision))
    throw FieldError("precision", fmt::format("'{}' is not one of {}", precision, kPrecisionChoices));
}

void FitRequest::validate() const {
  FitOptions scratch;
  for (const auto& [name, value] : parameters) {
    const FitParameter* p = find_fit_parameter(name);
    if (p == nullptr) {
      std::string known;
      for (const auto& q : fit_parameters()) known += (known.empty() ? "" : ", ") + std::string(q.name);
      throw FieldError("parameters", fmt::format("'{}' is not a fit parameter (one of {})", name, known));
    }
    if (std::string why = p->set(scratch, value); !why.empty()) throw FieldError("parameters." + name, why);
  }
}

void EvaluateRequest::validate() const {
  fit.validate();
  if (test_path.empty() && !protocol_from_string(protocol))
    throw FieldError("protocol", fmt::format("'{}' is not one of kfold, lomo, logo", protocol));
}

std::vector<std::string> parse_gpu_list(std::string_view list, std::string_view field) {
  std::vector<std::string> out;
  if (list.empty() || list == "all") return out;
  std::string_view rest = list;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (out.empty()) throw FieldError(std::string(field), fmt::format("'{}' names no GPU", list));
  return out;
}

}  // namespace epochcast
