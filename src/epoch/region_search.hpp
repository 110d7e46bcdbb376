// Whole-region proposer with its own null (issue 23): the busy region holds N epochs of about
// length P; score every (P, phase) by how strongly all channels change together at the
// boundaries it predicts, relative to the same statistic at random positions of the same data,
// and take the best. Its significance is the rank of that best score among the best scores of
// the same search on surrogates of the region (phase-randomised: the spectra kept, the timing of
// events destroyed; block-scrambled change series: every event kept, their spacing destroyed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace epochcast::detail {

// The search's best hypothesis and its nulls (region_proposer.cpp turns it into a
// PeriodHypothesis on the grid).
struct RegionSearchResult {
  bool ok = false;
  double period_samples = 0;          // in the samples of the series it was found on
  std::vector<double> boundaries;     // located boundaries (same samples), the region's edges included when used
  std::vector<double> evidence;       // the channels' mean excursion at each inner boundary (not the idle edges), in order
  std::size_t inner = 0;              // inner boundaries scored
  double z = 0;                       // standardised boundary score against random positions
  double p_value = 1;                 // max of the two surrogate p-values (look-elsewhere included)
  double p_phase = 1, p_block = 1;
  // Gumbel tail p of z among the surrogates' best scores (null_tail.hpp), the larger of the
  // phase and block nulls'; 1 unless every surrogate of both ran and none scored as well.
  double p_tail = 1;
  double epochs = 0;                  // region length / period
  std::string why;
};

struct RegionSearchOptions {
  double min_period = 8;              // samples of the series
  double max_period = 0;              // 0: region / (min_epochs - 0.2)
  double min_epochs = 3;
  bool idle_before = false;           // the region starts where the job starts (an epoch boundary)
  bool idle_after = false;
  int surrogates = 99;                // phase-randomised
  int block_surrogates = 0;           // block-scrambled (0: none)
  bool amplitude_adjust = true;       // surrogates keep each channel's values (AAFT) or not
  // The other proposers' period (samples of the series; 0: none) and the agreement tolerance:
  // when the best hypothesis agrees, the nulls also say whether it beats the typical surrogate
  // (p <= 0.5, more surrogates run); otherwise they stop at the first as good.
  double agree_period = 0;
  double agree_tolerance = 0;
  std::uint64_t seed = 0x5eed;
  // Score boundary chains (boundary_chain.hpp: each gap one epoch within the slack) instead of
  // boundaries on an even grid; the nulls run the same statistic.
  bool chain = false;
};

// channels: z-scored series over the region, equal lengths.
RegionSearchResult region_search(const std::vector<std::span<const double>>& channels, const RegionSearchOptions& o);

}  // namespace epochcast::detail
