#include "epochcast/service/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"

namespace epochcast {

namespace {

// JSON has no NaN/inf: such numbers become null.
nlohmann::json number_or_null(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

std::string format_usd(double usd) {
  if (!std::isfinite(usd)) return "-";
  if (usd < 0.01) return fmt::format("${:.5f}", usd);
  if (usd < 1) return fmt::format("${:.4f}", usd);
  if (usd < 1000) return fmt::format("${:.2f}", usd);
  return fmt::format("${:.0f}", usd);
}

std::string instance_label(const InstanceCost& c) {
  if (c.gpu_count == 1) return fmt::format("{} {}", c.provider, c.instance);
  return fmt::format("{} {} (1/{})", c.provider, c.instance, c.gpu_count);
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string detection_line(const Segmentation& s) {
  if (!s.found) return fmt::format("no epochs found: {}", s.reason.empty() ? "no reason given" : s.reason);
  return fmt::format("{} epochs, period {}, confidence {:.2f}{}", s.epochs.size(),
                     format_duration(s.period_s), s.confidence,
                     s.channels.empty() ? "" : fmt::format(" (channels: {})", fmt::join(s.channels, ", ")));
}

std::string validation_line(const ModelValidation& v) {
  if (!v.available || v.protocols.empty()) {
    if (v.note.empty()) return "no validation figures";
    std::string note = v.note;  // a sentence: after "Model: FILE; " it starts in lower case
    if (!note.empty() && note[0] >= 'A' && note[0] <= 'Z') note[0] = static_cast<char>(note[0] - 'A' + 'a');
    return note;
  }
  std::vector<std::string> parts;
  for (const auto& p : v.protocols) {
    std::string part = fmt::format("{} MAPE {:.1f} % (p90 {:.1f} %", p.protocol, p.mape_pct, p.p90_ape_pct);
    if (p.interval_coverage_pct) part += fmt::format(", 90 % interval covers {:.0f} %", *p.interval_coverage_pct);
    parts.push_back(part + ")");
  }
  return fmt::format("held-out {}", fmt::join(parts, "; "));
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds == 0) return "0 s";
  if (seconds < 0.1) return fmt::format("{:.1f} ms", seconds * 1000);
  if (seconds < 10) return fmt::format("{:.2f} s", seconds);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  if (seconds < 3600) {
    const auto total = static_cast<long long>(std::lround(seconds));
    return fmt::format("{} min {:02} s", total / 60, total % 60);
  }
  // Past this many hours (~114 years) minutes mean nothing, and lround's long overflows near
  // 5.5e20 s (it printed negative hours): hours with three significant digits.
  constexpr double kLongestHoursAndMinutes = 1e6;
  if (seconds / 3600 >= kLongestHoursAndMinutes) return fmt::format("{:.3g} h", seconds / 3600);
  const auto minutes = static_cast<long long>(std::lround(seconds / 60));
  return fmt::format("{} h {:02} min", minutes / 60, minutes % 60);
}

nlohmann::json to_json(const Segmentation& s) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : s.epochs) epochs.push_back({{"start_s", e.start_s}, {"end_s", e.end_s}});
  return {
      {"found", s.found},
      {"period_s", s.found ? number_or_null(s.period_s) : nlohmann::json(nullptr)},
      {"confidence", number_or_null(s.confidence)},
      {"epochs", std::move(epochs)},
      {"first_timestamp", s.first_timestamp},
      {"interval_s", number_or_null(s.interval_s)},
      {"channels", s.channels},
      {"reason", s.reason},
  };
}

nlohmann::json to_json(const ModelValidation& v) {
  nlohmann::json validation = {{"available", v.available}};
  nlohmann::json protocols = nlohmann::json::array();
  for (const auto& p : v.protocols)
    protocols.push_back({{"protocol", p.protocol},
                         {"pairs", p.pairs},
                         {"mape_pct", p.mape_pct},
                         {"median_ape_pct", p.median_ape_pct},
                         {"p90_ape_pct", p.p90_ape_pct},
                         {"interval_coverage_pct", p.interval_coverage_pct ? nlohmann::json(*p.interval_coverage_pct)
                                                                           : nlohmann::json(nullptr)},
                         {"per_target_gpu", p.per_target_gpu_mape_pct}});
  validation["protocols"] = std::move(protocols);
  validation["note"] = v.note;
  return validation;
}

nlohmann::json to_json(const PredictReport& r) {
  const double source_epoch_s = r.source.measured_epoch_s;
  nlohmann::json predictions = nlohmann::json::array();
  for (const auto& p : r.predictions) {
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& c : p.instances) {
      instances.push_back({
          {"provider", c.provider},
          {"instance", c.instance},
          {"region", c.region},
          {"gpu_count", c.gpu_count},
          {"usd_per_gpu_h", c.gpu_share_usd_h},
          {"usd_per_epoch", number_or_null(c.usd_per_epoch)},
          {"usd_total", number_or_null(c.usd_total)},
          {"spot_usd_per_epoch", c.spot_usd_per_epoch ? number_or_null(*c.spot_usd_per_epoch)
                                                      : nlohmann::json(nullptr)},
          {"price_as_of", c.as_of},
      });
    }
    predictions.push_back({
        {"gpu", p.gpu},
        {"gpu_name", p.gpu_name},
        {"epoch_s", number_or_null(p.epoch_s)},
        {"interval_s", {number_or_null(p.interval_lo_s), number_or_null(p.interval_hi_s)}},
        {"measured", p.measured},
        {"in_training_data", p.in_training_data},
        {"relative_to_source", source_epoch_s > 0 ? number_or_null(p.epoch_s / source_epoch_s)
                                                  : nlohmann::json(nullptr)},
        {"instances", std::move(instances)},
    });
  }
  nlohmann::json by_cost = nlohmann::json::array();
  for (const auto& row : rank_by_cost(r))
    by_cost.push_back({{"gpu", row.prediction->gpu},
                       {"provider", row.instance->provider},
                       {"instance", row.instance->instance},
                       {"usd_per_epoch", number_or_null(row.instance->usd_per_epoch)}});
  nlohmann::json uncertainty = nlohmann::json::array();
  for (const auto& u : r.uncertainty)
    uncertainty.push_back({{"reason", u.reason}, {"log_half_width", u.log_half_width}});
  nlohmann::json out{
      {"source",
       {{"gpu", r.source.gpu},
        {"gpu_name", r.source.gpu_name},
        {"gpu_name_in_trace", r.source.gpu_name_in_trace},
        {"trace", r.source.trace},
        {"measured_epoch_s", source_epoch_s > 0 ? number_or_null(source_epoch_s) : nlohmann::json(nullptr)},
        {"epoch_time_from", r.source.epoch_time_from},
        {"marker_epoch_s", r.source.marker_epoch_s > 0 ? number_or_null(r.source.marker_epoch_s) : nlohmann::json(nullptr)},
        {"epoch_markers", r.source.markers},
        {"in_training_data", r.source.in_training_data},
        {"features_window_s", {number_or_null(r.source.window_start_s), number_or_null(r.source.window_end_s)}},
        {"detected", to_json(r.source.detected)}}},
      {"predictions", std::move(predictions)},
      {"epochs", r.epochs},
      {"ranking_by_cost", std::move(by_cost)},
      {"uncertainty", std::move(uncertainty)},
      {"model", r.model},
      {"precision", {{"requested", r.precision}, {"rule", r.precision_rule}}},
      {"validation", to_json(r.validation)},
      {"warnings", r.warnings},
  };
  // Only with a job store (--store, --job): the --json contract without one is unchanged.
  if (!r.job_key.empty() || r.store_run_id > 0) {
    out["store"] = {{"job_key", r.job_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job_key)},
                    {"run_id", r.store_run_id > 0 ? nlohmann::json(r.store_run_id) : nlohmann::json(nullptr)}};
    for (std::size_t i = 0; i < r.predictions.size(); ++i)
      out["predictions"][i]["store_calibration"] = {{"log_factor", r.predictions[i].store_calibration_log},
                                                    {"pairs", r.predictions[i].store_calibration_pairs}};
  }
  return out;
}

