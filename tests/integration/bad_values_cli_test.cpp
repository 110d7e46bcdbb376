// Bad values through the built CLI: impossible readings, a device given as the
// model, collect overwriting a previous trace, the batch table with long names, hostile trace
// bytes, and `--json` staying valid JSON for every error (docs/journal/robustness.md, review round 6).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::fake_nvml_env;
using testing::read_file;
using testing::run_cli;
using testing::TempDir;

const std::string kData = EPOCHCAST_TEST_DATA;
const std::string kResnet = kData + "/h200/resnet50_224_bs256_bf16.smi.csv";
const std::string kLenet = kData + "/h200/lenet5_28_bs64_fp32.smi.csv";

bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// The resnet50 log with utilization.gpu 250 % in its third data row (line 4).
std::string write_with_impossible_util(const TempDir& dir) {
  std::ifstream in(kResnet);
  std::string line, out;
  for (int no = 1; std::getline(in, line); ++no) {
    if (no == 4) {
      // header: timestamp, index, name, uuid?, … utilization.gpu [%] … ; replace the util cell.
      const std::size_t pct = line.find(" %");
      EXPECT_NE(pct, std::string::npos) << line;
      const std::size_t start = line.rfind(", ", pct) + 2;
      line = line.substr(0, start) + "250" + line.substr(pct);
    }
    out += line + "\n";
  }
  const std::string path = (dir / "util250.smi.csv").string();
  std::ofstream(path) << out;
  return path;
}

TEST(BadValuesCli, ImpossibleReadingIsCountedByInfoAndWarnedByDetectAndPredict) {
  TempDir dir("bad-values");
  const std::string path = write_with_impossible_util(dir);
  const auto info = run_cli({"info", path, "--json"}, {}, dir.path());
  ASSERT_EQ(info.status, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["impossible_values"], 1);
  std::string warnings;
  for (const auto& w : j["warnings"]) warnings += w.get<std::string>() + "\n";
  EXPECT_TRUE(has(warnings, path + ": 1 impossible gpu_util_pct value(s) (outside 0 to 100 %) read as missing; the "
                                   "first at line 4, field 'utilization.gpu [%]': '250 %'"))
      << warnings;
  for (const auto& c : j["channels"])
    if (c["tag"] == "gpu_util_pct") EXPECT_LE(c["max"].get<double>(), 100) << "250 % was read as given";

  const auto table = run_cli({"info", path}, {}, dir.path());
  EXPECT_TRUE(has(table.out, "impossible   1 value(s) outside the metric's physical limits, read as missing"))
      << table.out;

  const auto detect = run_cli({"detect", path, "--json"}, {}, dir.path());
  ASSERT_EQ(detect.status, 0) << detect.err;
  const auto d = nlohmann::json::parse(detect.out);
  ASSERT_TRUE(d.contains("warnings")) << detect.out;
  EXPECT_TRUE(has(d["warnings"].dump(), "impossible gpu_util_pct")) << detect.out;
  const auto detect_table = run_cli({"detect", path}, {}, dir.path());
  EXPECT_TRUE(has(detect_table.out, "warnings:\n  - " + path + ": 1 impossible gpu_util_pct")) << detect_table.out;

  // --follow too: each JSON line carries the warnings; the text ends with them.
  const auto follow_json = run_cli({"detect", "--follow", path, "--json", "--idle-timeout", "0.5"}, {}, dir.path());
  ASSERT_EQ(follow_json.status, 0) << follow_json.err;
  std::string last = follow_json.out.substr(0, follow_json.out.find_last_not_of('\n') + 1);
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);  // the last JSON line
  EXPECT_TRUE(has(nlohmann::json::parse(last)["warnings"].dump(), "impossible gpu_util_pct")) << follow_json.out;
  const auto follow = run_cli({"detect", "--follow", path, "--idle-timeout", "0.5"}, {}, dir.path());
  EXPECT_TRUE(has(follow.out, "warnings:\n  - " + path + ": 1 impossible gpu_util_pct")) << follow.out;

  const auto predict = run_cli({"predict", path, "--json"}, {}, dir.path(), 300);
  ASSERT_EQ(predict.status, 0) << predict.err;
  EXPECT_TRUE(has(nlohmann::json::parse(predict.out)["warnings"].dump(), "trace: " + path + ": 1 impossible"))
      << predict.out;

  // The real log has none: no warning, no count.
  const auto clean = run_cli({"detect", kResnet, "--json"}, {}, dir.path());
  EXPECT_EQ(nlohmann::json::parse(clean.out)["warnings"], nlohmann::json::array()) << clean.out;
}

