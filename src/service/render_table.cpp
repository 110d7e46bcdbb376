// The readable tables of predict: one trace, and a batch of traces one line each.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "epochcast/service/answer.hpp"
#include "epochcast/service/render.hpp"
#include "render_common.hpp"

namespace epochcast {

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

std::string render_table(const PredictReport& r) {
  std::string out;
  const SourceRun& src = r.source;
  out += fmt::format("Trace:    {}\n", src.trace);
  out += fmt::format("Source:   {} ({}){}\n", src.gpu_name, src.gpu,
                     src.gpu_name_in_trace.empty() ? " [from --source-gpu]" : "");
  out += fmt::format("Detected: {}\n", detection_line(src.detected));
  // The answer and the caveat that changes it, before any table or warning (answer.cpp).
  out += fmt::format("Answer:   {}\n", answer_of(r).text);
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
    const Answer s = answer_of(r);
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

}  // namespace epochcast
