// Input limits through the built CLI: an endless stdin or pipe stopped at the stream cap; the
// bundled held-out figures shown only for a model fitted on the bundled data (its data
// fingerprint), not for one fitted on altered data with the same pair count; GPU catalog
// figures outside their plausible range; 1e309 out of range.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::Process;
using testing::run_cli;
using testing::TempDir;

const std::string kSource = EPOCHCAST_SOURCE_DIR;
const std::string kTrace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `sh -c COMMAND` with the CLI as $EC; the CLI side is killed after 60 s and held to 4 GB of
// address space, so a regression (reading an endless pipe) fails the test instead of the box.
testing::RunResult shell(const std::string& command, const TempDir& dir, const testing::EnvVars& env = {}) {
  Process p({"/bin/sh", "-c", "ulimit -v 4000000; EC=" + std::string(EPOCHCAST_CLI) + "; " + command}, env,
            dir.path());
  const int status = p.wait(120);
  return {status, p.out(), p.err()};
}

// gen.sh in `dir`: a header, then the same data row forever (until its reader goes away).
std::string write_generator(const TempDir& dir) {
  std::ofstream(dir / "gen.sh") << "head -n 1 '" << kTrace
                                << "'\nexec yes '2026/11/30 15:27:00.523, 0, NVIDIA H200, 1980 MHz, 1980 MHz, 142232 "
                                   "MiB, 143771 MiB, 925 MiB, 127.86 W, 47, 1 %, 0 %, 3201 MHz, P0, 5'\n";
  return "sh \"" + (dir / "gen.sh").string() + "\"";
}

TEST(StreamCapCli, EveryCommandReadingStdinStopsAnEndlessOneAtTheCap) {
  TempDir dir("stream-cap");
  const std::string kEndless = write_generator(dir);
  const testing::EnvVars cap = {{"EPOCHCAST_MAX_STREAM_BYTES", "2000000"}};
  for (const std::string command : {"info -", "info - --json", "detect -", "predict - --source-gpu h200"}) {
    SCOPED_TRACE(command);
    const auto r = shell(kEndless + " | timeout -s KILL 60 $EC " + command, dir, cap);
    EXPECT_EQ(r.status, 3) << r.err;
    const std::string said = has(command, "--json") ? r.out : r.err;
    EXPECT_TRUE(has(said, "<stdin>: more than 2000000 bytes read from standard input without reaching its end"))
        << said;
    EXPECT_TRUE(has(said, "EPOCHCAST_MAX_STREAM_BYTES")) << said;
    if (has(command, "--json")) EXPECT_FALSE(nlohmann::json::parse(r.out, nullptr, false).is_discarded()) << r.out;
  }
  // A pipe given as a path (bash's <(…) is /dev/fd/N), and a FIFO.
  const auto fd = shell("exec bash -c 'timeout -s KILL 60 $0 info <(" + kEndless + ")' $EC", dir, cap);
  EXPECT_EQ(fd.status, 3) << fd.err;
  EXPECT_TRUE(has(fd.err, "read from a stream (a pipe, FIFO or device) without reaching its end")) << fd.err;
  const std::string f = (dir / "f").string();
  const auto fifo = shell("mkfifo " + f + " && { " + kEndless + " > " + f + " & } && timeout -s KILL 60 $EC info " + f,
                          dir, cap);
  EXPECT_EQ(fifo.status, 3) << fifo.err;
  EXPECT_TRUE(has(fifo.err, f + ": more than 2000000 bytes read from a stream")) << fifo.err;
  // A finite stdin under the cap reads whole, as a regular file of any size does.
  const auto finite = shell("head -n 200 " + kTrace + " | $EC info - --json", dir, cap);
  ASSERT_EQ(finite.status, 0) << finite.err;
  EXPECT_EQ(nlohmann::json::parse(finite.out)["samples"], 199);
  EXPECT_EQ(run_cli({"info", kTrace}, {{"EPOCHCAST_MAX_STREAM_BYTES", "10"}}, dir.path()).status, 0);
}