TEST(BadValuesCli, DeviceAsModelIsRefusedBeforeReading) {
  // Read 256 MiB of zeros (the cap) before failing.
  TempDir dir("bad-values");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_cli({"predict", kResnet, "--model", "/dev/zero"}, {}, dir.path());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(has(r.err, "cannot read model file '/dev/zero': it is a character device, not a file")) << r.err;
  EXPECT_LT(s, 20) << "took " << s << " s";
}

TEST(BadValuesCli, CollectRefusesToOverwriteAPreviousTraceWithoutForce) {
  TempDir dir("bad-values");
  const std::string out = (dir / "run.csv").string();
  const std::string previous = "# epochcast-trace v1\ntimestamp,gpu_util_pct\n2026-11-30T10:00:00Z,50\n";
  std::ofstream(out) << previous;
  const auto env = fake_nvml_env(kResnet, "10");
  const auto refused = run_cli({"collect", "-o", out, "--duration", "0.3"}, env, dir.path());
  EXPECT_EQ(refused.status, 3) << refused.err;
  EXPECT_TRUE(has(refused.err, "-o " + out + ": the file exists and holds " + std::to_string(previous.size()) +
                                   " bytes (a previous trace?); choose another name, or pass --force to overwrite it"))
      << refused.err;
  EXPECT_EQ(read_file(out), previous) << "the previous trace was touched";

  const auto forced = run_cli({"collect", "-o", out, "--duration", "0.3", "--force"}, env, dir.path());
  EXPECT_EQ(forced.status, 0) << forced.err;
  EXPECT_NE(read_file(out), previous);

  // An empty file (mktemp) is no previous trace: written without --force.
  const std::string empty = (dir / "empty.csv").string();
  std::ofstream{empty};
  const auto into_empty = run_cli({"collect", "-o", empty, "--duration", "0.3"}, env, dir.path());
  EXPECT_EQ(into_empty.status, 0) << into_empty.err;
  EXPECT_TRUE(has(read_file(empty), "# epochcast-trace v1"));
}

TEST(BadValuesCli, CollectLeavesAnImpossibleNvmlReadingEmptyAndSaysSo) {
  TempDir dir("bad-values");
  const std::string out = (dir / "t.csv").string();
  auto env = fake_nvml_env(kResnet, "10");
  env["EPOCHCAST_FAKE_NVML_VALUE"] = "gpu_util_pct=250";
  const auto r = run_cli({"collect", "-o", out, "--interval-ms", "20", "--duration", "0.3"}, env, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "impossible readings left empty")) << r.err;
  const std::string text = read_file(out);
  EXPECT_TRUE(has(text, "# GPU 0: impossible gpu_util_pct reading 250 (outside 0 to 100 %) at tick 0")) << text;
  EXPECT_FALSE(has(text, ",250,")) << text;
}

