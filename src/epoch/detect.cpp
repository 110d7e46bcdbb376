// Epoch period detection: the stages in order and the two rounds. The steps and the reasons for
// each are in docs/detection.md; each stage has its own file (grid, busy_region, zscore_pyramid,
// the proposers acf_proposer, event_proposer, edge_chain, region_proposer, and arbitration).
#include "epochcast/epoch/detect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "acf_periods.hpp"
#include "arbitration.hpp"
#include "detect_internal.hpp"

namespace epochcast {
namespace detail {
namespace {

// One round's evidence: the trace on the grid, its busy region and the z-score analysis.
struct Evidence {
  Grid grid;
  Region region;
  Analysis an;
  double min_lag = 0, max_lag = 0;
  Segmentation seg;  // what is known before any proposer: timestamps, interval, region
};

// Steps 1-3 without the channels in `left_out`. False when the trace says nothing (bad input):
// e.seg is then the answer, with its reason.
bool gather_evidence(const Trace& trace, const DetectOptions& options, const std::vector<Metric>& left_out,
                     Evidence& e) {
  if (!build_grid(trace, left_out, e.grid, e.seg)) return false;
  Grid& grid = e.grid;
  const double dt = grid.dt;
  std::string region_note;
  e.region = options.whole_trace ? Region{0, grid.n} : find_training_region(grid, region_note);
  if (!region_note.empty()) grid.notes.push_back(region_note);
  e.seg.training_start_s = region_start_s(e.region, dt);
  e.seg.training_end_s = region_end_s(e.region, grid.n, dt);
  e.min_lag = std::max({options.min_period_samples, 2.0, options.min_period_s / dt});
  e.max_lag = options.max_period_s > 0 ? options.max_period_s / dt : 0.0;
  if (static_cast<double>(e.region.size()) < 2 * e.min_lag || e.region.size() < kMinSamples) {
    if (grid.none_usable()) {
      e.seg.reason = with_notes(kNoUsableChannel, grid.notes);
      return false;
    }
    e.seg.reason = with_notes(
        fmt::format("busy region too short: {} samples, fewer than two epochs of the shortest period ({:.0f} samples)",
                    e.region.size(), e.min_lag),
        grid.notes);
    return false;
  }
  return build_analysis(grid, e.region, e.an, e.seg);
}

// Steps 4-10 on gathered evidence: the autocorrelation proposes (the others too in the first
// round, where it falls short), then the whole-region search arbitrates.
Segmentation decide(Evidence& e, const AcfProposal& acf, const DetectOptions& options, bool first_round) {
  const ProposerInput in{e.grid, e.region, e.min_lag, e.max_lag, options};
  Segmentation answer = pick_proposal(in, acf, e.grid.notes, first_round, e.seg);
  const RegionProposal region = propose_by_region_search(in, e.an, answer);
  return arbitrate(std::move(answer), region, options, e.grid.dt);
}

}  // namespace

bool set_acf_level_skip(bool on) { return g_acf_level_skip.exchange(on); }
bool set_region_arbitration(bool on) { return g_region_arbitration.exchange(on); }
std::size_t last_skipped_acf_levels() { return t_skipped_acf_levels; }

}  // namespace detail

Segmentation detect_epochs(const Trace& trace, const DetectOptions& options) {
  using namespace detail;
  Evidence first;
  if (!gather_evidence(trace, options, {}, first)) return first.seg;
  const ProposerInput in{first.grid, first.region, first.min_lag, first.max_lag, options};
  const AcfProposal acf = propose_by_acf(in, first.an, first.grid.notes, /*look_for_flicker=*/true);
  if (!acf.flicker.empty()) {
    // Second round: a channel that only toggles between two adjacent readings (a clock stepping
    // 1980 <-> 1965 MHz now and then, resampled by a Prometheus scrape) can outvote the channels
    // that carry the epochs, so look once more without it. A period the autocorrelation confirms
    // there takes precedence over the event and chain proposers of the first round: theirs
    // would be weighed against a confidence the flicker deflated (1.5x Prometheus read-back: the
    // chain 3.62 s at 0.65, 3.7 % off; the second round 0.3 % off).
    Evidence second;
    if (gather_evidence(trace, options, acf.flicker, second)) {
      const ProposerInput in2{second.grid, second.region, second.min_lag, second.max_lag, options};
      const AcfProposal acf2 = propose_by_acf(in2, second.an, second.grid.notes, /*look_for_flicker=*/false);
      Segmentation again = decide(second, acf2, options, /*first_round=*/false);
      // The search alone in the second round does not outrank the first round's answer (its
      // confirmed 0.95 on a 10-epoch resnet50 chain against the second round's search-alone 0.55).
      if (is_search_alone_answer(again)) {
        Segmentation first_answer = decide(first, acf, options, /*first_round=*/true);
        if (first_answer.found) return first_answer;
      }
      if (again.found) {
        std::string names;
        for (Metric m : acf.flicker) names += (names.empty() ? "" : ", ") + std::string(info(m).tag);
        again.reason += fmt::format("; {} left out (it only toggles between two adjacent readings)", names);
        return again;
      }
    }
  }
  return decide(first, acf, options, /*first_round=*/true);
}

}  // namespace epochcast
