// Robust z-scores, their averaging pyramid and the combined ACF. docs/detection.md "Method" 3-4.
#include "zscore_pyramid.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace epochcast::detail {
namespace {

// Robust z-scores are clipped here (spikes).
constexpr double kClipZ = 4.0;
// Longer series keep only the ACF windows of levels 0-3.
constexpr std::size_t kLazyLevel0 = 131072;

// Levels 0-3 (and level 4 whole when `level4`, level 5 when `level5`) of `p`, stored over `want`.
std::size_t sweep_levels(ZPyramid& p, double lo, double hi, const signal::PyramidStore& want,
                         std::array<signal::Buffer, 4>& out, signal::Buffer* level4,
                         signal::Buffer* level5 = nullptr) {
  return signal::affine_clip_pyramid(p.source, 0, p.base, p.slope, p.inv, kClipZ, lo, hi, want, out, p.first, level4,
                                     level5);
}

}  // namespace

ZPyramid robust_z_pyramid(std::span<const double> y, bool check, double lo, double hi, std::size_t& bad) {
  bad = 0;
  const std::size_t n = y.size();
  if (n < 4) return {};
  // Line, median and MAD from the block subsample (all of a short region).
  const signal::SampleLayout layout = signal::sample_layout(n);
  std::vector<double> sample;
  signal::gather(y, layout, sample);
  if (check && (bad = signal::count_outside(sample, lo, hi)) > 0) return {};
  const double m = static_cast<double>(sample.size());
  double slope = 0, intercept = 0, ym = 0;
  if (layout.blocks == 1) {
    // Least-squares line through every sample (index i = k): closed-form index sums.
    const double km = 0.5 * (m - 1);
    double sy = 0, sky = 0;
    signal::line_sums(sample, sy, sky);
    ym = sy / m;
    const double skk = m * (m * m - 1) / 12.0;
    slope = skk > 0 ? (sky - km * sy) / skk : 0;
    intercept = ym - slope * km;
  } else {
    // Blocks of consecutive samples, i = start(j) + t: the centred index is d_j + (t - tm) with
    // d_j the block's centre less the mean index, and sum_t (t - tm) = 0 splits the sums.
    const auto bl = static_cast<double>(layout.block), tm = 0.5 * (bl - 1);
    double im = 0;
    for (std::size_t j = 0; j < layout.blocks; ++j) im += static_cast<double>(layout.start(j));
    im = im / static_cast<double>(layout.blocks) + tm;
    double sxx = static_cast<double>(layout.blocks) * bl * (bl * bl - 1) / 12.0, sy = 0, sxy = 0;
    signal::block_line_sums(sample, layout, im, sy, sxy, sxx);
    ym = sy / m;
    slope = sxx > 0 ? sxy / sxx : 0;
    intercept = ym - slope * im;
  }
  signal::subtract_line(sample, layout, intercept, slope);
  const double med = signal::median(sample);
  signal::abs_deviation(sample, med);
  double scale = 1.4826 * signal::median(sample);
  const double base = intercept + med;
  if (!(scale > 0)) {  // more than half the values equal: the rms instead
    // |r - med|^2 is (r - med)^2 to the bit: no copy of the residuals kept for this rare case.
    double ss = 0;
    for (double a : sample) ss += a * a;
    scale = std::sqrt(ss / m);
  }
  const double magnitude = std::abs(ym) + 1.0;
  if (!(scale > 1e-9 * magnitude)) return {};
  // Not re-centred: every consumer removes its own mean (ACF windows, folds, templates).
  ZPyramid out{{}, {n}, {}, y, base, slope, 1.0 / scale, n <= kLazyLevel0};
  while (out.len.back() >= 64) out.len.push_back(out.len.back() / 2);
  signal::PyramidStore want;
  for (std::size_t l = 0; l < 4; ++l) {
    const std::size_t len = n >> l, w = out.full ? len : std::min(len, kAcfWindow);
    want[l] = {(len - w) / 2, (len - w) / 2 + w};  // centred_window(level l, kAcfWindow)
  }
  std::array<signal::Buffer, 4> first;
  signal::Buffer level4;
  signal::Buffer level5;  // made in the same sweep, as halve() would make it
  bad = sweep_levels(out, check ? lo : -kInf, check ? hi : kInf, want, first, &level4,
                     out.len.size() > 5 ? &level5 : nullptr);
  if (check && bad > 0) return {};
  auto& levels = out.levels;
  for (std::size_t l = 0; l < out.len.size(); ++l) {
    if (l < 4) {
      levels.push_back(std::move(first[l]));
    } else if (l < 6) {
      levels.push_back(l == 4 ? std::move(level4) : std::move(level5));
    } else {
      levels.push_back(signal::halve(levels.back()));
    }
  }
  return out;
}