// Every row's second column starts where the header's does (display columns, UTF-8 aware).
void expect_aligned(const std::string& table, std::size_t rows) {
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < table.size();) {
    const std::size_t nl = table.find('\n', pos);
    lines.push_back(table.substr(pos, nl - pos));
    pos = nl == std::string::npos ? table.size() : nl + 1;
  }
  ASSERT_EQ(lines.size(), rows + 1) << table;
  auto columns_before = [](const std::string& line, std::size_t byte) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < byte; ++i) w += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    return w;
  };
  // The "source" column: the header's word, the rows' "h200".
  const std::size_t want = columns_before(lines[0], lines[0].find("source"));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::size_t at = lines[i].find(" h200 ");
    ASSERT_NE(at, std::string::npos) << lines[i];
    EXPECT_EQ(columns_before(lines[i], at + 1), want) << table;
    EXPECT_EQ(lines[i].find("…"), std::string::npos) << "name cut: " << lines[i];
  }
  // The last column (warnings) ends at the same column on every line.
  const std::size_t end = columns_before(lines[0], lines[0].size());
  for (const auto& l : lines) EXPECT_EQ(columns_before(l, l.size()), end) << table;
}

TEST(BadValuesCli, BatchTableAlignsLongAndUnicodeNames) {
  // Names over 44 bytes were cut to "…" + the last 43 bytes (mid-character for UTF-8); the
  // column is now as wide as the widest name.
  TempDir dir("bad-values");
  const fs::path folder = dir / "traces";
  fs::create_directories(folder);
  fs::copy_file(kLenet, folder / "a.smi.csv");
  const std::string long_name = "a_very_long_trace_file_name_of_a_lenet5_run_on_an_h200_in_fp32_" + std::string(40, 'x') +
                                ".smi.csv";
  fs::copy_file(kLenet, folder / long_name);
  fs::copy_file(kLenet, folder / "lénet_ünïcodé_ñame_wïth_mäny_twö_byte_chäracters_in_ït.smi.csv");
  const auto r = run_cli({"predict", folder.string()}, {}, dir.path(), 300);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_aligned(r.out, 3);
  EXPECT_TRUE(has(r.out, long_name + " h200")) << r.out;
}

// --json promises one JSON object on stdout, errors included: every failure below must parse.
TEST(BadValuesCli, JsonOutputStaysValidJsonForEveryError) {
  TempDir dir("bad-values");
  const std::string bad = (dir / "bad.smi.csv").string();
  std::ofstream(bad) << "timestamp, utilization.gpu [%]\n2026/11/30 10:00:00.000, \"quoted\\\x01\n";
  const std::string nul = (dir / "nul.csv").string();
  std::ofstream(nul, std::ios::binary) << std::string("timestamp, power.draw [W]\n\0\0\"\\", 30);
  const std::vector<std::vector<std::string>> commands = {
      {"info", bad, "--json"},
      {"info", nul, "--json"},
      {"detect", bad, "--json"},
      {"detect", (dir / "missing \"quoted\" name.csv").string(), "--json"},
      {"predict", nul, "--json"},
      {"predict", kResnet, "--json", "--model", "/dev/zero"},
      {"predict", kResnet, "--json", "--gpus", "no-such-gpu"},
      {"predict", kResnet, "--json", "--epoch-s", "1e-300"},  // was taken: an epoch of 1e-300 s
      {"eval", "--json", "--test", (dir / "nope.csv").string()},
      {"info", "--json", kResnet, "--gpu", "7"},
      // Not UTF-8 in the message: nlohmann's dump() threw inside the error handler (std::terminate).
      {"info", (dir / "\xff\xfe latin1 \xe9.csv").string(), "--json"},
  };
  for (const auto& cmd : commands) {
    const auto r = run_cli(cmd, {}, dir.path(), 300);
    SCOPED_TRACE(cmd[0] + " " + cmd[1]);
    EXPECT_NE(r.status, 0) << r.out;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << "not JSON: " << r.out << "\nstderr: " << r.err;
    ASSERT_TRUE(j.contains("error")) << r.out;
    EXPECT_TRUE(j["error"]["code"].is_string()) << r.out;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << r.out;
  }
  // Success output too: a GPU name in Latin-1 made `info --json` exit 70 (type_error 316).
  const std::string latin1 = (dir / "latin1.smi.csv").string();
  std::ofstream(latin1) << "timestamp, name, utilization.gpu [%]\n2026/11/30 10:00:00.000, Caf\xe9 GPU, 50 %\n"
                           "2026/11/30 10:00:01.000, Caf\xe9 GPU, 60 %\n";
  for (const std::string verb : {"info", "detect"}) {
    const auto r = run_cli({verb, latin1, "--json"}, {}, dir.path());
    EXPECT_EQ(r.status, 0) << verb << ": " << r.out << r.err;
    nlohmann::json parsed;
    EXPECT_NO_THROW(parsed = nlohmann::json::parse(r.out)) << verb << ": " << r.out;
  }
}

