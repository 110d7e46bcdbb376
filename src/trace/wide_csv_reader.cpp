// Wide CSVs whose column names say metric and GPU, one time per row:
// - a DCGM_FI_* CSV (a dcgm-exporter log flattened by a script or pandas): columns timestamp,
//   gpu, UUID, modelName and dcgm-exporter names; one GPU per row when a gpu column is present;
// - Grafana "Download CSV" (panel > Inspect > Data, series joined by time): "Time", then one
//   column per series named `DCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="…", …}`; quoted, CRLF, maybe
//   "sep=," first; times "YYYY-MM-DD HH:MM:SS" (formatted) or Unix milliseconds; values maybe
//   with units ("95%", "643 W") when "Formatted data" is on;
// - Weights & Biases system metrics (run.history(stream="events") to CSV, or the UI export):
//   _timestamp (Unix s), _runtime, system.gpu.N.KEY columns, system.cpu; an `epoch` column is the
//   job's own epoch counter: where it changes an epoch ended (Trace::epoch_markers_s).
// Several GPUs in one row become one row per GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::equals_ci;
using detail::kNaN;
using detail::printable;
using detail::trim;

namespace {

// Grafana series names: METRIC{k="v", …} -> the metric name and the labels it carries.
struct SeriesName {
  std::string metric;
  int gpu = -1;
  std::string uuid, model;
};

SeriesName parse_series_name(std::string_view cell) {
  SeriesName out;
  const std::size_t brace = cell.find('{');
  out.metric = std::string(trim(cell.substr(0, brace)));
  if (brace == std::string_view::npos) return out;
  std::string_view rest = cell.substr(brace + 1);
  while (!rest.empty()) {
    const std::size_t eq = rest.find('=');
    if (eq == std::string_view::npos) break;
    const std::string_view key = trim(rest.substr(0, eq));
    std::size_t p = eq + 1;
    while (p < rest.size() && rest[p] == ' ') ++p;
    if (p >= rest.size() || rest[p] != '"') break;
    const std::size_t close = rest.find('"', p + 1);
    if (close == std::string_view::npos) break;
    const std::string_view value = rest.substr(p + 1, close - p - 1);
    if (key == "gpu") (void)detail::parse_int(value, out.gpu);
    else if (key == "UUID") out.uuid = std::string(value);
    else if (key == "modelName") out.model = std::string(value);
    rest = rest.substr(close + 1);
    while (!rest.empty() && (rest.front() == ',' || rest.front() == ' ')) rest.remove_prefix(1);
  }
  return out;
}

bool is_time_name(std::string_view n) {
  return equals_ci(n, "time") || n == "timestamp" || n == "Timestamp" || n == "_timestamp";
}

}  // namespace

void TraceParser::wide_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty() || t[0] == '#') return;
  if (t == "sep=," || t == "sep=;") {
    if (header_done_) fail(1, "(header)", "a 'sep=' line inside the data");
    return;
  }
  if (!header_done_) {
    wide_header(text);
    return;
  }
  if (t == header_text_) {
    ++repeated_headers_;
    return;
  }
  wide_row(text);
}

void TraceParser::wide_header(std::string_view text) {
  header_text_ = std::string(trim(text));
  std::vector<std::string> names;
  detail::split_csv_cells(text, names);
  wide_resolve_columns(names);
}

