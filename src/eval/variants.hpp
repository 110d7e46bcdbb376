// Realistic variants of the real H200 traces (tests/data/h200): what another run of the same
// job, or another collector, would have produced. Used by `detect_bench --variants` and by
// tests/unit/epoch/real_variants_test.cpp. Each variant keeps, per sample, the real time (in
// seconds from the original first sample) the sample stands for, so the truth.json epochs can
// be mapped onto the variant's own time axis, whatever it did to the clock.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "epochcast/core/metric.hpp"
#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/read.hpp"
#include "eval/truth.hpp"

namespace epochcast::testing {

inline const char* const kRealTraceNames[] = {"effnetb0_224_bs64_ckpt_500ms", "lenet5_28_bs64_fp32",
                                               "mobilenetv2_224_bs128_noval", "resnet18_32_bs128_cpuloader",
                                               "resnet50_224_bs256_bf16",     "vgg16_224_bs32_fp32"};

struct RealBase {
  std::string name;
  Trace with_host;   // the nvidia-smi log with its host CPU log merged
  Trace gpu_only;    // the nvidia-smi log alone
  RealTruth truth;   // epochs in seconds from the first sample
  double train_begin_s = 0, train_end_s = 0;  // first epoch's start, last epoch's end
};

inline RealBase load_real_base(const std::string& dir, const std::string& name) {
  RealBase b;
  b.name = name;
  ReadOptions o;
  o.host_path = dir + name + ".host.csv";
  b.with_host = read_trace(dir + name + ".smi.csv", o);
  b.gpu_only = read_trace(dir + name + ".smi.csv");
  b.truth = load_truth(dir + name + ".truth.json", b.with_host.first_timestamp);
  if (b.truth.epochs.empty()) throw std::runtime_error(name + ": truth has no epochs");
  b.train_begin_s = b.truth.epochs.front().start_s;
  b.train_end_s = b.truth.epochs.back().end_s;
  return b;
}

// A variant: the trace the detector sees, and for each of its samples the real time it stands
// for (seconds from the original first sample; non-decreasing).
struct BuiltVariant {
  Trace trace;
  std::vector<double> real_s;
};

// Rows `keep` (ascending) of `t`, re-based so the first kept row is time 0.
inline BuiltVariant select_rows(const Trace& t, const std::vector<double>& real_s, const std::vector<std::size_t>& keep) {
  if (keep.empty()) throw std::runtime_error("variant keeps no sample");
  BuiltVariant v;
  v.trace.source = t.source;
  v.trace.format = t.format;
  v.trace.gpu = t.gpu;
  const double t0 = t.time_s[keep.front()];
  v.trace.start_unix_s = t.start_unix_s + t0;
  v.trace.first_timestamp = format_iso8601_utc(v.trace.start_unix_s);
  v.trace.time_s.reserve(keep.size());
  for (std::size_t i : keep) {
    v.trace.time_s.push_back(t.time_s[i] - t0);
    v.real_s.push_back(real_s[i]);
  }
  for (const auto& c : t.channels) {
    Channel& out = v.trace.channel(c.metric);
    for (std::size_t k = 0; k < keep.size(); ++k) out.values[k] = c.values[keep[k]];
  }
  return v;
}

inline BuiltVariant whole(const Trace& t) { return {t, t.time_s}; }

inline BuiltVariant keep_if(const BuiltVariant& in, const std::function<bool(std::size_t, double)>& pred) {
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < in.trace.size(); ++i)
    if (pred(i, in.real_s[i])) keep.push_back(i);
  return select_rows(in.trace, in.real_s, keep);
}

// Every k-th sample (a collector polling k times slower).
inline BuiltVariant decimate(const BuiltVariant& in, std::size_t k) {
  return keep_if(in, [k](std::size_t i, double) { return i % k == 0; });
}

