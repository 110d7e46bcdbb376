// The live status of `collect`: samples, the first GPU's utilisation and power, and what the
// incremental epoch Detector makes of the trace so far (epochs, period, confidence).
#pragma once

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "epochcast/collect/sampler.hpp"
#include "epochcast/epoch/detect.hpp"

namespace epochcast {

struct StatusSnapshot {
  double elapsed_s = 0;
  std::uint64_t samples = 0;
  double util_pct = NAN;  // NaN: not reported
  double power_w = NAN;
  Segmentation detection;  // the Detector's current estimate
};

// "12 s  480 samples  GPU 99 %  640 W  epochs 3, period 1.05 s (confidence 0.91)"; before a
// period is confirmed "period ~1.05 s? (confidence 0.31)" or "period: —".
[[nodiscard]] std::string format_status(const StatusSnapshot& s);

enum class StatusStyle {
  kTerminal,  // one line rewritten in place ("\r\x1b[K"), a newline at the end
  kLines,     // one line per refresh (logs, pipes: `collect --status`)
};

struct LiveStatusOptions {
  StatusStyle style = StatusStyle::kTerminal;
  std::chrono::milliseconds refresh{1000};
  // The detector's view is bounded: past this many samples, neighbouring samples are averaged
  // in pairs (the series halves, its step doubles), so memory (8192 x 13 channels: 0.9 MB)
  // and detection time stay flat over runs of any length. Detection needs >= 8 samples per
  // epoch; 8192 samples keep that for epochs down to 1/1024 of the run.
  std::size_t max_detector_samples = 8192;
};

// The sampling thread hands each tick over with add() (a copy under a lock); a thread of its
// own, once per refresh, feeds the Detector every channel the trace has and writes the
// status, so detection never delays a tick.
class LiveStatus {
 public:
  // `columns`: the metrics the trace has (Sampler::columns()); all of them feed the Detector.
  LiveStatus(std::vector<Metric> columns, std::ostream& out, LiveStatusOptions options = {});
  ~LiveStatus();  // finish()
  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;

  // Sampling thread: the first GPU the first tick carried is followed.
  void add(const Tick& tick);
  // Any thread: a message line (the status line is cleared first on a terminal).
  void message(const std::string& text);
  // Refreshes once more, stops the thread, ends the status line. Idempotent.
  void finish();

  // What was last shown (tests).
  [[nodiscard]] StatusSnapshot last() const;
  // Samples the Detector holds and how many ticks each one averages (tests; after finish()).
  [[nodiscard]] std::size_t detector_samples() const;
  [[nodiscard]] std::size_t ticks_per_sample() const;

 private:
  struct Row {
    double unix_s;
    double elapsed_s;
    std::vector<double> values;  // by column
  };
  void loop();
  void refresh();  // status thread only
  void write_line(const std::string& line);

  std::vector<Metric> columns_;
  std::ostream& out_;
  LiveStatusOptions options_;
  std::size_t util_col_ = SIZE_MAX, power_col_ = SIZE_MAX;

  mutable std::mutex mutex_;  // pending_, samples_, followed_slot_, last_, stop_, out_
  std::condition_variable wake_;
  std::vector<Row> pending_;
  std::uint64_t samples_ = 0;
  std::size_t followed_slot_ = SIZE_MAX;
  bool stop_ = false;
  bool line_open_ = false;  // a terminal status line is showing
  StatusSnapshot last_;

  // Status thread only (read by the test accessors after finish()).
  std::size_t ticks_per_bin_ = 1;  // the Detector's samples average this many ticks
  std::vector<double> bin_sum_, bin_count_;
  double bin_time_sum_ = 0;
  std::size_t bin_ticks_ = 0;
  std::unique_ptr<Detector> detector_;
  std::thread thread_;
};

}  // namespace epochcast
