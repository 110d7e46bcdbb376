// The arbitration among the proposers (docs/detection.md "Whole-region search", 5, and
// "Method" 7-10): first the autocorrelation's answer, or the boundary events' or the edge
// chain's where it falls short; then the whole-region search's verdict on that answer.
#pragma once

#include <string_view>

#include <string>
#include <vector>

#include "acf_proposer.hpp"
#include "region_proposer.hpp"

namespace epochcast::detail {

// The other proposers' answer. `seg` carries what is known already (first timestamp, interval,
// training region); `notes` the remarks so far (the events' and chain's suggestions are added).
// Without `consult_others` (the second round) only the autocorrelation speaks.
Segmentation pick_proposal(const ProposerInput& in, const AcfProposal& acf, std::vector<std::string>& notes,
                           bool consult_others, Segmentation seg);

// The whole-region search's verdict on `e`, the other proposers' answer: confirmed, agreeing,
// or no period.
Segmentation arbitrate(Segmentation e, const RegionProposal& region, const DetectOptions& options, double dt);

// The reason of an answer the whole-region search gave alone (beyond both nulls' tails).
inline constexpr std::string_view kSearchAloneReason = "the whole-region search alone: ";
inline bool is_search_alone_answer(const Segmentation& s) {
  return s.found && std::string_view(s.reason).substr(0, kSearchAloneReason.size()) == kSearchAloneReason;
}

}  // namespace epochcast::detail
