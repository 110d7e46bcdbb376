// Segmentation: what epoch detection says about a Trace.
#pragma once

#include <string>
#include <vector>

namespace epochcast {

struct EpochSpan {
  double start_s;  // seconds from the trace's first sample
  double end_s;
};

struct Segmentation {
  bool found = false;
  double period_s = 0;              // mean epoch duration; meaningful only when found
  double confidence = 0;            // 0..1; high means the period is right
  std::vector<EpochSpan> epochs;    // detected epochs in time order
  std::vector<std::string> channels;  // canonical tags of the channels that voted
  std::string reason;               // why found is false, or a note on how it was found
  std::string first_timestamp;      // copied from the Trace
  double interval_s = 0;            // median sampling interval of the Trace

  // Extensions (detect.hpp fills them; zero when unknown).
  double period_samples = 0;        // period in samples of interval_s
  double training_start_s = 0;      // the busy region the detector analysed
  double training_end_s = 0;
  // Best period estimate even when found is false (e.g. only 2 epochs in view); 0 if none.
  double candidate_period_s = 0;
};

}  // namespace epochcast