// A folder holding a symlink loop named like a log: filesystem_error escaped as exit 70; a
// dangling link was skipped without a word. Both are now rows that say why.
TEST(BadValuesCli, BrokenLinksInAFolderAreRowsNotCrashes) {
  TempDir dir("bad-values");
  const fs::path folder = dir / "traces";
  fs::create_directories(folder);
  fs::copy_file(kLenet, folder / "a.smi.csv");
  fs::create_symlink("loop.smi.csv", folder / "loop.smi.csv");
  fs::create_symlink("/nonexistent/x.csv", folder / "dangling.smi.csv");
  const auto r = run_cli({"predict", folder.string()}, {}, dir.path(), 300);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "Too many levels of symbolic links")) << r.out;
  EXPECT_TRUE(has(r.out, "dangling.smi.csv")) << r.out;
  EXPECT_TRUE(has(r.out, "a.smi.csv ")) << r.out;
  // Given directly, the loop "does not exist" was wrong: it exists and loops.
  const auto direct = run_cli({"predict", (folder / "loop.smi.csv").string(), "--json"}, {}, dir.path(), 300);
  EXPECT_EQ(direct.status, 3) << direct.out;
  EXPECT_TRUE(has(direct.out, "Too many levels of symbolic links")) << direct.out;
}