// The mean of each block of k samples, stamped at the block's last sample (a gauge averaged
// over the scrape interval, as DCGM's averaging or a recording rule gives). NaNs are skipped.
inline BuiltVariant average_decimate(const BuiltVariant& in, std::size_t k) {
  std::vector<std::size_t> ends;
  for (std::size_t e = k - 1; e < in.trace.size(); e += k) ends.push_back(e);
  BuiltVariant v = select_rows(in.trace, in.real_s, ends);
  for (std::size_t c = 0; c < in.trace.channels.size(); ++c) {
    const auto& src = in.trace.channels[c].values;
    auto& dst = v.trace.channels[c].values;
    for (std::size_t b = 0; b < ends.size(); ++b) {
      double sum = 0;
      int n = 0;
      for (std::size_t i = ends[b] + 1 - k; i <= ends[b]; ++i)
        if (!std::isnan(src[i])) sum += src[i], ++n;
      dst[b] = n ? sum / n : NAN;
    }
  }
  return v;
}

inline BuiltVariant keep_channels(const BuiltVariant& in, const std::function<bool(Metric)>& keep) {
  BuiltVariant v = in;
  v.trace.channels.clear();
  for (const auto& c : in.trace.channels)
    if (keep(c.metric)) v.trace.channels.push_back(c);
  return v;
}

// Timestamps moved by up to ±10 % of the median interval each, so consecutive intervals vary by
// up to ±20 %; the values stay (a collector whose stamping is late or early by a few ms).
inline BuiltVariant stamp_jitter(const BuiltVariant& in, double fraction, std::uint64_t seed) {
  BuiltVariant v = in;
  const double dt = in.trace.median_interval_s();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-fraction / 2, fraction / 2);
  // Stamps to the millisecond, as every collector here writes them.
  for (std::size_t i = 1; i < v.trace.size(); ++i)
    v.trace.time_s[i] = std::round((v.trace.time_s[i] + u(rng) * dt) * 1000) / 1000;
  for (std::size_t i = 1; i < v.trace.size(); ++i)  // monotone (±10 % of dt cannot cross, but stay safe)
    v.trace.time_s[i] = std::max(v.trace.time_s[i], v.trace.time_s[i - 1]);
  return v;
}

// Polled at intervals of dt·(1 ± fraction) (uniform, a random walk of the poll times); each poll
// reads the latest original sample at or before it (the counter's last refresh).
inline BuiltVariant poll_jitter(const BuiltVariant& in, double fraction, std::uint64_t seed) {
  const auto& t = in.trace;
  const double dt = t.median_interval_s();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1 - fraction, 1 + fraction);
  BuiltVariant v;
  v.trace.source = t.source;
  v.trace.format = t.format;
  v.trace.gpu = t.gpu;
  v.trace.start_unix_s = t.start_unix_s;
  v.trace.first_timestamp = t.first_timestamp;
  std::vector<std::size_t> src;
  std::size_t j = 0;
  for (double p = 0; p <= t.time_s.back(); p = std::round((p + u(rng) * dt) * 1000) / 1000) {  // ms stamps
    while (j + 1 < t.size() && t.time_s[j + 1] <= p) ++j;
    v.trace.time_s.push_back(p);
    v.real_s.push_back(in.real_s[0] + p);
    src.push_back(j);
  }
  for (const auto& c : t.channels) {
    Channel& out = v.trace.channel(c.metric);
    for (std::size_t k = 0; k < src.size(); ++k) out.values[k] = c.values[src[k]];
  }
  return v;
}

// Writes the trace as epochcast's canonical CSV and reads it back (the writer `collect` uses).
inline BuiltVariant via_canonical(const BuiltVariant& in, const std::string& name) {
  std::ostringstream out;
  write_canonical_csv(in.trace, out);
  BuiltVariant v{read_trace_from_string(out.str(), name), in.real_s};
  if (v.trace.size() != in.trace.size())
    throw std::runtime_error(fmt::format("{}: {} rows read back of {}", name, v.trace.size(), in.trace.size()));
  return v;
}

