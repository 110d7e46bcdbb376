// Bad input for every new format (issue 19): empty, header only, cut mid-record, a repeated or
// different header mid-file, garbage, prose, mixed GPUs, a units line missing, and mutations:
// one Error(kParse) naming file:line:column and field — or a trace — never a crash or hang.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <zlib.h>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "reader_test_kit.hpp"

namespace epochcast {
namespace {

using testing::slurp;

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/formats/";

std::string gunzip(const std::string& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(64u << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

struct Sample {
  std::string name;
  std::string text;
  std::size_t header_lines;  // lines of header before the first data line
};

std::vector<Sample> samples() {
  return {
      {"dmon.log", slurp(kDir + "two_gpus.smi-dmon.log"), 2},
      {"dmon_dt.log", slurp(kDir + "pucm_dt.smi-dmon.log"), 2},
      {"scrapes.txt", gunzip(slurp(kDir + "scrapes.metrics.txt.gz")), 0},
      {"wide.csv", slurp(kDir + "wide.dcgm.csv"), 1},
      {"grafana.csv", slurp(kDir + "grafana.csv"), 1},
      {"wandb.csv", slurp(kDir + "wandb_system.csv"), 1},
      {"mlflow.csv", slurp(kDir + "mlflow_history.csv"), 1},
      {"range.json", slurp(kDir + "query_range.json"), 0},
  };
}

std::string lines(const std::string& s, std::size_t from, std::size_t n) {
  std::size_t a = 0;
  for (std::size_t i = 0; i < from && a != std::string::npos; ++i) a = s.find('\n', a) + 1;
  std::size_t b = a;
  for (std::size_t i = 0; i < n && b != std::string::npos && b < s.size(); ++i) b = s.find('\n', b) + 1;
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// "name:LINE:COL: field 'F': …"
void expect_located(const std::string& what, const std::string& name) {
  static const std::regex kLocated(R"(^[^:]+:\d+:\d+: field '[^']*': .+)");
  EXPECT_TRUE(std::regex_search(what, kLocated)) << what;
  EXPECT_EQ(what.rfind(name, 0), 0u) << what;
}

std::string error_of(const std::string& text, const std::string& name, ReadOptions o = {}) {
  try {
    (void)read_trace_from_string(text, name, o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    return e.what();
  }
  return "";
}

TEST(FormatsBadInput, EmptyHeaderOnlyGarbageAndProseEachGiveOneLocatedError) {
  std::mt19937 rng(19);
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    EXPECT_NE(error_of("", s.name).find("empty file"), std::string::npos);
    if (s.header_lines > 0) {
      const std::string e = error_of(lines(s.text, 0, s.header_lines), s.name);
      expect_located(e, s.name);
      EXPECT_NE(e.find("header only"), std::string::npos) << e;
    }
    std::string garbage(2000, '\0');
    for (char& c : garbage) c = static_cast<char>(rng() % 256);
    expect_located(error_of(garbage, s.name), s.name);
    // a line of prose among the data rows
    const std::string prose = lines(s.text, 0, s.header_lines + 4) + "this is not data at all\n" + lines(s.text, s.header_lines + 4, 3);
    expect_located(error_of(prose, s.name), s.name);
  }
}

TEST(FormatsBadInput, CutMidRecordDropsTheLastLineOrNamesIt) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const std::string cut = s.text.substr(0, s.text.size() / 2 + 7);
    try {
      const Trace t = read_trace_from_string(cut, s.name);
      EXPECT_GT(t.size(), 10u);
    } catch (const Error& e) {
      expect_located(e.what(), s.name);  // JSON: a document cut short is an error at its end
    }
  }
}

TEST(FormatsBadInput, RepeatedHeaderMidFileIsSkippedAndADifferentOneNamed) {
  for (const Sample& s : samples()) {
    if (s.header_lines == 0) continue;
    SCOPED_TRACE(s.name);
    const std::string header = lines(s.text, 0, s.header_lines);
    const std::string twice = lines(s.text, 0, s.header_lines + 30) + header + lines(s.text, s.header_lines + 30, 30);
    ReadOptions o;
    o.interval_s = 1;
    const Trace t = read_trace_from_string(twice, s.name, o);
    bool said = false;
    for (const auto& w : t.diagnostics.warnings) said |= w.find("repeated header") != std::string::npos;
    EXPECT_TRUE(said);
    // a header with one name changed
    std::string other = header;
    other.replace(other.find_first_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPRSTUVWXYZ", other.find('\n') == std::string::npos ? other.size() / 2 : other.find('\n') / 2), 1, "Q");  // a name in the middle
    const std::string mixed = lines(s.text, 0, s.header_lines + 5) + other + lines(s.text, s.header_lines + 5, 5);
    expect_located(error_of(mixed, s.name, o), s.name);
  }
}

TEST(FormatsBadInput, MixedGpusPickTheBusiestAndSayIt) {
  for (const Sample& s : samples()) {
    if (s.name == "dmon_dt.log" || s.name == "mlflow.csv") continue;  // one GPU in these
    SCOPED_TRACE(s.name);
    ReadOptions o;
    o.interval_s = 1;
    const Trace t = read_trace_from_string(s.text, s.name, o);
    EXPECT_EQ(t.gpu.index, 0);
    EXPECT_EQ(t.gpus_in_source.size(), 2u);
    o.gpu = 7;
    try {
      (void)read_trace_from_string(s.text, s.name, o);
      ADD_FAILURE() << "GPU 7 read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_NE(std::string(e.what()).find("GPUs present: 0, 1"), std::string::npos) << e.what();
    }
  }
}

TEST(FormatsBadInput, UnitsMissing) {
  // nvidia-smi dmon without its "# Idx W C …" line; a Grafana value without the panel's unit
  const Sample dmon = samples()[0];
  const std::string no_units = lines(dmon.text, 0, 1) + lines(dmon.text, 2, 4);
  const std::string e = error_of(no_units, "dmon.log");
  expect_located(e, "dmon.log");
  EXPECT_NE(e.find("units line"), std::string::npos) << e;
  const Sample grafana = samples()[4];
  std::string g = lines(grafana.text, 0, 3);
  g.replace(g.rfind(" MHz"), 4, "");
  const std::string ge = error_of(g, "grafana.csv");
  // a value without a unit is a plain number in the canonical unit; with a wrong one it is named
  EXPECT_EQ(ge, "");
  g.replace(g.rfind(",") + 1, 0, "x");
  expect_located(error_of(g, "grafana.csv"), "grafana.csv");
}

TEST(FormatsBadInput, MutatedSamplesNeverEscapeAsAnythingButError) {
  std::vector<std::string> seeds;
  for (const Sample& s : samples()) seeds.push_back(s.text.substr(0, 6000));
  const auto n = testing::fuzz_readers(
      seeds, 1600, 20261201, "fuzz.log", ",\n []{}\"=%.-:/#0", "9e,.\"{",
      [](int i) {
        ReadOptions o;
        o.lenient = (i % 3) == 0;
        if (i % 5 == 0) o.interval_s = 0.5;
        return o;
      },
      [](const Trace& t) {
        for (const Channel& c : t.channels)
          for (double v : c.values) EXPECT_TRUE(plausible(c.metric, v)) << info(c.metric).tag << " " << v;
      });
  // Both outcomes happen: the mutations are neither all harmless nor all fatal.
  EXPECT_GT(n.traces, 100);
  EXPECT_GT(n.errors, 100);
}

}  // namespace
}  // namespace epochcast