namespace {

// The summary line of one trace in a batch.
struct BatchSummary {
  const GpuPrediction* fastest = nullptr;
  const GpuPrediction* cheapest_gpu = nullptr;
  const InstanceCost* cheapest = nullptr;
};

BatchSummary summarize(const PredictReport& r) {
  BatchSummary s;
  if (!r.predictions.empty()) s.fastest = &r.predictions.front();
  const auto by_cost = rank_by_cost(r);
  if (!by_cost.empty()) {
    s.cheapest_gpu = by_cost.front().prediction;
    s.cheapest = by_cost.front().instance;
  }
  return s;
}

}  // namespace

nlohmann::json to_json(const std::vector<BatchItem>& batch) {
  nlohmann::json traces = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& item : batch) {
    if (!item.report) {
      traces.push_back({{"trace", item.trace},
                        {"error", {{"code", item.error_code}, {"message", item.error}}}});
      summary.push_back({{"trace", item.trace}, {"error", item.error}});
      continue;
    }
    const PredictReport& r = *item.report;
    traces.push_back(to_json(r));
    const BatchSummary s = summarize(r);
    summary.push_back({
        {"trace", item.trace},
        {"source_gpu", r.source.gpu},
        {"measured_epoch_s", r.source.measured_epoch_s > 0 ? number_or_null(r.source.measured_epoch_s)
                                                           : nlohmann::json(nullptr)},
        {"confidence", number_or_null(r.source.detected.confidence)},
        {"fastest_gpu", s.fastest ? nlohmann::json(s.fastest->gpu) : nlohmann::json(nullptr)},
        {"fastest_epoch_s", s.fastest ? number_or_null(s.fastest->epoch_s) : nlohmann::json(nullptr)},
        {"cheapest_gpu", s.cheapest_gpu ? nlohmann::json(s.cheapest_gpu->gpu) : nlohmann::json(nullptr)},
        {"cheapest_instance", s.cheapest ? nlohmann::json(s.cheapest->provider + " " + s.cheapest->instance)
                                         : nlohmann::json(nullptr)},
        {"cheapest_usd_per_epoch", s.cheapest ? number_or_null(s.cheapest->usd_per_epoch)
                                              : nlohmann::json(nullptr)},
        {"warnings", r.warnings.size()},
    });
  }
  return {{"traces", std::move(traces)}, {"summary", std::move(summary)}};
}

