// Samples that arrive one value at a time — a (metric, GPU, time) triple per line or JSON point —
// turned into the rows the trace builder (commit_row, build_impl) takes: sorted by GPU and time,
// one row per distinct time. Shared by the exposition, MLflow and query_range readers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::kNaN;

namespace {

// Stable order by (gpu, time). The samples come as sorted runs — a series (JSON), a key (MLflow)
// or every scrape in turn (exposition) — so: a stable counting pass by GPU, then the runs of each
// GPU merged pairwise, O(n log runs). A general stable_sort of 2.8 M samples was a quarter of
// reading a 64 MB query_range answer.
void sort_by_gpu_and_time(std::vector<TraceParser::PivotSample>& v) {
  using Sample = TraceParser::PivotSample;
  std::vector<int> gpus;
  for (const Sample& x : v)
    if (gpus.empty() || gpus.back() != x.gpu)
      if (std::find(gpus.begin(), gpus.end(), x.gpu) == gpus.end()) gpus.push_back(x.gpu);
  std::sort(gpus.begin(), gpus.end());
  std::vector<std::size_t> start(gpus.size() + 1, 0);
  if (gpus.size() > 1) {
    auto bucket = [&](int g) { return static_cast<std::size_t>(std::lower_bound(gpus.begin(), gpus.end(), g) - gpus.begin()); };
    for (const Sample& x : v) ++start[bucket(x.gpu) + 1];
    for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<Sample> out(v.size());
    std::vector<std::size_t> at(start.begin(), start.end() - 1);
    for (const Sample& x : v) out[at[bucket(x.gpu)]++] = x;
    v.swap(out);
  } else {
    start.back() = v.size();
  }
  const auto earlier = [](const Sample& a, const Sample& b) { return a.time_us < b.time_us; };
  for (std::size_t g = 0; g + 1 < start.size(); ++g) {
    std::vector<std::size_t> runs{start[g]};
    for (std::size_t i = start[g] + 1; i < start[g + 1]; ++i)
      if (v[i].time_us < v[i - 1].time_us) runs.push_back(i);
    runs.push_back(start[g + 1]);
    while (runs.size() > 2) {
      std::vector<std::size_t> merged{runs[0]};
      for (std::size_t r = 0; r + 2 < runs.size(); r += 2) {
        std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(runs[r]), v.begin() + static_cast<std::ptrdiff_t>(runs[r + 1]),
                           v.begin() + static_cast<std::ptrdiff_t>(runs[r + 2]), earlier);
        merged.push_back(runs[r + 2]);
      }
      if (runs.size() % 2 == 0) merged.push_back(runs.back());  // an odd run left over
      runs.swap(merged);
    }
  }
}

}  // namespace

int TraceParser::pivot_slot(Metric m, std::string_view source_name) {
  for (const auto& [slot, metric] : pivot_slot_of_)
    if (metric == m) return slot;
  const int slot = add_metric_slot(m, source_name);
  if (slot < 0) return -1;
  Column col;
  col.kind = ColumnKind::kMetric;
  col.name = std::string(source_name);
  col.slot = slot;
  col.canonical_unit = std::string(info(m).unit);
  columns_.push_back(std::move(col));
  set_column_limits();
  pivot_slot_of_.emplace_back(slot, m);
  header_done_ = true;
  return slot;
}

void TraceParser::pivot_identity(int gpu, std::string_view name, std::string_view uuid) {
  for (auto& [g, id] : pivot_ids_)
    if (g == gpu) {
      if (id.first.empty()) id.first = std::string(name);
      if (id.second.empty()) id.second = std::string(uuid);
      return;
    }
  if (pivot_ids_.size() >= 4096)
    fail(1, "(identity)", "more than 4096 distinct GPUs in one trace; not a GPU log");
  pivot_ids_.push_back({gpu, {std::string(name), std::string(uuid)}});
}

void TraceParser::pivot_add(int gpu, std::int64_t time_us, int slot, double value) {
  // A host sample (CPU of the machine) belongs to every GPU's row at its time.
  if (gpu < 0 && info(metrics_[static_cast<std::size_t>(slot)]).host) pivot_host_.push_back({gpu, time_us, slot, value});
  else pivot_.push_back({gpu, time_us, slot, value});
}

double TraceParser::unix_stamp(double unix_s) {
  if (!time_kind_set_) {
    time_kind_ = detail::TimeKind::kUnix;
    time_kind_set_ = true;
  }
  if (!base_set_) {
    base_s_ = static_cast<std::int64_t>(std::floor(unix_s));
    base_set_ = true;
  }
  return unix_s - static_cast<double>(base_s_);
}

void TraceParser::pivot_commit() {
  std::stable_sort(pivot_host_.begin(), pivot_host_.end(),
                   [](const PivotSample& a, const PivotSample& b) { return a.time_us < b.time_us; });
  if (pivot_.empty()) pivot_.swap(pivot_host_);  // host metrics only: they are the rows
  sort_by_gpu_and_time(pivot_);
  fields_.clear();
  row_field_offset_ = 0;
  std::size_t i = 0;
  std::string stamp_text;
  int text_gpu = -2;
  while (i < pivot_.size()) {
    const int gpu = pivot_[i].gpu;
    const std::int64_t t = pivot_[i].time_us;
    row_.assign(metrics_.size(), kNaN);
    impossible_in_row_ = false;
    auto host = std::lower_bound(pivot_host_.begin(), pivot_host_.end(), t,
                                 [](const PivotSample& a, std::int64_t time) { return a.time_us < time; });
    for (; host != pivot_host_.end() && host->time_us == t; ++host)
      row_[static_cast<std::size_t>(host->slot)] = host->value + 0.0;
    for (; i < pivot_.size() && pivot_[i].gpu == gpu && pivot_[i].time_us == t; ++i) {
      const PivotSample& p = pivot_[i];
      double v = p.value + 0.0;  // -0 reads as 0
      const Metric m = metrics_[static_cast<std::size_t>(p.slot)];
      if (!plausible(m, v)) impossible_in_row_ = true;
      row_[static_cast<std::size_t>(p.slot)] = v;
    }
    std::string_view name, uuid;
    for (const auto& [g, id] : pivot_ids_)
      if (g == gpu) {
        name = id.first;
        uuid = id.second;
      }
    const double stamp = static_cast<double>(t) / 1e6;
    // Only a GPU's first row keeps its text (Trace::first_timestamp): rows come GPU by GPU.
    const bool first_of_gpu = gpu != text_gpu || stamp_text.empty();
    if (first_of_gpu) {
      text_gpu = gpu;
      stamp_text = have_timestamps_ ? format_iso8601_utc(static_cast<double>(base_s_) + stamp) : std::string("0");
    }
    commit_row(gpu, name, uuid, stamp, stamp_text);
  }
  pivot_.clear();
  pivot_.shrink_to_fit();
  pivot_host_.clear();
}

}  // namespace epochcast
