// What every reader makes of every sample file, held to a golden list: one line per (file,
// options) with a hash of the whole Trace (time axis, channels bit for bit, identity, warnings,
// diagnostics, markers) or the error it gave. A change to a reader's splitting, number parsing or
// calendar that alters any row, value or message shows here as a changed line.
//
// Regenerate after an intended change: EPOCHCAST_UPDATE_GOLDEN=1 build/tests/test_trace
// --gtest_filter='ReaderDigest*', then read `git diff tests/data/golden/reader_digests.txt`.
// EPOCHCAST_DIGEST_DIR=DIR EPOCHCAST_DIGEST_OUT=FILE also digests every file of DIR (a fuzz
// corpus: the first byte picks the options as fuzz_formats and fuzz_trace do) into FILE, for a
// before/after comparison of the two builds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "reader_test_kit.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;

class Fnv {
 public:
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ULL;
  }
  void text(std::string_view s) {
    number(s.size());
    bytes(s.data(), s.size());
  }
  template <typename T>
  void number(T v) {
    bytes(&v, sizeof v);
  }
  void doubles(const std::vector<double>& v) {
    number(v.size());
    bytes(v.data(), v.size() * sizeof(double));
  }
  [[nodiscard]] std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// start_unix_s is left out: a zone-less stamp resolves with the machine's TZ.
std::string digest(const Trace& t) {
  Fnv h;
  h.text(t.format);
  for (const GpuIdentity* g : {&t.gpu}) {
    h.number(g->index);
    h.text(g->name);
    h.text(g->uuid);
  }
  h.number(t.gpus_in_source.size());
  for (const auto& g : t.gpus_in_source) {
    h.number(g.index);
    h.text(g.name);
    h.text(g.uuid);
  }
  h.text(t.first_timestamp);
  h.doubles(t.time_s);
  for (const Channel& c : t.channels) {
    h.number(static_cast<int>(c.metric));
    h.doubles(c.values);
  }
  const TraceDiagnostics& d = t.diagnostics;
  h.number(static_cast<int>(d.time_axis));
  h.number(d.interval_s);
  for (auto n : {d.rows_read, d.rows_skipped, d.repeated_timestamps, d.backward_steps, d.midnight_rollovers, d.gaps,
                 d.impossible_values})
    h.number(n);
  h.number(d.truncated_last_line);
  for (const auto& s : d.skips) {
    h.number(s.line);
    h.text(s.reason);
  }
  for (const auto& w : d.warnings) h.text(w);
  h.doubles(t.epoch_markers_s);
  return fmt::format("ok {} rows={} ch={} {:016x}", t.format, t.size(), t.channels.size(), h.value());
}

template <typename F>
std::string outcome(F&& read) {
  try {
    return digest(read());
  } catch (const Error& e) {
    Fnv h;
    h.text(e.what());
    return fmt::format("error {} {:016x} {}", to_string(e.code()), h.value(),
                       std::string(e.what()).substr(0, 160));
  } catch (const std::exception& e) {
    return fmt::format("EXCEPTION {}", e.what());
  }
}

// The option sets every sample file is read with.
struct Variant {
  const char* name;
  ReadOptions options;
};
std::vector<Variant> variants() {
  std::vector<Variant> v{{"default", {}}, {"lenient", {}}, {"interval", {}}, {"gpu1", {}}};
  v[1].options.lenient = true;
  v[2].options.interval_s = 0.1;
  v[3].options.gpu = 1;
  return v;
}

