// The bad-input matrix: every malformed file gives one Error(kParse) naming file, line, column
// and field — or, with lenient = true, a counted skip — and never a crash, hang or silent loss.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

const std::string kBad = std::string(EPOCHCAST_TEST_DATA) + "/bad/";

struct Expected {
  std::string file;
  std::uint64_t line;
  std::string field;     // "" = any non-empty field
  std::string contains;  // in the message
};

Error read_error(const std::string& path, const ReadOptions& o = {}) {
  try {
    (void)read_trace(path, o);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << path << ": no error";
  return Error(ErrorCode::kInternal, "none");
}

void expect_located(const Error& e, const Expected& x) {
  SCOPED_TRACE(e.what());
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.where().file, kBad + x.file);
  EXPECT_EQ(e.where().line, x.line);
  EXPECT_GE(e.where().column, 1u);
  if (x.field.empty()) EXPECT_FALSE(e.where().field.empty());
  else EXPECT_EQ(e.where().field, x.field);
  EXPECT_NE(e.detail().find(x.contains), std::string::npos);
  // The one-line message carries all of it: file:line:column: field '…': detail
  EXPECT_EQ(std::string(e.what()).rfind(fmt::format("{}:{}:{}: field '", kBad + x.file, x.line, e.where().column), 0),
            0u);
  EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
}

TEST(BadInput, Empty) { expect_located(read_error(kBad + "empty.smi.csv"), {"empty.smi.csv", 1, "(header)", "empty file"}); }

TEST(BadInput, HeaderOnly) {
  expect_located(read_error(kBad + "header_only.smi.csv"), {"header_only.smi.csv", 2, "(data)", "header only"});
}

TEST(BadInput, WrongColumnCount) {
  const Error e = read_error(kBad + "wrong_column_count.smi.csv");
  expect_located(e, {"wrong_column_count.smi.csv", 5, "pstate", "wrong column count (7, expected 8)"});
}

TEST(BadInput, TextInNumberColumn) {
  const Error e = read_error(kBad + "text_in_number.smi.csv");
  expect_located(e, {"text_in_number.smi.csv", 6, "power.draw [W]", "not a number: 'lots W'"});
  EXPECT_EQ(e.where().column, 61u);  // where "lots W" starts
}

TEST(BadInput, TextInNumberColumnLenientSkipsAndCounts) {
  ReadOptions o;
  o.lenient = true;
  const Trace t = read_trace(kBad + "text_in_number.smi.csv", o);
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t.diagnostics.rows_skipped, 1u);
  ASSERT_EQ(t.diagnostics.skips.size(), 1u);
  EXPECT_EQ(t.diagnostics.skips[0].line, 6u);
  EXPECT_NE(t.diagnostics.skips[0].reason.find("not a number"), std::string::npos);
  const Trace w = read_trace(kBad + "wrong_column_count.smi.csv", o);
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.diagnostics.rows_skipped, 1u);
}

TEST(BadInput, BinaryGarbage) {
  const Error e = read_error(kBad + "binary_garbage.bin");
  expect_located(e, {"binary_garbage.bin", 1, "(line)", "binary data"});
}

TEST(BadInput, BadTimestamp) {
  expect_located(read_error(kBad + "bad_timestamp.smi.csv"),
                 {"bad_timestamp.smi.csv", 4, "timestamp", "not a timestamp: '2026/13/30 15:22:53.200'"});
}

