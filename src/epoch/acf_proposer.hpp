// The first proposer (docs/detection.md "Method" 4-8): the combined autocorrelation's period,
// its boundaries matched epoch by epoch, and a confidence from the ACF, the boundaries'
// regularity and matched fraction, the epochs they delimit and how much of the evidence goes
// beyond quantisation flicker.
#pragma once

#include <string>
#include <vector>

#include "hypothesis.hpp"
#include "zscore_pyramid.hpp"

namespace epochcast::detail {

struct AcfProposal {
  PeriodHypothesis h;          // ok = false: the autocorrelation has no peak
  bool resolved_span = false;  // its matched boundaries span kMinSpanSamples
  // With look_for_flicker: channels that only toggle between two adjacent readings, listed when
  // the voting evidence is mostly within one reading step (the second round leaves them out).
  std::vector<Metric> flicker;
};

// `notes` gets the remarks for the reason (half period taken, flicker, too short a span).
AcfProposal propose_by_acf(const ProposerInput& in, Analysis& an, std::vector<std::string>& notes,
                           bool look_for_flicker);

}  // namespace epochcast::detail