// The same samples as a `dcgmi dmon` log (docs/trace-formats.md: `#Entity` header, units row,
// `GPU N v…` rows; channels without a dmon name are left out, as dmon cannot print them).
// Plain dmon prints no time: the `-d` option (the median interval, to the millisecond) is in a
// comment, as the command line. `stamped`: rows prefixed with the local time, as `ts` writes it.
inline std::string dmon_text(const Trace& t, bool stamped) {
  std::vector<const Channel*> cols;
  for (const auto& c : t.channels)
    if (!info(c.metric).dmon_name.empty()) cols.push_back(&c);
  auto unit = [](Metric m) -> std::string {
    const auto u = info(m).unit;
    if (u == "W") return "W";
    if (u == "C") return "C";
    if (u == "MHz") return "MHZ";
    if (u == "MiB") return "MB";
    return "";
  };
  std::string s = "# dcgmi dmon -e ";
  for (std::size_t c = 0; c < cols.size(); ++c) s += fmt::format("{}{}", c ? "," : "", info(cols[c]->metric).dcgm_field_id);
  s += fmt::format(" -d {}\n", std::lround(t.median_interval_s() * 1000));
  const std::string lead = stamped ? std::string(25, ' ') : "";
  s += "#Entity   ";
  for (const auto* c : cols) s += fmt::format("{:<13}", info(c->metric).dmon_name);
  s += "\nID        ";
  for (const auto* c : cols) s += fmt::format("{:<13}", unit(c->metric));
  s += '\n';
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (stamped) {
      // Local wall time, as `ts` prints it and as the host log is stamped (readers resolve both
      // through the local time zone).
      const double unix_s = t.start_unix_s + t.time_s[i];
      const auto ms_total = static_cast<std::int64_t>(std::llround(unix_s * 1000.0));
      const std::time_t secs = static_cast<std::time_t>(ms_total / 1000);
      std::tm tm{};
      localtime_r(&secs, &tm);
      s += fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}  ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms_total % 1000));
    }
    s += fmt::format("GPU {:<6}", t.gpu.index < 0 ? 0 : t.gpu.index);
    for (const auto* c : cols) {
      const double x = c->values[i];
      s += fmt::format("{:<13}", std::isnan(x) ? std::string("N/A")
                                  : c->metric == Metric::kPower ? fmt::format("{:.3f}", x)
                                                                : fmt::format("{:g}", x));
    }
    s += '\n';
  }
  return s;
}

inline BuiltVariant via_dmon(const BuiltVariant& in, bool stamped, const std::string& host_path, const std::string& name) {
  ReadOptions o;
  if (!host_path.empty()) o.host_path = host_path;
  BuiltVariant v{read_trace_from_string(dmon_text(in.trace, stamped), name, o), in.real_s};
  if (v.trace.size() != in.trace.size())
    throw std::runtime_error(fmt::format("{}: {} rows read back of {}", name, v.trace.size(), in.trace.size()));
  return v;
}

// The clock stepped by `step_s` (an NTP correction, a daylight-saving change) half-way through
// training: written as canonical CSV with the stepped times and read back through the reader's
// clock handling (a backward step is re-based, a forward one is a gap).
inline BuiltVariant clock_step(const BuiltVariant& in, double at_real_s, double step_s, const std::string& name) {
  BuiltVariant stepped = in;
  for (std::size_t i = 0; i < stepped.trace.size(); ++i)
    if (in.real_s[i] >= at_real_s) stepped.trace.time_s[i] += step_s;
  std::ostringstream out;
  write_canonical_csv(stepped.trace, out);
  BuiltVariant v{read_trace_from_string(out.str(), name), in.real_s};
  if (v.trace.size() != in.trace.size())
    throw std::runtime_error(fmt::format("{}: {} rows read back of {}", name, v.trace.size(), in.trace.size()));
  return v;
}

struct VariantSpec {
  std::string group, name;
  // Builds the variant of `base` (seed for the random ones; `host_path`: the host log's file).
  std::function<BuiltVariant(const RealBase& base, std::uint64_t seed, const std::string& host_path)> build;
  bool random = false;
};