std::span<const double> Analysis::level(std::size_t c, std::size_t l) const {
  auto& p = pyramid[c];
  if (l < 4 && !p.full) {
    signal::PyramidStore whole;
    for (std::size_t k = 0; k < 4; ++k) whole[k] = {0, p.source.size() >> k};
    std::array<signal::Buffer, 4> out;
    sweep_levels(p, -kInf, kInf, whole, out, nullptr);
    for (std::size_t k = 0; k < 4 && k < p.levels.size(); ++k) p.levels[k] = std::move(out[k]);
    p.full = true;
  }
  return p.levels[l];
}

std::span<const double> Analysis::window(std::size_t c, std::size_t l, std::size_t cap) const {
  const auto& p = pyramid[c];
  if (l < 4 && !p.full && cap == kAcfWindow) {
    const std::size_t w = std::min(p.len[l], cap);
    return std::span<const double>(p.levels[l]).subspan((p.len[l] - w) / 2 - p.first[l], w);
  }
  return centred_window(level(c, l), cap);
}

bool build_analysis(Grid& grid, Region region, Analysis& an, Segmentation& seg) {
  auto& channels = grid.channels;
  for (auto& u : channels) {
    if (u.dropped) continue;
    std::size_t bad = 0;
    ZPyramid levels;
    if (u.unchecked)  // the samples outside the region; those inside are checked by the z sweep
      bad = signal::count_outside(u.values.first(region.begin), u.lo, u.hi) +
            signal::count_outside(u.values.subspan(region.end), u.lo, u.hi);
    if (bad == 0) levels = robust_z_pyramid(u.values.subspan(region.begin, region.size()), u.unchecked, u.lo, u.hi, bad);
    if (bad > 0) {
      grid.repair(u);
      if (u.dropped) continue;
      levels = robust_z_pyramid(u.values.subspan(region.begin, region.size()), false, 0, 0, bad);
    }
    u.unchecked = false;
    if (levels.levels.empty()) continue;  // constant in the busy region: no evidence either way
    an.metrics.push_back(u.metric);
    if (an.level_len.empty()) an.level_len = levels.len;
    an.pyramid.push_back(std::move(levels));
  }
  std::erase_if(channels, [](const Uniform& u) { return u.dropped; });
  if (channels.empty()) {
    seg.reason = with_notes(kNoUsableChannel, grid.notes);
    return false;
  }
  if (an.metrics.empty()) {
    seg.reason = with_notes("every channel is constant in the busy region: no periodic structure", grid.notes);
    return false;
  }
  return true;
}

void high_pass(std::span<double> x, std::size_t width) {
  if (width < 3 || x.size() < 2 * width) return;
  signal::subtract_moving_average(x, width);
}

std::span<const double> centred_window(std::span<const double> x, std::size_t cap) {
  if (x.size() <= cap) return x;
  const std::size_t off = (x.size() - cap) / 2;
  return x.subspan(off, cap);
}

std::vector<double> combined_acf(const Analysis& an, std::size_t level, std::size_t lo, std::size_t hi,
                                 bool use_high_pass, std::vector<std::vector<double>>* per_channel,
                                 std::size_t window_cap) {
  std::vector<double> total(hi - lo + 1, 0.0);
  std::vector<double> r;
  signal::Buffer work;
  double wsum = 0;
  if (per_channel) per_channel->assign(an.metrics.size(), {});
  for (std::size_t c = 0; c < an.metrics.size(); ++c) {
    if (level >= an.pyramid[c].levels.size()) continue;
    auto window = an.window(c, level, window_cap);
    // As high_pass() then the mean removed, in two sweeps over the window.
    const std::size_t width = use_high_pass && 4 * hi >= 3 && window.size() >= 8 * hi ? 4 * hi : 0;
    signal::centred_autocorrelation(window, width, lo, hi, work, r);
    if (per_channel) (*per_channel)[c] = r;
    const double w = an.weight.empty() ? 1.0 : an.weight[c];
    if (w <= 0) continue;
    wsum += w;
    for (std::size_t k = 0; k < r.size(); ++k) total[k] += w * r[k];
  }
  if (wsum > 0)
    for (double& v : total) v /= wsum;
  return total;
}

}  // namespace epochcast::detail