// A followed log rewritten under `detect --follow` (`> log` when training restarts) was read on
// from the old offset: the new file's bytes mid-line, ending in "wrong column count" (exit 4).
TEST(BadValuesCli, FollowSaysWhenTheFileIsRewrittenUnderIt) {
  TempDir dir("bad-values");
  const std::string path = (dir / "live.smi.csv").string();
  std::vector<std::string> lines;
  {
    std::ifstream in(kResnet);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  auto write = [&](std::size_t from, std::size_t to) {
    std::ofstream out(path, std::ios::trunc);
    out << lines[0] << "\n";
    for (std::size_t i = from; i < to && i < lines.size(); ++i) out << lines[i] << "\n";
  };
  write(1, 150);
  testing::Process p({EPOCHCAST_CLI, "detect", "--follow", path, "--idle-timeout", "5", "--poll-ms", "50"}, {},
                     dir.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  write(150, 308);  // longer than before: the size alone does not tell
  const int status = p.wait(60);
  EXPECT_EQ(status, 3) << p.err();
  EXPECT_TRUE(has(p.err(), path + " was truncated or rewritten while followed (its first bytes changed)")) << p.err();
  EXPECT_FALSE(has(p.err(), "wrong column count")) << p.err();
}

// A dataset statistic of 1e300 ended `fit` inside XGBoost (exit 70); 250 % was read as given.
// Both are missing now, and `fit` and `eval` say so (eval said nothing about its datasets).
TEST(BadValuesCli, ImpossibleDatasetStatisticsAreMissingAndSaid) {
  TempDir dir("bad-values");
  std::ifstream in(std::string(EPOCHCAST_SOURCE_DIR) + "/data/nvidiasmi_devicequery_all.csv");
  std::string header, line, out;
  std::getline(in, header);
  out = header + "\n";
  std::size_t util = 0;
  {
    std::stringstream names(header);
    std::size_t col = 0;
    for (std::string name; std::getline(names, name, ','); ++col)
      if (name == "utilization_gpu_mean") util = col;
  }
  ASSERT_GT(util, 0u);
  for (int no = 2; std::getline(in, line); ++no) {
    if (no == 3 || no == 4) {
      std::size_t start = 0;
      for (std::size_t c = 0; c < util; ++c) start = line.find(',', start) + 1;
      const std::size_t end = line.find(',', start);
      line = line.substr(0, start) + (no == 3 ? "1e300" : "250") + line.substr(end);
    }
    out += line + "\n";
  }
  const std::string data = (dir / "data.csv").string();
  std::ofstream(data) << out;
  const auto fit = run_cli({"fit", "--data", data, "-o", (dir / "m.json").string(), "--json"}, {}, dir.path(), 300);
  EXPECT_EQ(fit.status, 0) << fit.out << fit.err;
  EXPECT_EQ(nlohmann::json::parse(fit.out)["impossible_values"], 2) << fit.out;
  const auto eval = run_cli({"eval", "--test", data, "--json"}, {}, dir.path(), 300);
  EXPECT_EQ(eval.status, 0) << eval.err;
  EXPECT_TRUE(has(eval.err, data + ": 2 impossible value(s) read as missing; the first at line 3, field "
                              "'utilization_gpu_mean': '1e300' (outside 0 to 100 %)"))
      << eval.err;
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

// The bundled dataset cut to its identity/label columns and one metric's 7 statistics: 56 of its
// 63 statistic columns are gone.
std::string write_dataset_without_most_columns(const testing::TempDir& dir) {
  std::ifstream in(std::string(EPOCHCAST_SOURCE_DIR) + "/data/nvidiasmi_devicequery_all.csv");
  const fs::path out_path = dir.path() / "few-columns.csv";
  std::ofstream out(out_path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string c; std::getline(s, c, ',');) cells.push_back(c);
    for (std::size_t i = 0; i < 14 && i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
    out << "\n";
  }
  return out_path.string();
}

TEST(MissingColumnsCli, DatasetMissingStatisticColumnsIsRefusedNamingThem) {
  testing::TempDir dir("missing-columns");
  const std::string data = write_dataset_without_most_columns(dir);
  const std::string model = (dir.path() / "m.json").string();
  const auto r = testing::run_cli({"fit", "--data", data, "-o", model}, {}, dir.path());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--allow-missing is needed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("few-columns.csv lacks 56 of the 63 metric statistic columns of the bundled dataset"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("utilization_gpu_mean"), std::string::npos) << r.err;  // named
  EXPECT_EQ(r.err.find("clocks_current_graphicsMHz_mean"), std::string::npos) << r.err;  // it has that one
  EXPECT_FALSE(fs::exists(model));
  // eval refuses the same file the same way.
  const auto e = testing::run_cli({"eval", "--data", data, "--protocol", "kfold"}, {}, dir.path());
  EXPECT_EQ(e.status, 2) << e.err;
  EXPECT_NE(e.err.find("--allow-missing is needed"), std::string::npos) << e.err;
}

TEST(MissingColumnsCli, AllowMissingFitsAndSaysSoLoudly) {
  testing::TempDir dir("allow-missing");
  const std::string data = write_dataset_without_most_columns(dir);
  const std::string model = (dir.path() / "m.json").string();
  const auto r = testing::run_cli({"fit", "--data", data, "-o", model, "--allow-missing", "--json"}, {}, dir.path(), 300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + data + " lacks 56 of the 63 metric statistic columns of the bundled dataset"), std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["missing_columns"].size(), 56u);  // not the memory clock, which the bundled data lacks too
  EXPECT_TRUE(fs::exists(model));
}

}  // namespace
}  // namespace epochcast