// The nulls' helper threads (docs/detection.md "The nulls on idle cores"): a count the same
// answer as one thread; anything but a whole number 0-1024 is exit 2 naming the variable.
TEST(InputLimitsCli, SurrogateHelpersSettingIsCheckedAndChangesNothingInTheAnswer) {
  TempDir dir("surrogate-helpers");
  const auto one = run_cli({"detect", kTrace, "--json"}, {{"EPOCHCAST_SURROGATE_HELPERS", "0"}}, dir.path());
  const auto many = run_cli({"detect", kTrace, "--json"}, {{"EPOCHCAST_SURROGATE_HELPERS", "3"}}, dir.path());
  ASSERT_EQ(one.status, 0) << one.err;
  ASSERT_EQ(many.status, 0) << many.err;
  EXPECT_EQ(one.out, many.out);
  for (const char* bad : {"abc", "-1", "2g", "5000"}) {
    const auto r = run_cli({"detect", kTrace}, {{"EPOCHCAST_SURROGATE_HELPERS", bad}}, dir.path());
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_TRUE(has(r.err, std::string("EPOCHCAST_SURROGATE_HELPERS='") + bad + "'")) << r.err;
  }
}

// ---- validation figures and the data fingerprint ----

// The bundled dataset with one epoch time changed by 10 %: the same rows, the same pairs.
std::string altered_dataset(const TempDir& dir) {
  std::istringstream in(slurp(kSource + "/data/nvidiasmi_devicequery_all.csv"));
  std::string line, out;
  std::size_t label = 0;
  for (int no = 1; std::getline(in, line); ++no) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string c; std::getline(s, c, ',');) cells.push_back(c);
    if (no == 1) {
      label = std::find(cells.begin(), cells.end(), "one_epoch_average_second") - cells.begin();
    } else if (no == 2) {
      EXPECT_EQ(line.find('"'), std::string::npos);
      cells[label] = std::to_string(std::stod(cells[label]) * 1.1);
      line.clear();
      for (std::size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + cells[i];
    }
    out += line + "\n";
  }
  const std::string path = (dir / "altered.csv").string();
  std::ofstream(path) << out;
  return path;
}

nlohmann::json predict_validation(const std::string& model, const TempDir& dir) {
  const auto r = run_cli({"predict", kTrace, "--model", model, "--json"}, {}, dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out)["validation"];
}

