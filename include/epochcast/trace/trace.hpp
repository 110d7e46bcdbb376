// Trace: what every metric source produces. One GPU's channels on one time axis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochcast/core/metric.hpp"

namespace epochcast {

// One channel: a metric's samples in the metric table's canonical unit.
// values.size() == Trace::time_s.size(); a missing sample is NaN.
struct Channel {
  Metric metric;
  std::vector<double> values;
};

struct GpuIdentity {
  int index = -1;        // as the source numbers it; -1 unknown
  std::string name;      // as the source spells it: "NVIDIA H200", "Tesla T4"
  std::string uuid;      // "GPU-…", may be empty
};

// Where the time axis came from. A log without timestamps is placed on a grid of its sampling
// interval; when neither the user (--interval) nor the log (dcgmi `-d MS` in a comment, canonical
// `interval_ms=`) states it, 1 s is assumed, and every period and price scales with that guess
// (dcgmi dmon -d 100: a 10x wrong answer), so `predict` refuses such a trace.
enum class TimeAxis : std::uint8_t {
  kTimestamps,       // the source's own timestamps
  kStatedInterval,   // no timestamps; the interval was given (--interval) or written in the log
  kAssumedInterval,  // no timestamps and no stated interval: kAssumedIntervalS was guessed
};
inline constexpr double kAssumedIntervalS = 1.0;  // nvidia-smi -l and dcgmi dmon's default (1000 ms)

// What a reader saw and did, besides the samples: counted, never silent.
struct TraceDiagnostics {
  TimeAxis time_axis = TimeAxis::kTimestamps;
  double interval_s = 0;                // kStatedInterval / kAssumedInterval: the grid step used
  struct Skip {
    std::uint64_t line;   // 1-based line in the source, 0 if not line-based
    std::string reason;   // "wrong column count (12, expected 15)"
  };
  std::uint64_t rows_read = 0;          // data rows accepted
  std::uint64_t rows_skipped = 0;       // data rows dropped (see skips)
  std::vector<Skip> skips;              // the first few skipped rows with reasons (capped)
  std::uint64_t repeated_timestamps = 0;
  std::uint64_t backward_steps = 0;     // clock stepped back: later samples re-based
  std::uint64_t midnight_rollovers = 0;
  std::uint64_t gaps = 0;               // intervals > 3 x median interval
  std::uint64_t impossible_values = 0;  // readings outside the metric's physical limits, stored as NaN
  bool truncated_last_line = false;     // a last line cut mid-write was dropped
  std::vector<std::string> warnings;    // human-readable, one per distinct issue
};

struct Trace;

// Readings outside the metric table's physical limits (utilisation 250 %, negative power) are
// stored as missing by every reader. This counts them per metric and keeps the first one's
// place ("line 12, field 'utilization.gpu [%]'", a sample time) and text, for the warnings.
class ImpossibleValues {
 public:
  // The caller has found `plausible(m, v)` false and stores NaN.
  void record(Metric m, double v, std::string_view text, const std::string& where);
  [[nodiscard]] std::uint64_t total() const { return total_; }
  // Adds the count to trace.diagnostics.impossible_values and one warning per metric naming
  // `source`, the limits, the first place and value; a channel left with no value at all is
  // said to be missing because of it.
  void report(const std::string& source, Trace& trace) const;

 private:
  struct PerMetric {
    std::uint64_t count = 0;
    std::string first_where, first_text;
  };
  std::vector<std::pair<Metric, PerMetric>> by_metric_;
  std::uint64_t total_ = 0;
};

struct Trace {
  std::string source;                 // file path or URL it came from
  std::string format;                 // "nvidia-smi", "dcgmi", "canonical", "prometheus", "nvml"
  GpuIdentity gpu;                    // the GPU these samples belong to
  std::vector<GpuIdentity> gpus_in_source;  // every GPU the source held (selection is ours)
  std::string first_timestamp;        // first sample's timestamp exactly as the source wrote it
  double start_unix_s = 0;            // first sample as Unix seconds (local wall time resolved)
  std::vector<double> time_s;         // seconds since the first sample, non-decreasing
  std::vector<Channel> channels;      // at most one per Metric
  TraceDiagnostics diagnostics;
  // Where the job itself said an epoch ended (a tracker export's epoch counter changed), seconds
  // on time_s; empty when the source carries none. Ground truth beside detection (--epochs-from markers).
  std::vector<double> epoch_markers_s;

  [[nodiscard]] std::size_t size() const { return time_s.size(); }
  [[nodiscard]] const Channel* find(Metric m) const;
  [[nodiscard]] Channel* find(Metric m);
  // Adds (or returns the existing) channel, sized to time_s and filled with NaN.
  // Adding a channel may move the others: don't hold a Channel& across calls.
  Channel& channel(Metric m);
  [[nodiscard]] double duration_s() const { return time_s.empty() ? 0.0 : time_s.back(); }
  [[nodiscard]] double median_interval_s() const;
  [[nodiscard]] double max_interval_s() const;
};

}  // namespace epochcast