// Day 31 of a 30-day month read as the 1st of the next: a one-day clock step, not an error.
TEST(BadInput, DayPastTheEndOfTheMonthIsNotATimestamp) {
  const std::string head = "timestamp, utilization.gpu [%]\n2026/11/30 10:00:00.000, 5\n";
  for (const std::string stamp : {"2026/11/31 10:00:00.100", "2026/02/29 10:00:00.100", "2026-04-31T10:00:00Z"}) {
    try {
      (void)read_trace_from_string(head + stamp + ", 6\n", "days.csv");
      ADD_FAILURE() << stamp << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_EQ(e.where().line, 3u) << e.what();
      EXPECT_NE(e.detail().find("not a timestamp"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(read_trace_from_string(head + "2028/02/29 10:00:00.100, 6\n", "leap.csv").size(), 2u);
}

// `nvidia-smi --query-gpu=… --format=csv > log.csv` in Windows PowerShell 5 writes UTF-16LE;
// the error said only "binary data (byte 0x00)".
TEST(BadInput, Utf16LogSaysUtf16) {
  const std::string text = "timestamp, utilization.gpu [%]\n2026/11/30 10:00:00.000, 5\n";
  std::string le("\xFF\xFE", 2), le_plain, be("\xFE\xFF", 2);
  for (char c : text) {
    le += c, le += '\0';
    le_plain += c, le_plain += '\0';
    be += '\0', be += c;
  }
  for (const std::string& input : {le, le_plain, be}) {
    try {
      (void)read_trace_from_string(input, "utf16.csv");
      ADD_FAILURE() << "read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.where().line, 1u);
      EXPECT_NE(e.detail().find("UTF-16 text"), std::string::npos) << e.what();
    }
  }
}

TEST(BadInput, TruncatedLastLineIsDroppedCountedAndWarned) {
  const Trace t = read_trace(kBad + "truncated_last_line.smi.csv");
  EXPECT_EQ(t.size(), 6u);
  EXPECT_TRUE(t.diagnostics.truncated_last_line);
  EXPECT_EQ(t.diagnostics.rows_skipped, 1u);
  ASSERT_EQ(t.diagnostics.skips.size(), 1u);
  EXPECT_EQ(t.diagnostics.skips[0].line, 8u);
  bool warned = false;
  for (const auto& w : t.diagnostics.warnings) warned |= w.find("cut mid-write") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(BadInput, CompleteLastLineWithoutNewlineIsKept) {
  const std::string log = "timestamp, power.draw [W]\n2026/11/30 10:00:00.000, 1 W\n2026/11/30 10:00:00.100, 2 W";
  const Trace t = read_trace_from_string(log, "nonl.csv");
  EXPECT_EQ(t.size(), 2u);
  EXPECT_FALSE(t.diagnostics.truncated_last_line);
}

TEST(BadInput, MixedFormats) {
  const Error e = read_error(kBad + "mixed_formats.log");
  expect_located(e, {"mixed_formats.log", 8, "(header)", "formats are mixed"});
}

TEST(BadInput, DmonTextInNumber) {
  const Error e = read_error(kBad + "text_in_number.dmon.log");
  expect_located(e, {"text_in_number.dmon.log", 5, "GPUTL", "not a number: '9x7'"});
  EXPECT_EQ(e.where().column, 11u);
}

TEST(BadInput, CanonicalTextInNumber) {
  expect_located(read_error(kBad + "text_in_number.canonical.csv"),
                 {"text_in_number.canonical.csv", 4, "power_w", "not a number: 'NaNaN'"});
}

TEST(BadInput, UnknownFormatNamesTheFirstLine) {
  const std::string path = testing::TempDir() + "prose.txt";
  std::ofstream(path) << "Dear user,\nthis is not a trace.\n";
  try {
    (void)read_trace(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 1u);
    EXPECT_NE(e.detail().find("unrecognised trace format"), std::string::npos);
  }
}

TEST(BadInput, HugeNumbersNaNAndInfinity) {
  const std::string head = "timestamp, power.draw [W]\n2026/11/30 10:00:00.000, 1 W\n";
  try {
    (void)read_trace_from_string(head + "2026/11/30 10:00:00.100, inf W\n", "inf.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().field, "power.draw [W]");
    EXPECT_EQ(e.where().line, 3u);
  }
  try {
    (void)read_trace_from_string(head + "2026/11/30 10:00:00.100, 1e999 W\n", "huge.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 3u);
  }
  const Trace t = read_trace_from_string(head + "2026/11/30 10:00:00.100, nan W\n", "nan.csv");
  EXPECT_TRUE(std::isnan(t.find(Metric::kPower)->values[1]));
}

// Found by fuzzing (tests/fuzz/fuzz_trace): a finite value that overflows when converted to
// the canonical unit was stored as +inf, which the reader otherwise refuses.
TEST(BadInput, ValueOverflowingOnUnitConversionIsAnError) {
  const std::string header_unit = "timestamp, memory.used [GiB]\n2026/11/30 10:00:00.000, 1\n";
  try {
    (void)read_trace_from_string(header_unit + "2026/11/30 10:00:00.100, 1e308\n", "gib.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_EQ(e.where().field, "memory.used [GiB]");
    EXPECT_NE(e.detail().find("out of range"), std::string::npos) << e.what();
  }
  const std::string value_unit = "timestamp, memory.used [MiB]\n2026/11/30 10:00:00.000, 1 GiB\n";
  try {
    (void)read_trace_from_string(value_unit + "2026/11/30 10:00:00.100, 1e308 GiB\n", "gib2.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_EQ(e.where().column, 26u);
  }
  // Lenient mode skips the row instead.
  ReadOptions lenient;
  lenient.lenient = true;
  const Trace t = read_trace_from_string(value_unit + "2026/11/30 10:00:00.100, 1e308 GiB\n2026/11/30 10:00:00.200, 2 GiB\n",
                                         "gib3.csv", lenient);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.diagnostics.rows_skipped, 1u);
  EXPECT_EQ(t.find(Metric::kMemUsed)->values[1], 2048.0);
}

TEST(BadInput, MissingFileIsAnIoError) {
  try {
    (void)read_trace(kBad + "does-not-exist.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("does-not-exist.csv"), std::string::npos);
  }
}

TEST(BadInput, LineWithoutNewlinePastTheCapFailsFast) {
  std::string log = "timestamp, power.draw [W]\n2026/11/30 10:00:00.000, 1 W\n";
  log += std::string(3u << 20, 'x');
  try {
    (void)read_trace_from_string(log, "long.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_NE(e.detail().find("line longer than"), std::string::npos);
  }
}

TEST(BadInput, ControlBytesAreFoundAtTheirColumnAndTabsAreText) {
  const std::string head = "timestamp, power.draw [W]\n2026/11/30 10:00:00.000, 1 W\n";
  for (const char bad : {'\x00', '\x1b', '\x7f'}) {
    std::string row = "2026/11/30 10:00:00.100, 2 W\n";
    row[16] = bad;
    try {
      (void)read_trace_from_string(head + row, "ctl.csv");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.where().line, 3u);
      EXPECT_EQ(e.where().column, 17u);
      EXPECT_NE(e.detail().find("binary data"), std::string::npos);
    }
  }
  // A ~900 KiB line of tabs is text, not binary: a located column-count error, quickly.
  try {
    (void)read_trace_from_string(head + std::string(900 << 10, '\t') + "x\n", "tabs.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_NE(e.detail().find("wrong column count"), std::string::npos);
  }
}

// Peak resident memory since the last reset, in MiB (Linux).
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    std::getline(status, key);
  }
  return -1;
}
double current_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    std::getline(status, key);
  }
  return -1;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// AddressSanitizer's shadow memory and quarantine inflate RSS; memory bounds are checked in
// plain builds only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCheckRss = false;
#else
constexpr bool kCheckRss = true;
#endif

// A 2 GiB file: valid rows, then a sparse hole of NUL bytes. The reader must stop at the
// garbage with a located error after reading a few MiB, not load 2 GiB.
TEST(BadInput, TwoGigabyteSparseFileIsStreamedAndRejectedAtTheGarbage) {
  const std::string path = testing::TempDir() + "two_gib.smi.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << "timestamp, power.draw [W]\n";
    for (int i = 0; i < 1000; ++i) out << fmt::format("2026/11/30 10:{:02}:{:02}.000, {} W\n", i / 60, i % 60, i);
  }
  ASSERT_EQ(::truncate(path.c_str(), 2LL << 30), 0);
  ASSERT_EQ(std::filesystem::file_size(path), 2ull << 30);
  reset_peak_rss();
  const double before = current_rss_mib();
  try {
    (void)read_trace(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 1002u);
    EXPECT_NE(e.detail().find("binary data (byte 0x00)"), std::string::npos);
  }
  const double peak = peak_rss_mib();
  if (kCheckRss && peak > 0 && before > 0) EXPECT_LT(peak - before, 64.0);
  std::filesystem::remove(path);
}

// ~100 MB of valid interleaved rows, reading only GPU 0 which appears once in 1000 rows:
// memory stays flat because the file is streamed, not slurped.
TEST(BadInput, HundredMegabyteLogIsStreamedInBoundedMemory) {
  const std::string path = testing::TempDir() + "hundred_mb.smi.csv";
  std::size_t rows = 0;
  {
    std::ofstream out(path, std::ios::binary);
    out << "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
    std::string chunk;
    for (int i = 0; i < 1000; ++i)
      chunk += fmt::format("2026/11/30 10:00:00.000, {}, NVIDIA H200, 312.40 W, 97 %\n", i == 0 ? 0 : 1);
    while (std::filesystem::file_size(path) < 100'000'000 || rows == 0) {
      out << chunk;
      out.flush();
      rows += 1000;
    }
  }
  reset_peak_rss();
  const double before = current_rss_mib();
  ReadOptions o;
  o.gpu = 0;
  const Trace t = read_trace(path, o);
  const double peak = peak_rss_mib();
  EXPECT_EQ(t.diagnostics.rows_read, rows);
  EXPECT_EQ(t.size(), rows / 1000);
  EXPECT_EQ(t.gpus_in_source.size(), 2u);
  if (kCheckRss && peak > 0 && before > 0) EXPECT_LT(peak - before, 32.0) << "reader held the file in memory?";
  std::filesystem::remove(path);
}

// Opt-in (EPOCHCAST_LARGE_TESTS=1): a real 2 GiB log of valid rows, read end to end.
TEST(BadInput, TwoGigabyteValidLogOptIn) {
  if (!std::getenv("EPOCHCAST_LARGE_TESTS")) GTEST_SKIP() << "set EPOCHCAST_LARGE_TESTS=1 to run";
  const std::string path = testing::TempDir() + "two_gib_valid.smi.csv";
  std::size_t rows = 0;
  {
    std::ofstream out(path, std::ios::binary);
    out << "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
    std::string chunk;
    for (int i = 0; i < 10000; ++i)
      chunk += fmt::format("2026/11/30 10:00:00.000, {}, NVIDIA H200, 312.40 W, 97 %\n", i == 0 ? 0 : 1);
    while (std::filesystem::file_size(path) < (2ull << 30)) {
      out << chunk;
      out.flush();
      rows += 10000;
    }
  }
  reset_peak_rss();
  const double before = current_rss_mib();
  ReadOptions o;
  o.gpu = 0;
  const Trace t = read_trace(path, o);
  EXPECT_EQ(t.diagnostics.rows_read, rows);
  if (kCheckRss) EXPECT_LT(peak_rss_mib() - before, 64.0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace epochcast