inline std::vector<VariantSpec> real_variants() {
  std::vector<VariantSpec> v;
  auto add = [&](std::string group, std::string name, auto f, bool random = false) {
    v.push_back({std::move(group), std::move(name), f, random});
  };
  using B = const RealBase&;
  add("original", "as read (with host log)", [](B b, std::uint64_t, const std::string&) { return whole(b.with_host); });
  for (std::size_t k : {2, 5, 10})
    add("sampling", fmt::format("keep 1 in {}", k), [k](B b, std::uint64_t, const std::string&) { return decimate(whole(b.with_host), k); });
  for (std::size_t k : {5, 10})
    add("sampling", fmt::format("mean of {}, 1 in {}", k, k),
        [k](B b, std::uint64_t, const std::string&) { return average_decimate(whole(b.with_host), k); });
  auto period = [](B b) { return b.truth.period_s; };
  add("view", "head cut 0.5 epoch", [=](B b, std::uint64_t, const std::string&) {
    const double cut = b.train_begin_s + 0.5 * period(b);
    return keep_if(whole(b.with_host), [cut](std::size_t, double r) { return r >= cut; });
  });
  add("view", "head cut 1.5 epochs", [=](B b, std::uint64_t, const std::string&) {
    const double cut = b.train_begin_s + 1.5 * period(b);
    return keep_if(whole(b.with_host), [cut](std::size_t, double r) { return r >= cut; });
  });
  add("view", "idle tail cut", [](B b, std::uint64_t, const std::string&) {
    const double end = b.train_end_s;
    return keep_if(whole(b.with_host), [end](std::size_t, double r) { return r <= end; });
  });
  add("view", "head 0.5 + tail cut", [=](B b, std::uint64_t, const std::string&) {
    const double cut = b.train_begin_s + 0.5 * period(b), end = b.train_end_s;
    return keep_if(whole(b.with_host), [=](std::size_t, double r) { return r >= cut && r <= end; });
  });
  add("view", "last 3 epochs", [](B b, std::uint64_t, const std::string&) {
    const auto& e = b.truth.epochs;
    const double cut = e.size() >= 3 ? e[e.size() - 3].start_s : e.front().start_s;
    return keep_if(whole(b.with_host), [cut](std::size_t, double r) { return r >= cut; });
  });
  add("channels", "no host log", [](B b, std::uint64_t, const std::string&) { return whole(b.gpu_only); });
  add("channels", "gpu util only", [](B b, std::uint64_t, const std::string&) {
    return keep_channels(whole(b.with_host), [](Metric m) { return m == Metric::kGpuUtil; });
  });
  add("channels", "gpu + mem util only", [](B b, std::uint64_t, const std::string&) {
    return keep_channels(whole(b.with_host), [](Metric m) { return m == Metric::kGpuUtil || m == Metric::kMemUtil; });
  });
  add("channels", "power only", [](B b, std::uint64_t, const std::string&) {
    return keep_channels(whole(b.with_host), [](Metric m) { return m == Metric::kPower; });
  });
  add("channels", "without mem util", [](B b, std::uint64_t, const std::string&) {
    return keep_channels(whole(b.with_host), [](Metric m) { return m != Metric::kMemUtil; });
  });
  add("time", "stamps jittered ±20 %",
      [](B b, std::uint64_t s, const std::string&) { return stamp_jitter(whole(b.with_host), 0.2, s); }, true);
  add("time", "polled at ±20 % intervals",
      [](B b, std::uint64_t s, const std::string&) { return poll_jitter(whole(b.with_host), 0.2, s); }, true);
  add("time", "1 % rows dropped", [](B b, std::uint64_t s, const std::string&) {
    std::mt19937_64 rng(s);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<bool> drop(b.with_host.size());
    for (std::size_t i = 1; i < drop.size(); ++i) drop[i] = u(rng) < 0.01;
    return keep_if(whole(b.with_host), [&](std::size_t i, double) { return !drop[i]; });
  }, true);
  add("time", "2 s hole mid-training", [](B b, std::uint64_t, const std::string&) {
    const double mid = 0.5 * (b.train_begin_s + b.train_end_s);
    return keep_if(whole(b.with_host), [mid](std::size_t, double r) { return r < mid || r >= mid + 2; });
  });
  add("time", "clock steps back 1 h", [](B b, std::uint64_t, const std::string&) {
    return clock_step(whole(b.with_host), 0.5 * (b.train_begin_s + b.train_end_s), -3600, b.name + ".stepped.csv");
  });
  add("time", "clock steps forward 1 h", [](B b, std::uint64_t, const std::string&) {
    return clock_step(whole(b.with_host), 0.5 * (b.train_begin_s + b.train_end_s), 3600, b.name + ".stepped.csv");
  });
  add("format", "canonical CSV", [](B b, std::uint64_t, const std::string&) {
    return via_canonical(whole(b.with_host), b.name + ".csv");
  });
  add("format", "dcgmi dmon (no host; -d)", [](B b, std::uint64_t, const std::string&) {
    return via_dmon(whole(b.gpu_only), false, "", b.name + ".dmon.log");
  });
  add("format", "dcgmi dmon, stamped (no host)", [](B b, std::uint64_t, const std::string&) {
    return via_dmon(whole(b.gpu_only), true, "", b.name + ".dmon.log");
  });
  add("format", "dcgmi dmon, stamped + host", [](B b, std::uint64_t, const std::string& host) {
    return via_dmon(whole(b.gpu_only), true, host, b.name + ".dmon.log");
  });
  return v;
}