TEST(ValidationFingerprintCli, BundledFiguresOnlyForAModelFittedOnTheBundledData) {
  TempDir dir("fingerprint");
  const std::string bundled = (dir / "bundled.json").string(), altered = (dir / "altered.json").string();
  const auto fit_bundled = run_cli({"fit", "-o", bundled, "--json"}, {}, dir.path());
  ASSERT_EQ(fit_bundled.status, 0) << fit_bundled.err;
  const auto fit_altered = run_cli({"fit", "--data", altered_dataset(dir), "-o", altered, "--json"}, {}, dir.path());
  ASSERT_EQ(fit_altered.status, 0) << fit_altered.err;
  const auto jb = nlohmann::json::parse(fit_bundled.out), ja = nlohmann::json::parse(fit_altered.out);
  // What the old check compared is all equal: schema, pair count, options.
  ASSERT_EQ(jb["pairs"], ja["pairs"]);
  ASSERT_EQ(jb["schema_hash"], ja["schema_hash"]);
  EXPECT_NE(jb["data_fingerprint"], ja["data_fingerprint"]);
  EXPECT_TRUE(jb["bundled_validation_applies"].get<bool>()) << jb["validation_note"];
  EXPECT_FALSE(ja["bundled_validation_applies"].get<bool>());

  const nlohmann::json vb = predict_validation(bundled, dir);
  EXPECT_TRUE(vb["available"].get<bool>()) << vb["note"];
  const nlohmann::json va = predict_validation(altered, dir);
  EXPECT_FALSE(va["available"].get<bool>());
  EXPECT_TRUE(va["protocols"].empty());
  const std::string note = va["note"].get<std::string>();
  EXPECT_TRUE(has(note, "unknown for this model's data")) << note;
  EXPECT_TRUE(has(note, ja["data_fingerprint"].get<std::string>())) << note;
  EXPECT_TRUE(has(note, "epochcast eval --data")) << note;
  // The text report says so on its Model line instead of showing the figures.
  const auto text = run_cli({"predict", kTrace, "--model", altered}, {}, dir.path());
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(has(text.out, "Model:    " + altered + "; held-out figures unknown for this model's data")) << text.out;
  EXPECT_FALSE(has(text.out, "held-out lomo MAPE")) << text.out;
  const auto text_bundled = run_cli({"predict", kTrace, "--model", bundled}, {}, dir.path());
  EXPECT_TRUE(has(text_bundled.out, "held-out lomo MAPE")) << text_bundled.out;
  // `fit` says which, in its text output too.
  const auto fit_text = run_cli({"fit", "--data", altered_dataset(dir), "-o", altered}, {}, dir.path());
  EXPECT_TRUE(has(fit_text.out, "held-out  Held-out figures unknown for this model's data")) << fit_text.out;

  // A model file from before the fingerprint loads and predicts; the figures are unknown.
  nlohmann::json old = nlohmann::json::parse(slurp(bundled));
  old["training"].erase("data_fingerprint");
  const std::string old_path = (dir / "old.json").string();
  std::ofstream(old_path) << old.dump();
  const nlohmann::json vo = predict_validation(old_path, dir);
  EXPECT_FALSE(vo["available"].get<bool>());
  EXPECT_TRUE(has(vo["note"].get<std::string>(), "does not record the data it was fitted on")) << vo["note"];

  // eval --json states the fingerprint of the data it scored: the one fit records for it.
  // (Checked on the bundled data by the default model's path: predict without --model.)
  const nlohmann::json vd = nlohmann::json::parse(run_cli({"predict", kTrace, "--json"}, {}, dir.path()).out)["validation"];
  EXPECT_TRUE(vd["available"].get<bool>()) << vd["note"];
}

// ---- GPU catalog plausibility and out-of-range numbers ----

TEST(CatalogLimitsCli, ImplausibleFigureIsRefusedBeforeFitting) {
  TempDir dir("catalog-limits");
  std::string catalog = slurp(kSource + "/data/gpus.csv");
  const std::string h200 = ",HBM3e,4800,";
  ASSERT_TRUE(has(catalog, h200));
  catalog.replace(catalog.find(h200), h200.size(), ",HBM3e,4.8,");  // TB/s in a GB/s column
  std::ofstream(dir / "gpus.csv") << catalog;
  const auto r = run_cli({"fit", "--catalog", (dir / "gpus.csv").string(), "-o", (dir / "m.json").string()}, {},
                         dir.path());
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_TRUE(has(r.err, (dir / "gpus.csv").string() + ":10:")) << r.err;
  EXPECT_TRUE(has(r.err, "field 'memory_bandwidth_gbs': 4.8 GB/s is outside the plausible range 10 to 100000 GB/s"))
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "m.json"));
}

TEST(OutOfRangeCli, NvidiaSmiCellBeyondADoubleSaysOutOfRange) {
  TempDir dir("out-of-range");
  std::string log = slurp(kTrace);
  const std::size_t row = log.find('\n', log.find('\n') + 1) + 1;  // the second data row
  const std::size_t watt = log.find(" W,", row);
  const std::size_t start = log.rfind(", ", watt) + 2;
  log.replace(start, watt - start, "1e309");
  std::ofstream(dir / "t.smi.csv") << log;
  const auto r = run_cli({"info", (dir / "t.smi.csv").string()}, {}, dir.path());
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_TRUE(has(r.err, "t.smi.csv:3:")) << r.err;
  EXPECT_TRUE(has(r.err, "field 'power.draw [W]': out of range of a double: '1e309 W' (beyond ±1.8e308)")) << r.err;
}

}  // namespace
}  // namespace epochcast