std::string render_table(const PredictReport& r) {
  std::string out;
  const SourceRun& src = r.source;
  out += fmt::format("Trace:    {}\n", src.trace);
  out += fmt::format("Source:   {} ({}){}\n", src.gpu_name, src.gpu,
                     src.gpu_name_in_trace.empty() ? " [from --source-gpu]" : "");
  out += fmt::format("Detected: {}\n", detection_line(src.detected));
  if (src.epoch_time_from == "given")
    out += fmt::format("Epoch:    {} on the source, as given with --epoch-s\n", format_duration(src.measured_epoch_s));
  if (src.markers >= 2)
    out += fmt::format("Markers:  {} per epoch on the source, from the job's own {} epoch markers{}\n",
                       format_duration(src.marker_epoch_s), src.markers,
                       src.epoch_time_from == "markers" ? " (used)" : " (not used: --epochs-from markers)");
  if (!r.model.empty()) out += fmt::format("Model:    {}; {}\n", r.model, validation_line(r.validation));
  if (!r.precision_rule.empty()) out += fmt::format("Precision: {}\n", r.precision_rule);
  out += "\n";

  if (r.predictions.empty()) {
    out += "No predictions.\n";
  } else {
    out += fmt::format("Epoch time on each GPU, fastest first (90 % interval; cost of {} epochs at the cheapest on-demand price):\n",
                       r.epochs);
    auto interval_of = [](const GpuPrediction& p) {
      return p.measured ? std::string("measured")
                        : fmt::format("{} - {}", format_duration(p.interval_lo_s), format_duration(p.interval_hi_s));
    };
    // "1 min 14 s - 2 min 37 s" is wider than the usual 21 columns: widen, not misalign.
    std::size_t interval_width = 21;
    for (const auto& p : r.predictions) interval_width = std::max(interval_width, interval_of(p).size());
    // Catalog ids like "a100-80gb-pcie*" are wider than the usual 11 columns: widen the same way.
    std::size_t gpu_width = 11;
    for (const auto& p : r.predictions) gpu_width = std::max(gpu_width, p.gpu.size() + 1);
    out += fmt::format("{:>4}  {:<{}} {:>10}  {:<{}} {:>7}  {:<32} {:>10} {:>11}\n", "rank", "gpu", gpu_width, "epoch",
                       "interval", interval_width, "vs src", "cheapest instance", "$/epoch",
                       fmt::format("{} epochs", r.epochs));
    int rank = 0;
    for (const auto& p : r.predictions) {
      ++rank;
      const std::string interval = interval_of(p);
      const std::string rel =
          src.measured_epoch_s > 0 ? fmt::format("{:.2f}x", p.epoch_s / src.measured_epoch_s) : "-";
      const InstanceCost* c = p.cheapest();
      std::string gpu = p.gpu;
      if (!p.in_training_data && !p.measured) gpu += "*";
      out += fmt::format("{:>4}  {:<{}} {:>10}  {:<{}} {:>7}  {:<32} {:>10} {:>11}\n", rank, gpu, gpu_width,
                         format_duration(p.epoch_s), interval, interval_width, rel, c ? instance_label(*c) : "(no price)",
                         c ? format_usd(c->usd_per_epoch) : "-", c ? format_usd(c->usd_total) : "-");
    }
    bool any_unseen = false;
    for (const auto& p : r.predictions) any_unseen |= !p.in_training_data && !p.measured;
    if (any_unseen) out += "  * GPU not in the model's training data: extrapolated from its specs\n";

    const auto by_cost = rank_by_cost(r);
    if (!by_cost.empty()) {
      out += fmt::format("\nCheapest per epoch (on demand, the GPU's share of the instance; prices as of {}):\n",
                         by_cost.front().instance->as_of);
      std::size_t cost_gpu_width = 11;
      for (const auto& row : by_cost) cost_gpu_width = std::max(cost_gpu_width, row.prediction->gpu.size());
      out += fmt::format("{:>4}  {:<{}} {:<32} {:>9} {:>10} {:>11}\n", "rank", "gpu", cost_gpu_width, "instance",
                         "$/GPU-h", "$/epoch", fmt::format("{} epochs", r.epochs));
      const std::size_t shown = std::min<std::size_t>(by_cost.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& row = by_cost[i];
        out += fmt::format("{:>4}  {:<{}} {:<32} {:>9} {:>10} {:>11}\n", i + 1, row.prediction->gpu,
                           cost_gpu_width, instance_label(*row.instance), format_usd(row.instance->gpu_share_usd_h),
                           format_usd(row.instance->usd_per_epoch), format_usd(row.instance->usd_total));
      }
      if (by_cost.size() > shown)
        out += fmt::format("      … {} more instances in --json\n", by_cost.size() - shown);
    }
  }
  if (!r.warnings.empty()) {
    out += "\nWarnings:\n";
    for (const auto& w : r.warnings) out += fmt::format("  - {}\n", w);
  }
  return out;
}

