// Synthetic training traces with known truth, for tests and the detection benchmark.
#pragma once

#include <cstdint>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

struct SyntheticSpec {
  double interval_s = 0.1;        // sampling interval
  double period_s = 5.0;          // mean epoch duration (boundary to boundary)
  int epochs = 6;
  double period_jitter = 0.01;    // epoch-to-epoch relative std of the duration
  // Boundary signature: a validation/checkpoint pass at the end of each epoch, lasting
  // event_duty * period, during which util drops by event_depth (fraction of busy level),
  // mem util rises, power sags with a lag. event_depth = 0: no signature at all.
  // A negative depth is a rise instead (a launch-bound run at low utilization: validation keeps
  // the GPU busier than the starved training loop).
  double event_duty = 0.06;
  double event_depth = 0.3;
  // Mid-epoch excursions with the boundary event's shape, duration and depth, at random times
  // (per second of training): host hiccups of a launch-bound run look just like its boundaries.
  double bump_rate_per_s = 0;
  bool event_at_start = false;    // a loader start-up at epoch start instead (CPU loader)
  // false: no boundary signature at all, but the mid-epoch bumps above still happen (the null
  // twin of a launch-bound run: truth.has_signature is false).
  bool boundary_signature = true;
  // The driver refreshes utilisation every util_refresh_s (random phase) with the busy fraction
  // since the last refresh; samples in between repeat it. 0: a fresh 0.2 s average per sample.
  double util_refresh_s = 0;
  double power_w_per_util = 5;    // power = 120 W + this * util (with a first-order lag)
  double power_noise_w = -1;      // white noise on power, W; < 0: noise * 500 W
  double power_wander_w = 0;      // slow power wander (AR(1), 2 s time constant), std in W
  double mem_util_scale = 0.5;    // memory utilisation as a fraction of the GPU utilisation
  double busy_util_pct = 98;      // training-phase utilization
  double noise = 0.02;            // white noise std, relative to each channel's busy range
  double spike_rate = 0;          // probability per sample of a single-sample spike
  double drift = 0;               // linear drift over the run, relative to busy range
  double iteration_amp = 0.01;    // iteration-level oscillation amplitude (relative)
  double iteration_s = 0.35;      // its period
  double idle_head_s = 8;         // idle before warm-up
  double warmup_s = 3;            // model build / warm-up bursts before the first epoch
  double idle_tail_s = 3;
  // Busy training-like work between the warm-up and the first epoch's start (first iterations
  // compiling kernels, cudnn autotune): the busy region then starts before the first boundary.
  double lead_in_s = 0;
  double missing_fraction = 0;    // samples dropped (NaN) at random
  double missing_run = 1;         // mean length of a missing run, samples
  double time_jitter = 0;         // sampling-time jitter, std as a fraction of interval_s
  double util_step_pct = 1;       // quantisation of utilization readings (nvidia-smi: 1 %)
  // Prometheus read-back (scrape aliasing): the series above (sampled every interval_s) is
  // scraped every scrape_s with Gaussian jitter (sd scrape_jitter_s per scrape) and read back on
  // a regular scrape_s grid, each grid point taking the last scrape at or before it. Timestamps
  // stay regular; values repeat or are skipped where the jitter crosses the grid. 0: off.
  double scrape_s = 0;
  double scrape_jitter_s = 0;
  double start_unix_s = 1.8e9;
};

struct SyntheticTruth {
  double period_s = 0;                 // mean epoch duration actually generated
  std::vector<EpochSpan> epochs;       // seconds from the first sample
  bool has_signature = true;           // false when event_depth == 0
};

struct SyntheticTrace {
  Trace trace;
  SyntheticTruth truth;
};

// Deterministic for a (spec, seed) pair. Channels: gpu util, mem util, power, SM clock,
// memory used, host CPU util.
[[nodiscard]] SyntheticTrace make_synthetic_trace(const SyntheticSpec& spec, std::uint64_t seed);

}  // namespace epochcast
