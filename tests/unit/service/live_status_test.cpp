#include "epochcast/service/live_status.hpp"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <fmt/format.h>
#include <mutex>
#include <sstream>
#include <thread>

#include "eval/synthetic.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

// Feeds a trace's samples to `status` as ticks of GPU slot 0 (times from the trace, not the clock).
void feed(LiveStatus& status, const Trace& trace, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    GpuSample g{0, empty_metric_values()};
    for (const Channel& c : trace.channels) g.values[static_cast<std::size_t>(c.metric)] = c.values[i];
    const Tick tick{i, trace.start_unix_s + trace.time_s[i], trace.time_s[i], 0.0, std::span(&g, 1)};
    status.add(tick);
  }
}

// Waits until the status thread has shown `samples` samples (a refresh after the last feed).
void wait_shown(const LiveStatus& status, std::size_t samples) {
  for (int i = 0; i < 2000 && status.last().samples < samples; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// A stream the test may read while the status thread writes it: no put area, so every write
// goes through the locked overflow/xsputn (a stringbuf's fast path would race with str()).
class LockedText : public std::streambuf {
 public:
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    std::lock_guard lock(mutex_);
    text_.push_back(traits_type::to_char_type(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(mutex_);
    text_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

std::vector<Metric> metrics_of(const Trace& t) {
  std::vector<Metric> out;
  for (const Channel& c : t.channels) out.push_back(c.metric);
  return out;
}

TEST(FormatStatus, FoundCandidateAndNothing) {
  StatusSnapshot s;
  s.elapsed_s = 12.4;
  s.samples = 480;
  s.util_pct = 99.2;
  s.power_w = 640.4;
  EXPECT_EQ(format_status(s), "12 s  480 samples  GPU 99 %  640 W  period: —");
  s.detection.candidate_period_s = 4.234;
  s.detection.confidence = 0.31;
  EXPECT_EQ(format_status(s), "12 s  480 samples  GPU 99 %  640 W  period ~4.23 s? (confidence 0.31)");
  s.detection.found = true;
  s.detection.period_s = 1.0512;
  s.detection.confidence = 0.914;
  s.detection.epochs.resize(3);
  EXPECT_EQ(format_status(s), "12 s  480 samples  GPU 99 %  640 W  epochs 3, period 1.05 s (confidence 0.91)");
  s.util_pct = NAN;
  s.power_w = NAN;
  EXPECT_EQ(format_status(s), "12 s  480 samples  epochs 3, period 1.05 s (confidence 0.91)");
}

TEST(LiveStatus, FindsThePeriodFromEveryChannelBeforeTheRunEnds) {
  SyntheticSpec spec;
  spec.period_s = 4.0;
  spec.epochs = 8;
  const SyntheticTrace synth = make_synthetic_trace(spec, 7);
  const Trace& t = synth.trace;
  std::ostringstream out;
  LiveStatus status(metrics_of(t), out, {.style = StatusStyle::kLines, .refresh = std::chrono::milliseconds(5)});
  // Up to the end of the 5th epoch: the estimate must be there before the run is over.
  const double cut_s = synth.truth.epochs[4].end_s;
  std::size_t cut = 0;
  while (cut < t.size() && t.time_s[cut] < cut_s) ++cut;
  for (std::size_t from = 0; from < cut; from += 50) {
    feed(status, t, from, std::min(cut, from + 50));
    wait_shown(status, std::min(cut, from + 50));  // one line per chunk, whatever the load
  }
  status.finish();
  const StatusSnapshot last = status.last();
  EXPECT_EQ(last.samples, cut);
  ASSERT_TRUE(last.detection.found) << last.detection.reason;
  EXPECT_NEAR(last.detection.period_s, synth.truth.period_s, 0.03 * synth.truth.period_s);
  EXPECT_GE(last.detection.epochs.size(), 3u);
  const std::string text = out.str();
  EXPECT_NE(text.find("period: —"), std::string::npos) << "the early lines had no estimate yet";
  EXPECT_NE(text.find(fmt::format("period {:.3g} s", last.detection.period_s)), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "line style: no terminal control characters";
  EXPECT_EQ(text.back(), '\n');
}

// The real H200 vgg16 trace (4 epochs of 4.23 s, nvidia-smi every 100 ms) fed as ticks up to
// the middle of its last epoch: the live estimate is there, from every channel; utilisation
// and power alone (what the status line used to feed) do not confirm it at that point.
TEST(LiveStatus, RealH200TraceGivesThePeriodBeforeTheLastEpochEnds) {
  const std::string base = std::string(EPOCHCAST_TEST_DATA) + "/h200/vgg16_224_bs32_fp32";
  const Trace t = read_trace(base + ".smi.csv");
  const auto truth = nlohmann::json::parse(std::ifstream(base + ".truth.json"));
  double truth_period = 0;
  for (const auto& e : truth["epochs"]) truth_period += e["seconds"].get<double>();
  truth_period /= static_cast<double>(truth["epochs"].size());
  // nvidia-smi stamps are local wall time, as the truth's *_stamp fields: compare times of day
  // (whatever the time zone the test runs in).
  auto clock_s = [](const std::string& stamp) {  // "2026/11/30 15:23:05.607"
    const auto space = stamp.find(' ');
    return std::stod(stamp.substr(space + 1, 2)) * 3600 + std::stod(stamp.substr(space + 4, 2)) * 60 +
           std::stod(stamp.substr(space + 7));
  };
  const double cut_s = clock_s(truth["epochs"].back()["start_stamp"].get<std::string>()) + 0.5 * truth_period -
                       clock_s(t.first_timestamp);
  std::size_t cut = 0;
  while (cut < t.size() && t.time_s[cut] < cut_s) ++cut;
  ASSERT_LT(cut, t.size() - 10) << "the cut must fall inside the trace";

  auto run = [&](std::vector<Metric> columns) {
    std::ostringstream out;
    LiveStatus status(std::move(columns), out, {.style = StatusStyle::kLines, .refresh = std::chrono::milliseconds(5)});
    feed(status, t, 0, cut);
    status.finish();
    return status.last().detection;
  };
  const Segmentation every = run(metrics_of(t));
  ASSERT_TRUE(every.found) << every.reason;
  EXPECT_NEAR(every.period_s, truth_period, 0.04 * truth_period) << every.reason;
  const Segmentation two = run({Metric::kGpuUtil, Metric::kPower});
  EXPECT_FALSE(two.found && std::abs(two.period_s - truth_period) < 0.04 * truth_period)
      << "utilisation and power alone were expected to fall short here: " << two.reason;
}

TEST(LiveStatus, LongRunsAreAveragedDownToABoundedSeries) {
  SyntheticSpec spec;
  spec.interval_s = 0.01;  // 100 Hz
  spec.period_s = 2.5;
  spec.epochs = 8;
  spec.idle_head_s = 2;
  const SyntheticTrace synth = make_synthetic_trace(spec, 3);
  const Trace& t = synth.trace;
  ASSERT_GT(t.size(), 2000u);
  std::ostringstream out;
  LiveStatus status(metrics_of(t), out,
                    {.style = StatusStyle::kLines, .refresh = std::chrono::milliseconds(5), .max_detector_samples = 512});
  for (std::size_t from = 0; from < t.size(); from += 200) {
    feed(status, t, from, std::min(t.size(), from + 200));
    wait_shown(status, std::min(t.size(), from + 200));
  }
  status.finish();
  EXPECT_LT(status.detector_samples(), 512u);
  EXPECT_GE(status.ticks_per_sample(), t.size() / 512);
  const StatusSnapshot last = status.last();
  EXPECT_EQ(last.samples, t.size());
  ASSERT_TRUE(last.detection.found) << last.detection.reason;
  EXPECT_NEAR(last.detection.period_s, synth.truth.period_s, 0.03 * synth.truth.period_s);
}

TEST(LiveStatus, TerminalStyleRewritesOneLineAndClearsItForMessages) {
  LockedText buffer;
  std::ostream out(&buffer);
  LiveStatus status({Metric::kGpuUtil, Metric::kPower}, out,
                    {.style = StatusStyle::kTerminal, .refresh = std::chrono::milliseconds(5)});
  GpuSample g{0, empty_metric_values()};
  g.values[static_cast<std::size_t>(Metric::kGpuUtil)] = 97;
  g.values[static_cast<std::size_t>(Metric::kPower)] = 512;
  status.add(Tick{0, 1.8e9, 0.5, 0.0, std::span(&g, 1)});
  for (int i = 0; i < 200 && buffer.text().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  status.message("GPU 0: something worth a line");
  status.finish();
  const std::string text = buffer.text();
  EXPECT_EQ(text.rfind("\r\x1b[K", 0), 0u) << text;
  EXPECT_NE(text.find("1 samples  GPU 97 %  512 W  period: —"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\x1b[Kepochcast collect: GPU 0: something worth a line\n"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(LiveStatus, OnlyTheFirstGpuIsFollowed) {
  std::ostringstream out;
  LiveStatus status({Metric::kGpuUtil}, out, {.style = StatusStyle::kLines, .refresh = std::chrono::milliseconds(5)});
  std::array<GpuSample, 2> two{GpuSample{1, empty_metric_values()}, GpuSample{0, empty_metric_values()}};
  two[0].values[static_cast<std::size_t>(Metric::kGpuUtil)] = 10;
  two[1].values[static_cast<std::size_t>(Metric::kGpuUtil)] = 90;
  for (std::uint64_t i = 0; i < 5; ++i) status.add(Tick{i, 1.8e9 + i * 0.1, i * 0.1, 0.0, two});
  status.finish();
  EXPECT_EQ(status.last().samples, 5u);
  EXPECT_EQ(status.last().util_pct, 10);
}

}  // namespace
}  // namespace epochcast
