// Step 2 of detection (docs/detection.md "Method" 2): the busy training region of the grid.
#pragma once

#include <cstddef>
#include <string>

#include "grid.hpp"

namespace epochcast::detail {

struct Region {
  std::size_t begin = 0;
  std::size_t end = 0;  // exclusive
  [[nodiscard]] std::size_t size() const { return end - begin; }
};

// The busy part of the trace: where the activity channel is above the midpoint between its
// idle and busy levels, gaps closed, short warm-up bursts left out. `note` says when there is
// no busy/idle contrast (then the whole grid).
Region find_training_region(Grid& grid, std::string& note);

// The region's edges in seconds from the first sample: half a sample outside the first and
// last busy sample where the job is idle beyond them, else the grid's own ends.
inline double region_start_s(Region r, double dt) {
  return (static_cast<double>(r.begin) - (r.begin > 0 ? 0.5 : 0.0)) * dt;
}
inline double region_end_s(Region r, std::size_t n, double dt) {
  return (static_cast<double>(r.end) - (r.end < n ? 0.5 : 1.0)) * dt;
}

}  // namespace epochcast::detail
