// epochcast's canonical CSV and host CSVs.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::equals_ci;
using detail::kNaN;
using detail::printable;
using detail::starts_with_ci;
using detail::trim;

void TraceParser::canonical_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (t[0] == '#') {
    if (starts_with_ci(t, "# epochcast-trace")) {
      const std::string_view version = trim(t.substr(17));
      if (!version.empty() && version != "v1")
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("epochcast trace version '{}' is newer than this reader (v1)", printable(version)),
                    SourceLocation{file_, line_no_, 1, "(header)"});
      return;
    }
    // "# gpu_index=0 gpu_name=NVIDIA H200 gpu_uuid=GPU-…": values run to the next key.
    static constexpr std::string_view kKeys[] = {"gpu_index=", "gpu_name=", "gpu_uuid=", "interval_ms="};
    for (std::string_view key : kKeys) {
      const std::size_t at = t.find(key);
      if (at == std::string_view::npos) continue;
      std::size_t end = t.size();
      for (std::string_view other : kKeys) {
        const std::size_t o = t.find(other, at + key.size());
        if (o != std::string_view::npos && o < end) end = o;
      }
      const std::string_view value = trim(t.substr(at + key.size(), end - at - key.size()));
      if (key == "gpu_index=") (void)detail::parse_int(value, meta_gpu_index_);
      else if (key == "gpu_name=") meta_gpu_name_ = std::string(value);
      else if (key == "gpu_uuid=") meta_gpu_uuid_ = std::string(value);
      else if (double ms = 0; detail::parse_double(value, ms) && ms > 0 && !options_.interval_s)
        options_.interval_s = ms / 1000.0;
    }
    return;
  }
  if (!header_done_) {
    canonical_header(text);
    return;
  }
  if (trim(text) == header_text_) {
    ++repeated_headers_;
    return;
  }
  canonical_row(text);
}

void TraceParser::canonical_header(std::string_view text) {
  header_text_ = std::string(trim(text));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  split_csv(text, true);
  const std::vector<std::string_view> fields = fields_;
  // A host CSV (dstat-like sampler) names its columns without the host_ prefix.
  const bool host = host_ || std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
                      return trim(f) == "cpu_util_pct";
                    });
  std::vector<std::string> ignored, gpu_in_host;
  bool has_timestamp = false;
  for (std::string_view raw : fields) {
    const std::string_view name = trim(raw);
    Column col;
    col.name = std::string(name);
    std::optional<Metric> m;
    if (name == "timestamp") {
      col.kind = ColumnKind::kTimestamp;
      has_timestamp = true;
    } else if (name == "gpu_index") {
      col.kind = ColumnKind::kIndex;
    } else if (name == "gpu_name") {
      col.kind = ColumnKind::kName;
    } else if (name == "gpu_uuid") {
      col.kind = ColumnKind::kUuid;
    } else if (host && name == "cpu_util_pct") {
      m = Metric::kHostCpuUtil;
    } else if (host && name == "mem_used_mib") {
      m = Metric::kHostMemUsed;
    } else {
      m = metric_by_tag(name);
      if (!m) ignored.emplace_back(name);
      // A GPU metric in a --host file would replace the GPU's own channel when merged.
      if (m && host_ && !info(*m).host) {
        gpu_in_host.emplace_back(name);
        m.reset();
      }
    }
    if (m) {
      col.kind = ColumnKind::kMetric;
      col.slot = add_metric_slot(*m, name);
      if (col.slot < 0) col.kind = ColumnKind::kIgnored;
    }
    columns_.push_back(std::move(col));
  }
  if (!has_timestamp) fail(1, "timestamp", "the CSV header has no 'timestamp' column");
  if (!ignored.empty())
    warn_once(fmt::format("ignored CSV columns that are not metric tags: {}", detail::name_list(ignored)));
  if (!gpu_in_host.empty())
    warn_once(fmt::format("ignored GPU metric columns in a host CSV (the GPU trace's own are kept): {}",
                          detail::name_list(gpu_in_host)));
  if (metrics_.empty() && host_)
    fail(1, "(header)", "the host CSV names no host metric (cpu_util_pct, mem_used_mib)");
  if (metrics_.empty()) fail(1, "(header)", "the CSV header names no metric tag epochcast reads");
  row_.assign(metrics_.size(), kNaN);
  set_column_limits();
  header_done_ = true;
}

void TraceParser::canonical_row(std::string_view text) {
  split_csv(text, true);
  check_field_count(text, 0, columns_);
  int gpu_index = meta_gpu_index_;
  std::string_view name = meta_gpu_name_, uuid = meta_gpu_uuid_, stamp_text;
  double stamp = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& col = columns_[i];
    const std::string_view f = trim(fields_[i]);
    switch (col.kind) {
      case ColumnKind::kTimestamp:
        stamp_text = f;
        stamp = parse_stamp(fields_[i], col.name, text);
        break;
      case ColumnKind::kIndex:
        if (!f.empty() && (!detail::parse_int(f, gpu_index) || gpu_index < 0))
          fail_at(text, fields_[i], col.name, fmt::format("not a GPU index: '{}'", printable(f)));
        break;
      case ColumnKind::kName:
        if (!f.empty()) name = f;
        break;
      case ColumnKind::kUuid:
        if (!f.empty()) uuid = f;
        break;
      case ColumnKind::kMetric: {
        double v = kNaN;
        if (f.empty() || equals_ci(f, "nan")) {
          ++missing_values_;
        } else if (!detail::parse_double(f, v) || !std::isfinite(v)) {
          fail_at(text, fields_[i], col.name, detail::bad_number(f));
        }
        row_[static_cast<std::size_t>(col.slot)] = checked(col, v);
        break;
      }
      case ColumnKind::kIgnored:
      case ColumnKind::kDate:  // nvidia-smi dmon only
      case ColumnKind::kTime: break;
    }
  }
  commit_row(gpu_index, name, uuid, stamp, stamp_text);
}

}  // namespace epochcast