namespace {

// Columns a string takes on a terminal: UTF-8 continuation bytes take none.
std::size_t display_width(std::string_view s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

// A file name as a table cell: control bytes (a newline or an escape sequence in a name would
// break the table or drive the terminal) written \xNN.
std::string name_cell(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}
std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

}  // namespace

std::string render_batch_table(const std::vector<BatchItem>& batch) {
  // Cells first, then every column as wide as its widest cell (names were cut at 44 bytes,
  // mid-character for UTF-8, and long epochs or instance names pushed the columns right).
  struct Row {
    std::string name, source, epoch, conf, fastest, cheapest, usd, warn, error;
  };
  std::vector<Row> rows;
  for (const auto& item : batch) {
    Row row;
    row.name = item.trace;
    if (const auto slash = row.name.find_last_of('/'); slash != std::string::npos) row.name = row.name.substr(slash + 1);
    row.name = name_cell(row.name);
    if (!item.report) {
      row.error = "error: " + item.error;
      rows.push_back(std::move(row));
      continue;
    }
    const PredictReport& r = *item.report;
    const BatchSummary s = summarize(r);
    row.source = r.source.gpu;
    row.epoch = r.source.measured_epoch_s > 0 ? format_duration(r.source.measured_epoch_s) : "none";
    row.conf = fmt::format("{:.2f}", r.source.detected.confidence);
    row.fastest = s.fastest ? fmt::format("{} {}", s.fastest->gpu, format_duration(s.fastest->epoch_s)) : "-";
    row.cheapest = s.cheapest ? fmt::format("{} {}", s.cheapest_gpu->gpu, s.cheapest->instance) : "-";
    row.usd = s.cheapest ? format_usd(s.cheapest->usd_per_epoch) : "-";
    row.warn = std::to_string(r.warnings.size());
    rows.push_back(std::move(row));
  }
  const Row header{"trace", "source", "epoch", "conf", "fastest", "cheapest per epoch", "$/epoch", "warn", ""};
  // The widths the table had: unchanged for short names and values.
  std::size_t w_name = 44, w_source = 6, w_epoch = 9, w_conf = 5, w_fastest = 16, w_cheapest = 28, w_usd = 10,
              w_warn = 4;
  for (const Row& row : rows) {
    w_name = std::max(w_name, display_width(row.name));
    if (!row.error.empty()) continue;
    w_source = std::max(w_source, display_width(row.source));
    w_epoch = std::max(w_epoch, display_width(row.epoch));
    w_conf = std::max(w_conf, display_width(row.conf));
    w_fastest = std::max(w_fastest, display_width(row.fastest));
    w_cheapest = std::max(w_cheapest, display_width(row.cheapest));
    w_usd = std::max(w_usd, display_width(row.usd));
    w_warn = std::max(w_warn, display_width(row.warn));
  }
  auto line = [&](const Row& row) {
    if (!row.error.empty()) return pad_right(row.name, w_name) + " " + row.error + "\n";
    return pad_right(row.name, w_name) + " " + pad_right(row.source, w_source) + " " + pad_left(row.epoch, w_epoch) +
           " " + pad_left(row.conf, w_conf) + "  " + pad_right(row.fastest, w_fastest) + " " +
           pad_right(row.cheapest, w_cheapest) + " " + pad_left(row.usd, w_usd) + " " + pad_left(row.warn, w_warn) +
           "\n";
  };
  std::string out = line(header);
  for (const Row& row : rows) out += line(row);
  return out;
}

// ---- HTML -------------------------------------------------------------------------------------

namespace {

constexpr double kChartWidth = 900;
constexpr double kLaneHeight = 70;
constexpr double kLaneGap = 18;
constexpr double kLeftMargin = 150;

// Min/max per horizontal pixel so a 24-hour trace draws the same shape in a small page.
std::string channel_path(const std::vector<double>& time_s, const std::vector<double>& values, double t0,
                         double t1, double lo, double hi, double y0, double interval_s) {
  const int buckets = static_cast<int>(kChartWidth);
  std::vector<double> bucket_min(buckets, std::numeric_limits<double>::infinity());
  std::vector<double> bucket_max(buckets, -std::numeric_limits<double>::infinity());
  const double span = std::max(t1 - t0, 1e-9);
  for (std::size_t i = 0; i < values.size() && i < time_s.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    int b = static_cast<int>((time_s[i] - t0) / span * (buckets - 1));
    b = std::clamp(b, 0, buckets - 1);
    bucket_min[b] = std::min(bucket_min[b], v);
    bucket_max[b] = std::max(bucket_max[b], v);
  }
  const double range = hi > lo ? hi - lo : 1.0;
  auto y_of = [&](double v) { return y0 + kLaneHeight - (v - lo) / range * kLaneHeight; };
  // Sparse traces leave empty columns between samples; only a run longer than three sampling
  // intervals is a gap (missing samples) and lifts the pen.
  const double gap_columns = std::max(1.0, 3 * interval_s / span * (buckets - 1));
  std::string d;
  bool pen_down = false;
  int empty_run = 0;
  for (int b = 0; b < buckets; ++b) {
    if (!std::isfinite(bucket_min[b])) {
      if (++empty_run > gap_columns) pen_down = false;
      continue;
    }
    empty_run = 0;
    const double x = kLeftMargin + b;
    d += fmt::format("{}{:.1f},{:.1f}", pen_down ? "L" : "M", x, y_of(bucket_max[b]));
    if (bucket_min[b] != bucket_max[b]) d += fmt::format("L{:.1f},{:.1f}", x, y_of(bucket_min[b]));
    pen_down = true;
  }
  return d;
}

std::string trace_svg(const PredictReport& r, const Trace& trace) {
  const Metric kShown[] = {Metric::kGpuUtil,  Metric::kMemUtil, Metric::kPower, Metric::kSmClock,
                           Metric::kMemUsed,  Metric::kHostCpuUtil};
  std::vector<const Channel*> lanes;
  for (Metric m : kShown)
    if (const Channel* c = trace.find(m)) {
      bool any = false;
      for (double v : c->values) any |= std::isfinite(v);
      if (any) lanes.push_back(c);
    }
  const double t0 = 0;
  const double t1 = std::max(trace.duration_s(), 1e-6);
  const double height = lanes.size() * (kLaneHeight + kLaneGap) + 30;
  const double width = kLeftMargin + kChartWidth + 20;
  auto x_of = [&](double t) { return kLeftMargin + (t - t0) / (t1 - t0) * (kChartWidth - 1); };

  std::string svg = fmt::format(
      R"(<svg id="trace-chart" viewBox="0 0 {0:.0f} {1:.0f}" width="{0:.0f}" height="{1:.0f}" role="img" aria-label="trace channels with detected epochs">)",
      width, height);
  const double plot_bottom = lanes.size() * (kLaneHeight + kLaneGap);
  // Detected epochs: alternating shaded spans, a line at every boundary.
  const auto& epochs = r.source.detected.epochs;
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const double xa = x_of(epochs[i].start_s), xb = x_of(epochs[i].end_s);
    svg += fmt::format(
        R"(<rect class="epoch-span" x="{:.1f}" y="0" width="{:.1f}" height="{:.0f}" fill="{}"><title>epoch {}: {:.2f} s to {:.2f} s</title></rect>)",
        xa, std::max(xb - xa, 0.5), plot_bottom, i % 2 == 0 ? "#e8f0fb" : "#f4f8fd", i + 1, epochs[i].start_s,
        epochs[i].end_s);
  }
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    svg += fmt::format(R"(<line class="epoch-marker" x1="{0:.1f}" x2="{0:.1f}" y1="0" y2="{1:.0f}" stroke="#2a7d2a" stroke-width="1.5"/>)",
                       x_of(epochs[i].start_s), plot_bottom);
    if (i + 1 == epochs.size())
      svg += fmt::format(R"(<line class="epoch-marker" x1="{0:.1f}" x2="{0:.1f}" y1="0" y2="{1:.0f}" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="4 3"/>)",
                         x_of(epochs[i].end_s), plot_bottom);
  }
  const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#d62728"};
  for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
    const Channel& c = *lanes[lane];
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : c.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    const MetricInfo& mi = info(c.metric);
    if (mi.unit == "%") lo = 0, hi = std::max(hi, 100.0);
    const double drawn_lo = hi > lo ? lo : lo - 1, drawn_hi = hi > lo ? hi : hi + 1;  // a constant mid-lane
    const double y0 = lane * (kLaneHeight + kLaneGap) + 4;
    svg += fmt::format(R"(<g class="channel" data-channel="{}">)", mi.tag);
    svg += fmt::format(R"(<text x="4" y="{:.0f}" font-size="12" fill="#333">{}</text>)", y0 + 14, html_escape(mi.tag));
    svg += fmt::format(R"(<text x="4" y="{:.0f}" font-size="10" fill="#777">{:.4g} to {:.4g} {}</text>)", y0 + 30, lo,
                       hi, html_escape(mi.unit));
    svg += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="{:.0f}" height="{:.0f}" fill="none" stroke="#ccc"/>)",
                       kLeftMargin, y0, kChartWidth, kLaneHeight);
    svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="1.2"/>)",
                       channel_path(trace.time_s, c.values, t0, t1, drawn_lo, drawn_hi, y0, trace.median_interval_s()),
                       kColors[lane % 6]);
    svg += "</g>";
  }
  // Time axis: five ticks.
  for (int i = 0; i <= 4; ++i) {
    const double t = t0 + (t1 - t0) * i / 4;
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.0f}" font-size="11" fill="#555" text-anchor="middle">{}</text>)",
                       x_of(t), plot_bottom + 16, html_escape(format_duration(t)));
  }
  svg += "</svg>";
  return svg;
}

