// Step 1 of detection (docs/detection.md "Method" 1): every usable channel of a Trace on one
// uniform time grid, implausible readings and gaps repaired. Private to the epoch stage.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "epochcast/core/metric.hpp"
#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Below this many samples nothing can be said (two epochs of the 8-sample floor and their
// edges). Guarded by BadInput.FewerThanMinSamples (23 refused, 24 not).
inline constexpr std::size_t kMinSamples = 24;
// A uniform grid larger than this is refused instead of allocated (~480 MB per channel).
// Guarded by BadInput.HugeTimeSpanIsRefusedNotAllocated.
inline constexpr std::size_t kMaxUniformSamples = 60'000'000;
// Timestamps within this fraction of the median interval of j * dt count as on the grid (the
// trace's own arrays are used in place); no test isolates it (resampled and in-place values of
// the same readings agree to within the timing error).
inline constexpr double kOnGridTolerance = 0.05;
// A resampled sample fills at most 3 grid points, so a grid of more than this many times the
// samples (plus kGapGridSlack) is mostly gaps: refused before it is built.
// Guarded by BadInput.ClockStepOfDaysIsMostlyGapsNotAHugeGrid.
inline constexpr std::size_t kGapGridRatio = 8;
inline constexpr std::size_t kGapGridSlack = 64;
// A channel with more than this fraction missing (NaN or implausible) is dropped with a note.
// Guarded by DetectorThresholds.MoreThanHalfMissingDropsAChannel (40 % kept, 60 % dropped).
inline constexpr double kMaxMissingFraction = 0.5;

// Channels that tell busy from idle, in order of preference (the training region).
inline constexpr std::array<Metric, 4> kActivityChannels{Metric::kGpuUtil, Metric::kPower, Metric::kSmActive,
                                                         Metric::kGrEngineActive};
// Channels that fall when the GPU does less work (boundary events, the edge chain).
inline constexpr std::array<Metric, 8> kDipChannels{Metric::kGpuUtil,      Metric::kMemUtil,   Metric::kPower,
                                                    Metric::kSmActive,     Metric::kGrEngineActive,
                                                    Metric::kSmOccupancy,  Metric::kTensorActive,
                                                    Metric::kDramActive};

// One channel on the grid.
struct Uniform {
  Metric metric;
  std::span<const double> values;  // on the uniform grid, gaps filled: `storage` or the trace's own
  std::vector<double> storage;     // only when resampling or repairs were needed
  double missing_fraction = 0;
  std::size_t absurd = 0;
  // The trace's own values, used in place; not yet checked for NaN or implausible readings
  // (checked where they are first read in full, and repaired into `storage` if needed).
  bool unchecked = false;
  double lo = 0, hi = 0;  // plausible range (the metric table's physical limits)
  bool dropped = false;   // more than kMaxMissingFraction missing
};

// The channels that may carry epochs (the metric table's may_carry_epochs rows, in its enum
// order) on j * dt, with the notes of what was repaired or dropped. A reading outside the
// table's physical limits (util 250 %, negative power) is treated as missing and counted; the
// readers do the same, so this only matters for traces built in memory.
struct Grid {
  const Trace* trace = nullptr;
  double dt = 0;          // the median interval
  std::size_t n = 0;      // grid points
  std::size_t n_raw = 0;  // the trace's samples
  bool on_grid = false;   // the trace's samples already sit on the grid (values used in place)
  std::vector<Uniform> channels;
  // Remarks for the reason, in the order they arose (later stages add theirs).
  std::vector<std::string> notes;

  // A copy of the readings, implausible ones as missing, on the grid, gaps filled.
  void repair(Uniform& u);
  // Checks a channel used in place, repairing it when a reading is bad.
  void ensure_checked(Uniform& u);
  // Every channel checked; true when none is left with data.
  bool none_usable();
};

// The reason when no channel has data.
inline constexpr const char* kNoUsableChannel = "no usable channel (utilization, power, clocks, memory) with data";

// `reason` followed by the notes.
std::string with_notes(std::string reason, const std::vector<std::string>& notes);

// Puts the trace on the grid, leaving out `left_out`. False when it cannot (too short, bad
// timestamps, mostly gaps, no usable channel): seg.reason says why. Fills seg.first_timestamp
// and seg.interval_s.
bool build_grid(const Trace& trace, const std::vector<Metric>& left_out, Grid& grid, Segmentation& seg);

}  // namespace epochcast::detail