void TraceParser::wide_resolve_columns(const std::vector<std::string>& names) {
  columns_.clear();
  metrics_.clear();
  wide_.assign(names.size(), WideColumn{});
  busy_slot_ = -1;
  std::vector<std::string> ignored;
  bool has_time = false, has_runtime = false;
  std::vector<int> slot_of_metric(kMetricCount, -1);
  auto slot_for = [&](Metric m, std::string_view name) {
    int& s = slot_of_metric[static_cast<std::size_t>(m)];
    if (s < 0) {
      s = add_metric_slot(m, name);
      Column col;  // one per slot: what the builder checks a row's limits with
      col.kind = ColumnKind::kMetric;
      col.name = std::string(info(m).tag);
      col.slot = s;
      col.canonical_unit = std::string(info(m).unit);
      columns_.push_back(std::move(col));
    }
    return s;
  };
  std::vector<Column> kinds(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    WideColumn& w = wide_[i];
    kinds[i].name = n;
    if (n.empty()) {
      fail(1, "(header)", fmt::format("column {} has no name", i + 1));
    } else if (is_time_name(n)) {
      if (has_time) fail(1, n, "two time columns");
      kinds[i].kind = ColumnKind::kTimestamp;
      has_time = true;
    } else if (format_ == TraceFormat::kWandb && n == "_runtime") {
      kinds[i].kind = ColumnKind::kTime;  // seconds since the run started: the clock when _timestamp is absent
      has_runtime = true;
    } else if (format_ != TraceFormat::kWandb && (n == "gpu" || n == "GPU" || n == "gpu_index")) {
      kinds[i].kind = ColumnKind::kIndex;
    } else if (format_ != TraceFormat::kWandb && (n == "UUID" || n == "uuid")) {
      kinds[i].kind = ColumnKind::kUuid;
    } else if (format_ != TraceFormat::kWandb && (n == "modelName" || n == "name")) {
      kinds[i].kind = ColumnKind::kName;
    } else if (format_ == TraceFormat::kWandb) {
      if (n.ends_with("__MIN") || n.ends_with("__MAX") || n.ends_with("__min") || n.ends_with("__max")) {
        kinds[i].kind = ColumnKind::kIgnored;  // the UI export's band around each line
      } else if (const auto gk = detail::wandb_gpu_column(n)) {
        if (const auto sm = metric_by_wandb_gpu_key(gk->second)) {
          kinds[i].kind = ColumnKind::kMetric;
          kinds[i].header_factor = sm->factor;
          w.gpu = gk->first;
          w.slot = slot_for(sm->metric, n);
        } else {
          ignored.push_back(n);
        }
      } else if (const auto hk = metric_by_tracker_host_key(n.substr(n.rfind(" - ") == std::string::npos ? 0 : n.rfind(" - ") + 3))) {
        kinds[i].kind = ColumnKind::kMetric;
        kinds[i].header_factor = hk->factor;
        w.slot = slot_for(hk->metric, n);
      } else if (n == "epoch" || n.ends_with("/epoch") || n.ends_with(" - epoch")) {
        kinds[i].kind = ColumnKind::kIgnored;
        w.marker = 1;
      } else {
        ignored.push_back(n);
      }
    } else {
      const SeriesName sn = parse_series_name(n);
      if (const auto m = metric_by_dcgm_name(sn.metric)) {
        kinds[i].kind = ColumnKind::kMetric;
        w.gpu = sn.gpu;
        w.slot = slot_for(*m, n);
        if (sn.gpu >= 0) {
          if (std::find(wide_gpus_.begin(), wide_gpus_.end(), sn.gpu) == wide_gpus_.end()) wide_gpus_.push_back(sn.gpu);
          bool known = false;
          for (auto& [g, id] : wide_ids_) known |= g == sn.gpu;
          if (!known) wide_ids_.push_back({sn.gpu, {sn.model, sn.uuid}});
        }
      } else {
        ignored.push_back(n);
      }
    }
    if (w.gpu >= 0 && std::find(wide_gpus_.begin(), wide_gpus_.end(), w.gpu) == wide_gpus_.end())
      wide_gpus_.push_back(w.gpu);
  }
  if (!ignored.empty())
    warn_once(fmt::format("ignored {} columns epochcast has no metric for: {}", to_string(format_), detail::name_list(ignored)));
  if (metrics_.empty()) {
    if (format_ == TraceFormat::kGrafanaCsv)
      fail(1, "(header)",
           "the Grafana CSV's series are not named by metric (legend names?): set the panel's legend to "
           "'{{__name__}}{gpu=\"{{gpu}}\"}' or clear it, so each column reads DCGM_FI_…{gpu=\"N\"}, then download again");
    fail(1, "(header)", fmt::format("the {} header names no metric epochcast reads", to_string(format_)));
  }
  if (!has_time && !has_runtime)
    fail(1, "(header)", format_ == TraceFormat::kWandb ? "no _timestamp or _runtime column: the samples have no time"
                                                       : "no Time/timestamp column: the samples have no time");
  // The slot columns first (commit_row's limits check walks them), then the CSV's columns by kind.
  wide_kinds_ = std::move(kinds);
  wide_row_.assign(names.size(), kNaN);
  row_.assign(metrics_.size(), kNaN);
  set_column_limits();
  header_done_ = true;
}

