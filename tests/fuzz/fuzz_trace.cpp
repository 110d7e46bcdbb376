// Trace readers (nvidia-smi, dcgmi dmon, canonical CSV), whole and incremental, then detection
// and feature extraction on whatever parses; the same bytes also go through the host CSV reader
// (read_host_trace_from_string, serve's second upload part) and merge onto a GPU trace. The
// first byte picks the options.
#include <cmath>
#include <cstdint>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/features/feature_row.hpp"
#include "epochcast/trace/read.hpp"
#include "fuzz_common.hpp"

using namespace epochcast;

namespace {

// What a reader promises (docs/trace-formats.md): equal lengths, monotone finite time, and
// values finite or NaN (an infinite reading is an error, not a value) and within the metric's
// physical limits (an impossible reading is missing, counted and warned).
void check_trace(const Trace& t) {
  for (const Channel& c : t.channels) {
    if (c.values.size() != t.size()) fuzz::finding("channel length", std::string(info(c.metric).tag));
    for (double v : c.values) {
      if (std::isinf(v)) fuzz::finding("infinite value in channel", std::string(info(c.metric).tag));
      // Impossible readings (outside the metric table's limits) are stored as NaN, counted.
      if (!plausible(c.metric, v)) fuzz::finding("impossible value kept", std::string(info(c.metric).tag));
    }
  }
  if (t.diagnostics.impossible_values > 0) {
    bool said = false;
    for (const auto& w : t.diagnostics.warnings) said = said || w.find("impossible") != std::string::npos;
    if (!said) fuzz::finding("impossible values counted but not warned", std::to_string(t.diagnostics.impossible_values));
  }
  for (std::size_t k = 0; k < t.size(); ++k)
    if (!std::isfinite(t.time_s[k]) || (k > 0 && !(t.time_s[k] >= t.time_s[k - 1])))
      fuzz::finding("time not finite and monotone",
                    "sample " + std::to_string(k) + ": " + std::to_string(t.time_s[k]) +
                        (k > 0 ? " after " + std::to_string(t.time_s[k - 1]) : ""));
}

// A small real-looking GPU trace to merge a parsed host trace onto (and the reverse).
const Trace& fixed_gpu() {
  static const Trace t = [] {
    std::string s = "timestamp, utilization.gpu [%], power.draw [W]\n";
    for (int i = 0; i < 40; ++i)
      s += "2026/11/30 15:22:" + std::to_string(10 + i / 10) + "." + std::to_string(i % 10) + "00, " +
           std::to_string(i % 8 < 6 ? 97 : 3) + " %, " + std::to_string(200 + i) + ".5 W\n";
    return read_trace_from_string(s, "fixed.smi.csv");
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t sel = data[0];
  const std::string_view content(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string name = "fuzz.csv";
  ReadOptions o;
  o.lenient = sel & 1;
  o.format = static_cast<TraceFormat>((sel >> 1) & 3);
  if (sel & 8) o.gpu = (sel >> 4) & 1;
  if (sel & 32) o.interval_s = 0.1;
  if (sel & 64) o.smi_fields = {"timestamp", "index", "utilization.gpu", "power.draw"};

  if (sel & 128) {
    // Incremental: feed in uneven chunks, as `detect --follow` sees a growing file.
    fuzz::run_checked(name, true, [&] {
      IncrementalTraceReader r(name, o);
      std::size_t at = 0, step = 1;
      while (at < content.size()) {
        const std::size_t n = std::min(step, content.size() - at);
        r.feed(content.substr(at, n));
        at += n;
        step = step * 3 % 97 + 1;
      }
      check_trace(r.trace());
    });
    return 0;
  }
  // The host CSV reader sees every input: it is cheap, and most inputs die at its header.
  Trace host;
  bool host_parsed = false;
  fuzz::run_checked("fuzz_host.csv", true, [&] {
    host = read_host_trace_from_string(content, "fuzz_host.csv");
    host_parsed = true;
  });
  if (host_parsed) {
    check_trace(host);
    fuzz::run_checked("", false, [&] {
      Trace gpu = fixed_gpu();
      merge_host_trace(gpu, host);
      check_trace(gpu);
    });
  }
  Trace t;
  bool parsed = false;
  fuzz::run_checked(name, true, [&] {
    t = read_trace_from_string(content, name, o);
    parsed = true;
  });
  if (!parsed) return 0;
  check_trace(t);
  fuzz::run_checked("", false, [&] {
    Trace gpu = fixed_gpu();
    merge_host_trace(gpu, t);
    check_trace(gpu);
    merge_host_trace(t, fixed_gpu());
    check_trace(t);
    const Segmentation s = detect_epochs(t);
    if (s.found) {
      const FeatureRow f = extract_features(t, s);
      if (f.values.size() != feature_count()) fuzz::finding("feature row size", "");
    }
  });
  return 0;
}
