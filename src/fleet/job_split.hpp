// One GPU's history split into jobs: a job starts at a busy sample and ends where its pod /
// namespace / container labels change, where the GPU stays idle for kIdleGapS, or where its
// series hold no sample for kIdleGapS (a vanished series that comes back later is a new job).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/trace/trace.hpp"
#include "gpu_samples.hpp"

namespace epochcast::fleet {

// Below this utilisation a sample is idle: dcgm-exporter reports 0-2 % on an idle GPU, and a
// training step keeps it far above (WatchFleet.DiscoversEveryGpuAndSplitsJobs: the idle GPU has no job).
inline constexpr double kIdleUtilPct = 5;
// An idle (or silent) stretch this long ends the job: longer than an evaluation or checkpoint
// pause, shorter than a pod's rescheduling (JobSplit.LabelChangeIdleGapAndSilence; in
// WatchFleet.DiscoversEveryGpuAndSplitsJobs 15 min idle splits, 4 min without samples does not).
inline constexpr double kIdleGapS = 600;
// A job's trace keeps its newest rows up to this (a day at 1 s): bounded memory per job.
inline constexpr std::size_t kMaxJobRows = 86400;

struct JobState {
  JobView view;                 // what the snapshot shows
  Trace trace;                  // the job's rows (cleared once ended and analysed)
  std::int64_t last_ms = 0;     // last row
  std::int64_t last_busy_ms = 0;
  std::size_t last_busy_row = 0;  // rows up to here are kept when the job ends idle
  std::int64_t idle_since_ms = -1;
  std::size_t rows_at_analysis = 0;
  bool ended = false;
  bool final_analysis_done = false;
};

class GpuTimeline {
 public:
  GpuTimeline(std::string uuid, std::string source) : uuid_(std::move(uuid)), source_(std::move(source)) {}

  // Appends the rows after the last one taken; returns the rows taken.
  std::size_t add(const GpuRows& rows);
  // Ends the open job when nothing arrived for kIdleGapS up to `read_to_ms`.
  void close_if_silent(std::int64_t read_to_ms);
  // Forgets ended jobs that ended before `before_ms`.
  void forget_ended_before(std::int64_t before_ms);

  [[nodiscard]] std::deque<JobState>& jobs() { return jobs_; }
  [[nodiscard]] const std::deque<JobState>& jobs() const { return jobs_; }
  [[nodiscard]] bool busy() const { return open_ != nullptr; }

 private:
  void open(std::int64_t ms, const Labels& labels, const GpuRows& rows);
  void close();
  void append(const GpuRows& rows, std::size_t i);

  std::string uuid_;
  std::string source_;
  std::deque<JobState> jobs_;
  JobState* open_ = nullptr;
  std::int64_t last_ms_ = INT64_MIN;
};

}  // namespace epochcast::fleet