std::string prediction_svg(const PredictReport& r) {
  const double row_height = 26;
  const double label_width = 190;
  const double bar_area = 640;
  const double height = r.predictions.size() * row_height + 40;
  double max_s = 0;
  for (const auto& p : r.predictions)
    max_s = std::max({max_s, std::isfinite(p.epoch_s) ? p.epoch_s : 0.0,
                      std::isfinite(p.interval_hi_s) ? p.interval_hi_s : 0.0});
  if (max_s <= 0) max_s = 1;
  auto x_of = [&](double s) { return label_width + s / max_s * bar_area; };
  std::string svg = fmt::format(
      R"(<svg id="prediction-chart" viewBox="0 0 {0:.0f} {1:.0f}" width="{0:.0f}" height="{1:.0f}" role="img" aria-label="predicted epoch time per GPU">)",
      label_width + bar_area + 110, height);
  for (std::size_t i = 0; i < r.predictions.size(); ++i) {
    const GpuPrediction& p = r.predictions[i];
    const double y = 10 + i * row_height;
    const char* fill = p.measured ? "#2a7d2a" : (p.in_training_data ? "#3b6fb6" : "#9db6da");
    svg += fmt::format(R"(<text x="{:.0f}" y="{:.1f}" font-size="13" text-anchor="end" fill="#222">{}</text>)",
                       label_width - 8, y + 15, html_escape(p.gpu_name.empty() ? p.gpu : p.gpu_name));
    svg += fmt::format(
        R"(<rect class="bar{}" data-gpu="{}" data-epoch-s="{:.6g}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>{}: {}</title></rect>)",
        p.measured ? " measured" : "", html_escape(p.gpu), p.epoch_s, label_width, y + 3,
        std::max(x_of(p.epoch_s) - label_width, 1.0), row_height - 8, fill, html_escape(p.gpu),
        html_escape(format_duration(p.epoch_s)));
    if (!p.measured && std::isfinite(p.interval_lo_s) && std::isfinite(p.interval_hi_s)) {
      const double yc = y + row_height / 2 - 1;
      svg += fmt::format(
          R"(<g class="interval" data-gpu="{}"><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111" stroke-width="1.5"/><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111"/><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111"/></g>)",
          html_escape(p.gpu), x_of(p.interval_lo_s), x_of(p.interval_hi_s), yc, yc, x_of(p.interval_lo_s),
          x_of(p.interval_lo_s), yc - 5, yc + 5, x_of(p.interval_hi_s), x_of(p.interval_hi_s), yc - 5, yc + 5);
    }
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" fill="#222">{}{}</text>)",
                       x_of(std::max(p.epoch_s, p.measured ? p.epoch_s : p.interval_hi_s)) + 6, y + 15,
                       html_escape(format_duration(p.epoch_s)), p.measured ? " (measured)" : "");
  }
  const double axis_y = 10 + r.predictions.size() * row_height + 4;
  svg += fmt::format(R"(<line x1="{0:.0f}" x2="{1:.0f}" y1="{2:.0f}" y2="{2:.0f}" stroke="#999"/>)", label_width,
                     label_width + bar_area, axis_y);
  for (int i = 0; i <= 4; ++i)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.0f}" font-size="11" fill="#555" text-anchor="middle">{}</text>)",
                       x_of(max_s * i / 4), axis_y + 15, html_escape(format_duration(max_s * i / 4)));
  svg += "</svg>";
  return svg;
}

}  // namespace

