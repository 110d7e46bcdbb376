#include "job_split.hpp"
#include "epochcast/core/nan.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "epochcast/trace/read.hpp"

namespace epochcast::fleet {

namespace {
constexpr auto kIdleGapMs = static_cast<std::int64_t>(kIdleGapS * 1000);

// 1: busy, 0: idle, -1: unknown (no utilisation in this row).
int activity(const GpuRows& rows, std::size_t i) {
  const auto it = rows.values.find(Metric::kGpuUtil);
  // No utilisation series at all: every row counts as busy (labels and gaps still split).
  if (it == rows.values.end()) return 1;
  const double v = it->second[i];
  if (!std::isfinite(v)) return -1;
  return v >= kIdleUtilPct ? 1 : 0;
}
}  // namespace

void GpuTimeline::open(std::int64_t ms, const Labels& labels, const GpuRows& rows) {
  JobState& job = jobs_.emplace_back();
  job.view.id = fmt::format("{}/{}", uuid_, format_iso8601_utc(static_cast<double>(ms) / 1000).substr(0, 19) + "Z");
  job.view.labels = labels;
  job.view.start_unix_s = static_cast<double>(ms) / 1000;
  // Named after the job: the job store records it once under this name (job_analysis.cpp).
  job.trace.source = fmt::format("{} job {}", source_, job.view.id);
  job.trace.format = "prometheus";
  job.trace.gpu.uuid = uuid_;
  job.trace.gpu.name = rows.model_name;
  int index = -1;
  std::from_chars(rows.gpu.data(), rows.gpu.data() + rows.gpu.size(), index);
  job.trace.gpu.index = index;
  job.trace.start_unix_s = job.view.start_unix_s;
  job.trace.first_timestamp = format_iso8601_utc(job.view.start_unix_s);
  job.last_busy_ms = ms;
  open_ = &job;
}

void GpuTimeline::append(const GpuRows& rows, std::size_t i) {
  JobState& job = *open_;
  Trace& t = job.trace;
  if (t.size() >= kMaxJobRows + kMaxJobRows / 10) {
    // Keep the newest kMaxJobRows: the start moves, the times are re-based on it.
    const std::size_t drop = t.size() - kMaxJobRows;
    const double shift = t.time_s[drop];
    t.time_s.erase(t.time_s.begin(), t.time_s.begin() + static_cast<std::ptrdiff_t>(drop));
    for (double& s : t.time_s) s -= shift;
    for (Channel& ch : t.channels) ch.values.erase(ch.values.begin(), ch.values.begin() + static_cast<std::ptrdiff_t>(drop));
    t.start_unix_s += shift;
    t.first_timestamp = format_iso8601_utc(t.start_unix_s);
    job.last_busy_row = job.last_busy_row >= drop ? job.last_busy_row - drop : 0;
    job.rows_at_analysis = job.rows_at_analysis >= drop ? job.rows_at_analysis - drop : 0;
  }
  t.time_s.push_back(static_cast<double>(rows.ms[i]) / 1000 - t.start_unix_s);
  for (Channel& ch : t.channels) ch.values.push_back(kNaN);
  for (const auto& [m, col] : rows.values)
    if (std::isfinite(col[i])) t.channel(m).values.back() = col[i];
  job.last_ms = rows.ms[i];
  ++job.view.samples;
}

void GpuTimeline::close() {
  if (!open_) return;
  JobState& job = *open_;
  // An idle tail is not the job's: keep the rows up to its last busy one.
  Trace& t = job.trace;
  const std::size_t keep = std::min(t.size(), job.last_busy_row + 1);
  if (keep < t.size()) {
    job.view.samples -= t.size() - keep;
    t.time_s.resize(keep);
    for (Channel& ch : t.channels) ch.values.resize(keep);
  }
  job.view.end_unix_s = static_cast<double>(job.last_busy_ms) / 1000;
  job.ended = true;
  open_ = nullptr;
}

std::size_t GpuTimeline::add(const GpuRows& rows) {
  std::size_t taken = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int64_t ms = rows.ms[i];
    if (ms <= last_ms_) continue;  // read before (a window's border)
    last_ms_ = ms;
    ++taken;
    const Labels& labels = rows.label_sets[rows.label_set[i]];
    const int busy = activity(rows, i);
    if (open_ && (open_->view.labels != labels || ms - open_->last_ms >= kIdleGapMs)) close();
    if (!open_) {
      if (busy != 1) continue;  // idle, no job
      open(ms, labels, rows);
    }
    append(rows, i);
    JobState& job = *open_;
    if (busy == 1) {
      job.idle_since_ms = -1;
      job.last_busy_ms = ms;
      job.last_busy_row = job.trace.size() - 1;
    } else if (busy == 0) {
      if (job.idle_since_ms < 0) job.idle_since_ms = ms;
      if (ms - job.idle_since_ms >= kIdleGapMs) close();
    }
  }
  return taken;
}

void GpuTimeline::close_if_silent(std::int64_t read_to_ms) {
  if (open_ && read_to_ms - open_->last_ms >= kIdleGapMs) close();
}

void GpuTimeline::forget_ended_before(std::int64_t before_ms) {
  // jobs_ is oldest first and the open job is last: pop from the front only.
  while (!jobs_.empty() && jobs_.front().ended && jobs_.front().view.end_unix_s &&
         *jobs_.front().view.end_unix_s * 1000 < static_cast<double>(before_ms))
    jobs_.pop_front();
}

}  // namespace epochcast::fleet