std::vector<fs::path> files_below(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Sample inputs: every file of tests/data but the goldens and the job store's databases.
std::vector<std::string> golden_lines() {
  const fs::path root = EPOCHCAST_TEST_DATA;
  std::vector<std::string> lines;
  for (const fs::path& p : files_below(root)) {
    const std::string rel = fs::relative(p, root).generic_string();
    if (rel.starts_with("golden/") || rel.starts_with("store/") || rel.ends_with(".md") || rel.ends_with(".py") ||
        rel.ends_with(".png") || rel.ends_with(".svg") || rel.ends_with(".html"))
      continue;
    const std::string content = testing::slurp(p.string());
    for (const Variant& v : variants())
      lines.push_back(fmt::format("{} [{}] {}", rel, v.name,
                                  outcome([&] { return read_trace_from_string(content, rel, v.options); })));
  }
  return lines;
}

// A fuzz corpus input as fuzz_formats reads it (first byte: format, lenient, interval, gpu; the
// gzip and cut bits are left out: zlib's output is not the reader's) and as fuzz_trace does.
std::vector<std::string> corpus_lines(const fs::path& dir) {
  constexpr TraceFormat kFormats[] = {TraceFormat::kAuto,      TraceFormat::kSmiDmon,    TraceFormat::kExposition,
                                      TraceFormat::kDcgmCsv,   TraceFormat::kGrafanaCsv, TraceFormat::kQueryRangeJson,
                                      TraceFormat::kWandb,     TraceFormat::kMlflow};
  std::vector<std::string> lines;
  for (const fs::path& p : files_below(dir)) {
    const std::string bytes = testing::slurp(p.string());
    if (bytes.empty()) continue;
    const auto sel = static_cast<std::uint8_t>(bytes[0]);
    const std::string content = bytes.substr(1);
    ReadOptions a;
    a.format = kFormats[sel & 7];
    a.lenient = sel & 8;
    if (sel & 16) a.interval_s = 0.1;
    if (sel & 32) a.gpu = 1;
    a.max_stream_bytes = 1 << 20;
    ReadOptions b;
    b.lenient = sel & 1;
    b.format = static_cast<TraceFormat>((sel >> 1) & 3);
    if (sel & 8) b.gpu = (sel >> 4) & 1;
    if (sel & 32) b.interval_s = 0.1;
    if (sel & 64) b.smi_fields = {"timestamp", "index", "utilization.gpu", "power.draw"};
    const std::string name = p.filename().string();
    lines.push_back(fmt::format("{} [formats] {}", name, outcome([&] { return read_trace_from_string(content, "fuzz.log", a); })));
    lines.push_back(fmt::format("{} [trace] {}", name, outcome([&] { return read_trace_from_string(content, "fuzz.csv", b); })));
    lines.push_back(fmt::format("{} [incremental] {}", name, outcome([&] {
                                  IncrementalTraceReader r("fuzz.csv", b);
                                  for (std::size_t at = 0, step = 1; at < content.size(); step = step * 3 % 97 + 1) {
                                    const std::size_t n = std::min(step, content.size() - at);
                                    r.feed(std::string_view(content).substr(at, n));
                                    at += n;
                                  }
                                  return r.trace();
                                })));
  }
  return lines;
}

TEST(ReaderDigest, EverySampleFileReadsAsTheGoldenListSays) {
  const std::vector<std::string> lines = golden_lines();
  ASSERT_GE(lines.size(), 150u);  // every sample of tests/data, four ways
  const fs::path golden = fs::path(EPOCHCAST_TEST_DATA) / "golden" / "reader_digests.txt";
  if (const char* u = std::getenv("EPOCHCAST_UPDATE_GOLDEN"); u && *u == '1') {
    std::ofstream out(golden);
    for (const auto& l : lines) out << l << '\n';
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << golden << " is missing: run with EPOCHCAST_UPDATE_GOLDEN=1";
  std::vector<std::string> want;
  for (std::string l; std::getline(in, l);) want.push_back(l);
  EXPECT_EQ(want.size(), lines.size());
  for (std::size_t i = 0; i < std::min(want.size(), lines.size()); ++i) EXPECT_EQ(want[i], lines[i]) << "line " << i + 1;
  for (const auto& l : lines) EXPECT_EQ(l.find("EXCEPTION"), std::string::npos) << l;

  if (const char* dir = std::getenv("EPOCHCAST_DIGEST_DIR"); dir && *dir) {
    const char* out_path = std::getenv("EPOCHCAST_DIGEST_OUT");
    ASSERT_TRUE(out_path && *out_path) << "EPOCHCAST_DIGEST_DIR needs EPOCHCAST_DIGEST_OUT";
    std::ofstream out(out_path);
    for (const auto& l : corpus_lines(dir)) out << l << '\n';
  }
}

}  // namespace
}  // namespace epochcast