void TraceParser::wide_row(std::string_view text) {
  split_csv(text, true);
  check_field_count(text, 0, wide_kinds_);
  double stamp = 0;
  std::string_view stamp_text, name, uuid;
  int row_gpu = -1;
  bool stamped = false;
  double runtime = kNaN;
  double marker = kNaN;
  for (std::size_t i = 0; i < wide_.size(); ++i) {
    const Column& k = wide_kinds_[i];
    const std::string_view f = trim(fields_[i]);
    wide_row_[i] = kNaN;
    switch (k.kind) {
      case ColumnKind::kTimestamp: {
        // Unix milliseconds (Grafana with formatting off): 13 digits.
        double v = 0;
        if (!f.empty() && f.find_first_not_of("0123456789") == std::string_view::npos && f.size() >= 12 &&
            detail::parse_double(f, v)) {
          stamp = unix_stamp(v / 1000.0);
        } else if (f.empty()) {
          fail_at(text, fields_[i], k.name, "empty time");
        } else {
          stamp = parse_stamp(fields_[i], k.name, text);
        }
        stamp_text = f;
        stamped = true;
        break;
      }
      case ColumnKind::kTime:
        if (!f.empty() && !detail::parse_double(f, runtime)) fail_at(text, fields_[i], k.name, detail::bad_number(f));
        break;
      case ColumnKind::kIndex:
        if (!detail::parse_int(f, row_gpu) || row_gpu < 0)
          fail_at(text, fields_[i], k.name, fmt::format("not a GPU index: '{}'", printable(f)));
        break;
      case ColumnKind::kUuid: uuid = f; break;
      case ColumnKind::kName: name = f; break;
      case ColumnKind::kMetric: {
        double v = kNaN;
        if (f.empty() || equals_ci(f, "nan") || f == "null" || f == "undefined") {
          ++missing_values_;
          break;
        }
        std::string_view rest;
        if (!detail::parse_leading_double(f, v, rest) || !std::isfinite(v))
          fail_at(text, fields_[i], k.name, detail::bad_number(f));
        rest = trim(rest);
        double factor = k.header_factor;
        if (!rest.empty()) {  // Grafana's formatted data: "95%", "643 W", "1.98 GHz"
          const Metric m = metrics_[static_cast<std::size_t>(wide_[i].slot)];
          const auto u = detail::unit_factor(rest, info(m).unit);
          if (!u)
            fail_at(text, rest, k.name, fmt::format("unknown or wrong unit '{}' (expected {})", printable(rest),
                                                   info(m).unit.empty() ? "no unit" : info(m).unit));
          factor *= *u;
        }
        const double out = v * factor;
        if (!std::isfinite(out)) fail_at(text, fields_[i], k.name, fmt::format("value '{}' is out of range", printable(f)));
        wide_row_[i] = out + 0.0;
        break;
      }
      default:
        if (wide_[i].marker && !f.empty()) {
          if (!detail::parse_double(f, marker)) fail_at(text, fields_[i], k.name, detail::bad_number(f));
        }
        break;
    }
  }
  if (!stamped) {
    if (std::isnan(runtime)) fail(1, "_runtime", "a row without a time");
    stamp = unix_stamp(runtime);  // seconds since the run's start: the axis is right, the date unknown
    warn_once("no _timestamp column: times are _runtime, seconds since the run started (no date)");
  }
  if (!std::isnan(marker)) note_epoch_marker(marker, stamp);
  fields_.clear();  // the limits check quotes values by column; these rows quote the value itself
  auto commit_for = [&](int gpu, std::string_view n, std::string_view u) {
    row_.assign(metrics_.size(), kNaN);
    impossible_in_row_ = false;
    for (std::size_t i = 0; i < wide_.size(); ++i) {
      if (wide_[i].slot < 0 || std::isnan(wide_row_[i])) continue;
      if (wide_[i].gpu >= 0 && wide_[i].gpu != gpu) continue;
      const double v = wide_row_[i];
      if (!plausible(metrics_[static_cast<std::size_t>(wide_[i].slot)], v)) impossible_in_row_ = true;
      row_[static_cast<std::size_t>(wide_[i].slot)] = v;
    }
    commit_row(gpu, n, u, stamp, stamp_text);
  };
  if (wide_gpus_.empty()) {
    commit_for(row_gpu, name, uuid);
    return;
  }
  for (const int g : wide_gpus_) {
    std::string_view n, u;
    for (const auto& [gi, id] : wide_ids_)
      if (gi == g) {
        n = id.first;
        u = id.second;
      }
    commit_for(g, n, u);
  }
}

void TraceParser::note_epoch_marker(double value, double stamp) {
  if (last_marker_value_ >= 0 && value != last_marker_value_) epoch_markers_.push_back(stamp);
  last_marker_value_ = value;
}

}  // namespace epochcast
