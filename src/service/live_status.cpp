#include "epochcast/service/live_status.hpp"

#include <cmath>
#include <fmt/format.h>

#include "epochcast/collect/helper_thread.hpp"

namespace epochcast {

std::string format_status(const StatusSnapshot& s) {
  std::string detect = "period: —";
  const Segmentation& d = s.detection;
  if (d.found)
    detect = fmt::format("epochs {}, period {:.3g} s (confidence {:.2f})", d.epochs.size(), d.period_s, d.confidence);
  else if (d.candidate_period_s > 0)
    detect = fmt::format("period ~{:.3g} s? (confidence {:.2f})", d.candidate_period_s, d.confidence);
  std::string line = fmt::format("{:.0f} s  {} samples", s.elapsed_s, s.samples);
  if (std::isfinite(s.util_pct)) line += fmt::format("  GPU {:.0f} %", s.util_pct);
  if (std::isfinite(s.power_w)) line += fmt::format("  {:.0f} W", s.power_w);
  return line + "  " + detect;
}

LiveStatus::LiveStatus(std::vector<Metric> columns, std::ostream& out, LiveStatusOptions options)
    : columns_(std::move(columns)), out_(out), options_(options) {
  if (options_.max_detector_samples < 64) options_.max_detector_samples = 64;
  options_.max_detector_samples &= ~std::size_t{1};  // even: halving pairs leaves nothing over
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c] == Metric::kGpuUtil) util_col_ = c;
    if (columns_[c] == Metric::kPower) power_col_ = c;
  }
  bin_sum_.assign(columns_.size(), 0.0);
  bin_count_.assign(columns_.size(), 0.0);
  detector_ = std::make_unique<Detector>();
  thread_ = detail::helper_thread([this] { loop(); });
}

LiveStatus::~LiveStatus() { finish(); }

void LiveStatus::add(const Tick& tick) {
  std::lock_guard lock(mutex_);
  if (followed_slot_ == SIZE_MAX && !tick.gpus.empty()) followed_slot_ = tick.gpus.front().slot;
  for (const GpuSample& g : tick.gpus) {
    if (g.slot != followed_slot_) continue;
    Row row{tick.unix_s, tick.elapsed_s, std::vector<double>(columns_.size())};
    for (std::size_t c = 0; c < columns_.size(); ++c) row.values[c] = g.values[static_cast<std::size_t>(columns_[c])];
    pending_.push_back(std::move(row));
    ++samples_;
  }
}

void LiveStatus::message(const std::string& text) {
  std::lock_guard lock(mutex_);
  if (line_open_) out_ << "\r\x1b[K";
  line_open_ = false;
  out_ << "epochcast collect: " << text << "\n" << std::flush;
}

void LiveStatus::write_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  if (options_.style == StatusStyle::kTerminal) {
    out_ << "\r\x1b[K" << line << std::flush;
    line_open_ = true;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

void LiveStatus::loop() {
  std::unique_lock lock(mutex_);
  auto next = std::chrono::steady_clock::now() + options_.refresh;
  while (!stop_) {
    wake_.wait_until(lock, next, [&] { return stop_; });
    if (stop_) break;
    next = std::max(next + options_.refresh, std::chrono::steady_clock::now());
    lock.unlock();
    refresh();
    lock.lock();
  }
}

void LiveStatus::refresh() {
  std::vector<Row> rows;
  StatusSnapshot snap;
  {
    std::lock_guard lock(mutex_);
    rows.swap(pending_);
    snap = last_;
    snap.samples = samples_;
  }
  if (rows.empty() && snap.samples == 0) return;  // nothing sampled yet: nothing to say
  const std::size_t n = columns_.size();
  // Only the new bins go to the Detector (its append mode): the one copy of the series is its own.
  Trace batch;
  for (Metric m : columns_) batch.channel(m);
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < n; ++c)
      if (std::isfinite(row.values[c])) {
        bin_sum_[c] += row.values[c];
        bin_count_[c] += 1;
      }
    bin_time_sum_ += row.unix_s;
    if (++bin_ticks_ < ticks_per_bin_) continue;
    const double t = bin_time_sum_ / static_cast<double>(bin_ticks_);
    if (batch.time_s.empty()) batch.start_unix_s = t;
    batch.time_s.push_back(t - batch.start_unix_s);
    for (std::size_t c = 0; c < n; ++c)
      batch.channels[c].values.push_back(bin_count_[c] > 0 ? bin_sum_[c] / bin_count_[c] : NAN);
    std::fill(bin_sum_.begin(), bin_sum_.end(), 0.0);
    std::fill(bin_count_.begin(), bin_count_.end(), 0.0);
    bin_time_sum_ = 0;
    bin_ticks_ = 0;
  }
  if (batch.size() > 0) detector_->push(batch);
  if (detector_->trace().size() >= options_.max_detector_samples) {
    // Full: average neighbours in pairs; a new Detector starts on the coarser series.
    Trace series = detector_->trace();
    const std::size_t half = series.size() / 2, odd = series.size() % 2;
    std::vector<double> times(half + odd);
    for (std::size_t i = 0; i < half; ++i) times[i] = 0.5 * (series.time_s[2 * i] + series.time_s[2 * i + 1]);
    if (odd) times[half] = series.time_s.back();
    for (auto& ch : series.channels) {
      for (std::size_t i = 0; i < half; ++i) {
        const double a = ch.values[2 * i], b = ch.values[2 * i + 1];
        ch.values[i] = std::isfinite(a) && std::isfinite(b) ? 0.5 * (a + b) : std::isfinite(a) ? a : b;
      }
      if (odd) ch.values[half] = ch.values.back();
      ch.values.resize(half + odd);
    }
    series.start_unix_s += times.front();
    for (double& t0 : times) t0 -= times.front();
    series.time_s = std::move(times);
    ticks_per_bin_ *= 2;
    detector_ = std::make_unique<Detector>();
    detector_->push(series);
  }
  if (!rows.empty()) {
    const Row& latest = rows.back();
    snap.elapsed_s = latest.elapsed_s;
    snap.util_pct = util_col_ < n ? latest.values[util_col_] : NAN;
    snap.power_w = power_col_ < n ? latest.values[power_col_] : NAN;
  }
  snap.detection = detector_->current();
  {
    std::lock_guard lock(mutex_);
    last_ = snap;
  }
  write_line(format_status(snap));
}

void LiveStatus::finish() {
  {
    std::lock_guard lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  refresh();  // the last ticks
  std::lock_guard lock(mutex_);
  if (line_open_) out_ << "\n" << std::flush;
  line_open_ = false;
}

StatusSnapshot LiveStatus::last() const {
  std::lock_guard lock(mutex_);
  return last_;
}

std::size_t LiveStatus::detector_samples() const {
  std::lock_guard lock(mutex_);
  return detector_->trace().size();
}

std::size_t LiveStatus::ticks_per_sample() const {
  std::lock_guard lock(mutex_);
  return ticks_per_bin_;
}

}  // namespace epochcast