// How a variant did against the truth.
struct VariantOutcome {
  bool found = false;
  double confidence = 0, period_s = 0, candidate_s = 0;
  double truth_period_s = 0;    // truth.json's mean epoch, in the variant's own seconds
  double period_err = NAN;      // relative, when found
  double boundary_err_s = NAN;  // median over the truth boundaries in view, when found
  double samples_per_epoch = 0, epochs_in_view = 0;
  bool below_floor = false;     // < 8 samples per epoch or < 3 epochs in view: abstain or be right
  std::string error;            // an exception's message (a failure whatever the answer)
  std::string reason;
  [[nodiscard]] bool right() const { return found && period_err <= 0.03; }
  [[nodiscard]] bool wrong() const { return found && !(period_err <= 0.03); }
};

// Maps real seconds to the variant's seconds (piecewise linear through its samples).
inline double to_variant_s(const BuiltVariant& v, double r) {
  const auto& x = v.real_s;
  const auto& y = v.trace.time_s;
  if (r <= x.front()) return y.front() - (x.front() - r);
  if (r >= x.back()) return y.back() + (r - x.back());
  const auto it = std::upper_bound(x.begin(), x.end(), r);
  const std::size_t j = static_cast<std::size_t>(it - x.begin());
  const double span = x[j] - x[j - 1];
  return span > 0 ? y[j - 1] + (y[j] - y[j - 1]) * (r - x[j - 1]) / span : y[j];
}

inline VariantOutcome score_variant(const RealBase& base, const BuiltVariant& v, const Segmentation& seg) {
  VariantOutcome o;
  o.found = seg.found;
  o.confidence = seg.confidence;
  o.period_s = seg.period_s;
  o.candidate_s = seg.candidate_period_s;
  o.reason = seg.reason;
  // The truth's mean epoch in the variant's clock: the ratio of variant to real seconds over
  // the view (1 except where a collector's nominal interval is not its real one, plain dmon).
  const double real_span = v.real_s.back() - v.real_s.front();
  const double scale = real_span > 0 ? (v.trace.time_s.back() - v.trace.time_s.front()) / real_span : 1;
  // A forward clock step makes the variant's span longer than the real one: no scale there.
  const double use_scale = std::abs(scale - 1) < 0.02 ? scale : 1;
  o.truth_period_s = base.truth.period_s * use_scale;
  const double lo = std::max(v.real_s.front(), base.train_begin_s), hi = std::min(v.real_s.back(), base.train_end_s);
  o.epochs_in_view = std::max(0.0, hi - lo) / base.truth.period_s;
  const double dt = v.trace.median_interval_s();
  o.samples_per_epoch = dt > 0 ? o.truth_period_s / dt : 0;
  o.below_floor = o.samples_per_epoch < 8 || o.epochs_in_view < 3;
  if (seg.found) {
    o.period_err = std::abs(seg.period_s - o.truth_period_s) / o.truth_period_s;
    std::vector<EpochSpan> truth;
    for (const auto& e : base.truth.epochs)
      if (e.start_s >= v.real_s.front() - 1e-9 && e.end_s <= v.real_s.back() + 1e-9)
        truth.push_back({to_variant_s(v, e.start_s), to_variant_s(v, e.end_s)});
    o.boundary_err_s = truth.empty() ? NAN : median_boundary_error_s(truth, seg.epochs);
  }
  return o;
}

}  // namespace epochcast::testing