std::string render_html(const PredictReport& r, const Trace& trace) {
  std::string h;
  h.reserve(64 * 1024);
  const std::string title = fmt::format("epochcast: {}", r.source.trace);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += fmt::format("<title>{}</title>", html_escape(title));
  h += R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right}.muted{color:#777}#warnings li{color:#8a5300}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px -2px 12px}
</style></head><body>)";
  h += fmt::format("<h1>Epoch time of <code>{}</code> on every GPU type</h1>", html_escape(r.source.trace));
  h += fmt::format(R"(<p id="source">Recorded on <b>{}</b> ({}){}. Detected: {}. Model: {}.</p>)",
                   html_escape(r.source.gpu_name), html_escape(r.source.gpu),
                   r.source.gpu_name_in_trace.empty() ? " [given with --source-gpu]" : "",
                   html_escape(detection_line(r.source.detected)), html_escape(r.model));

  h += "<h2>Warnings</h2>";
  if (r.warnings.empty()) {
    h += R"(<ul id="warnings" class="muted"><li>none</li></ul>)";
  } else {
    h += R"(<ul id="warnings">)";
    for (const auto& w : r.warnings) h += fmt::format("<li>{}</li>", html_escape(w));
    h += "</ul>";
  }

  h += "<h2>Trace and detected epochs</h2>";
  h += R"(<p class="muted">Each lane is one channel, scaled to its own range; shaded spans are the detected epochs (green line: epoch start, red dashed: end of the last epoch).</p>)";
  h += trace_svg(r, trace);

  h += "<h2>Predicted epoch time, fastest first</h2>";
  h += R"(<p class="legend muted"><span style="background:#2a7d2a"></span>measured on the source GPU<span style="background:#3b6fb6"></span>predicted, GPU in training data<span style="background:#9db6da"></span>predicted, GPU not in training data; whiskers: 90 % interval</p>)";
  h += prediction_svg(r);

  h += fmt::format("<h2>Cost per epoch and for {} epochs (on demand)</h2>", r.epochs);
  h += R"(<table id="cost-table"><thead><tr><th class="n">rank</th><th>GPU</th><th>provider</th><th>instance</th><th>region</th><th class="n">$/GPU-hour</th><th class="n">epoch</th><th class="n">$/epoch</th>)";
  h += fmt::format(R"(<th class="n">$ for {} epochs</th><th>price as of</th></tr></thead><tbody>)", r.epochs);
  int rank = 0;
  for (const auto& row : rank_by_cost(r)) {
    const InstanceCost& c = *row.instance;
    h += fmt::format(
        R"(<tr data-gpu="{}"><td class="n">{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td></tr>)",
        html_escape(row.prediction->gpu), ++rank, html_escape(row.prediction->gpu), html_escape(c.provider),
        html_escape(c.instance), c.gpu_count > 1 ? fmt::format(" (1/{})", c.gpu_count) : "", html_escape(c.region),
        format_usd(c.gpu_share_usd_h), html_escape(format_duration(row.prediction->epoch_s)),
        format_usd(c.usd_per_epoch), format_usd(c.usd_total), html_escape(c.as_of));
  }
  h += "</tbody></table>";
  std::vector<std::string> unpriced;
  for (const auto& p : r.predictions)
    if (p.instances.empty()) unpriced.push_back(p.gpu);
  if (!unpriced.empty())
    h += fmt::format(R"(<p class="muted">No attributable price for: {}.</p>)", html_escape(fmt::format("{}", fmt::join(unpriced, ", "))));

  h += R"(<h2>Model validation</h2><section id="validation">)";
  const ModelValidation& v = r.validation;
  if (!v.available || v.protocols.empty()) {
    h += R"(<p class="muted">No validation figures are available for this model.</p>)";
  } else {
    h += R"(<table class="scores"><thead><tr><th>protocol</th><th class="n">pairs</th><th class="n">MAPE</th><th class="n">median APE</th><th class="n">p90 APE</th><th class="n">90 % interval coverage</th></tr></thead><tbody>)";
    for (const auto& p : v.protocols)
      h += fmt::format(
          R"(<tr><td>{}</td><td class="n">{}</td><td class="n">{:.1f} %</td><td class="n">{:.1f} %</td><td class="n">{:.1f} %</td><td class="n">{}</td></tr>)",
          html_escape(p.protocol), p.pairs, p.mape_pct, p.median_ape_pct, p.p90_ape_pct,
          p.interval_coverage_pct ? fmt::format("{:.1f} %", *p.interval_coverage_pct) : "-");
    h += "</tbody></table>";
    std::set<std::string> gpus;
    for (const auto& p : v.protocols)
      for (const auto& [gpu, mape] : p.per_target_gpu_mape_pct) gpus.insert(gpu);
    if (!gpus.empty()) {
      h += R"(<table class="per-gpu"><thead><tr><th>target GPU</th>)";
      for (const auto& p : v.protocols) h += fmt::format(R"(<th class="n">{} MAPE</th>)", html_escape(p.protocol));
      h += "</tr></thead><tbody>";
      for (const auto& gpu : gpus) {
        h += fmt::format("<tr><td>{}</td>", html_escape(gpu));
        for (const auto& p : v.protocols) {
          const auto it = p.per_target_gpu_mape_pct.find(gpu);
          h += it == p.per_target_gpu_mape_pct.end() ? std::string(R"(<td class="n">-</td>)")
                                                     : fmt::format(R"(<td class="n">{:.1f} %</td>)", it->second);
        }
        h += "</tr>";
      }
      h += "</tbody></table>";
    }
  }
  if (!v.note.empty()) h += fmt::format(R"(<p class="muted">{}</p>)", html_escape(v.note));
  if (!r.uncertainty.empty()) {
    h += R"(<p>Intervals were widened for:</p><ul id="uncertainty">)";
    for (const auto& u : r.uncertainty)
      h += fmt::format("<li>{} (×{:.2f})</li>", html_escape(u.reason), std::exp(u.log_half_width));
    h += "</ul>";
  }
  h += "</section>";
  h += fmt::format(R"(<p class="muted">epochcast {}; trace format {}, {} samples over {}.</p>)", EPOCHCAST_VERSION,
                   html_escape(trace.format), trace.size(), html_escape(format_duration(trace.duration_s())));
  h += "</body></html>\n";
  return h;
}

void write_html_report(const std::string& path, const PredictReport& report, const Trace& trace) {
  const std::string html = render_html(report, trace);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write HTML report '{}': {}", path, std::strerror(errno)));
  out << html;
  out.close();
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write HTML report '{}': {}", path, std::strerror(errno)));
}

}  // namespace epochcast
