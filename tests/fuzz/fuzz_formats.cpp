// The readers of issue 19 (nvidia-smi dmon, dcgm-exporter scrapes, query_range JSON, DCGM_FI_* /
// Grafana / W&B / MLflow CSV) and gzip input: whatever the bytes, a trace that keeps the readers'
// promises or an epochcast::Error naming the file. The first byte picks the format and options.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "epochcast/trace/read.hpp"
#include "fuzz_common.hpp"

using namespace epochcast;

namespace {

constexpr TraceFormat kFormats[] = {TraceFormat::kAuto,      TraceFormat::kSmiDmon,    TraceFormat::kExposition,
                                    TraceFormat::kDcgmCsv,   TraceFormat::kGrafanaCsv, TraceFormat::kQueryRangeJson,
                                    TraceFormat::kWandb,     TraceFormat::kMlflow};

void check_trace(const Trace& t) {
  for (const Channel& c : t.channels) {
    if (c.values.size() != t.size()) fuzz::finding("channel length", std::string(info(c.metric).tag));
    for (double v : c.values)
      if (std::isinf(v) || !plausible(c.metric, v)) fuzz::finding("impossible value kept", std::string(info(c.metric).tag));
  }
  for (std::size_t k = 0; k < t.size(); ++k)
    if (!std::isfinite(t.time_s[k]) || (k > 0 && !(t.time_s[k] >= t.time_s[k - 1])))
      fuzz::finding("time not finite and monotone", std::to_string(k));
  for (double m : t.epoch_markers_s)
    if (!std::isfinite(m) || m < 0 || (t.size() && m > t.time_s.back() + 1e-6)) fuzz::finding("marker off the axis", "");
}

std::string gzip(std::string_view text) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t sel = data[0];
  std::string content(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string name = "fuzz.log";
  ReadOptions o;
  o.format = kFormats[sel & 7];
  o.lenient = sel & 8;
  if (sel & 16) o.interval_s = 0.1;
  if (sel & 32) o.gpu = 1;
  o.max_stream_bytes = 1 << 20;  // a bomb stops at 1 MiB of text
  if (sel & 64) content = gzip(content);  // the same bytes through zlib
  if (sel & 128) content = content.substr(0, content.size() / 2);  // a gzip (or text) cut short
  fuzz::run_checked(name, !(sel & 64) && o.format != TraceFormat::kQueryRangeJson, [&] {
    check_trace(read_trace_from_string(content, name, o));
  });
  return 0;
}
