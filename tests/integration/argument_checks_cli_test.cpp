// Hostile arguments and outputs through the built CLI: each once passed silently (exit 0, data
// lost or an option quietly ignored) or ended as an internal error (exit 70).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using epochcast::testing::CommandResult;
using epochcast::testing::run_cli;

const std::string kData = EPOCHCAST_TEST_DATA;
const std::string kResnet = kData + "/h200/resnet50_224_bs256_bf16.smi.csv";

// stderr is captured; stdout goes where `redirect` says.
CommandResult run_err(const std::string& args, const std::string& redirect = ">/dev/null") {
  return run_cli(args + " 2>&1 " + redirect);
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("epochcast-hostile-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(ArgumentChecksCli, OutputLostToAFullDiskIsAnError) {
  // Was exit 0 with nothing written: scripts read `--json > file`.
  for (const std::string cmd : {"info " + kResnet, "detect " + kResnet + " --json"}) {
    const CommandResult r = run_err(cmd, ">/dev/full");
    EXPECT_EQ(r.status, 3) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("epochcast: error: cannot write to standard output: No space left on device"),
              std::string::npos)
        << r.out;
  }
  EXPECT_EQ(run_err("info " + kResnet).status, 0);
}

TEST(ArgumentChecksCli, FitRefusesAnOutputThatIsNotARegularFileBeforeFitting) {
  // save_model renames a new file into place: `-o /dev/full` as root replaced the device node
  // with the model, after a whole fit. A FIFO stands in for the device here.
  TempDir dir;
  const fs::path fifo = dir.path / "model.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CommandResult r = run_err("fit -o " + fifo.string());
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("it exists and is not a regular file"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";
  EXPECT_EQ(r.out.find("fit "), std::string::npos) << "fitted first: " << r.out;

  // A folder that cannot take the file fails before fitting too (was: after the fit).
  r = run_err("fit -o " + (dir.path / "no-such-folder" / "m.json").string());
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("no-such-folder': No such file or directory"), std::string::npos) << r.out;
}

TEST(ArgumentChecksCli, FoldersGivenAsInputFilesAreClearIoErrors) {
  TempDir dir;
  const std::string d = dir.path.string();
  // --data and --test: std::ios_base::failure escaped as exit 70 without the file's name.
  for (const std::string cmd : {"fit -o " + d + "/m.json --data " + d, "eval --test " + d}) {
    const CommandResult r = run_err(cmd);
    EXPECT_EQ(r.status, 3) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("cannot read dataset '" + d + "': it is a folder"), std::string::npos) << r.out;
  }
  // Whole-file reads said only "read error in model file".
  const CommandResult m = run_err("predict " + kResnet + " --model " + d);
  EXPECT_EQ(m.status, 3) << m.out;
  EXPECT_NE(m.out.find("cannot read model file '" + d + "': it is a folder"), std::string::npos) << m.out;
  const CommandResult t = run_err("info " + d);
  EXPECT_EQ(t.status, 3) << t.out;
  EXPECT_NE(t.out.find("Is a directory"), std::string::npos) << t.out;
}

TEST(ArgumentChecksCli, NegativeOrNonsenseNumbersAreRefusedNotIgnored) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      // CLI11 wrapped -1 to 18446744073709551615 and fitted with it.
      {"fit -o /tmp/never.json --seed -1", "--seed: must not be negative, got -1"},
      {"eval --seed -1", "--seed: must not be negative, got -1"},
      // An unknown precision word lists the choices (issue 18, Bad input).
      {"predict " + kResnet + " --precision fp64", "--precision 'fp64' is not one of auto, fp32, tf32, fp16, bf16"},
      // -5 was read as "no --gpu": the busiest GPU was used without a word.
      {"info " + kResnet + " --gpu -5", "--gpu: must not be negative, got -5"},
      // These read as "no period found" (exit 0, found false) or were ignored.
      {"detect " + kResnet + " --min-period 10 --max-period 1", "--min-period 10 is longer than the longest period asked for, 1"},
      {"detect " + kResnet + " --min-period -1", "--min-period must be"},
      {"detect " + kResnet + " --min-period nan", "--min-period must be"},
      {"detect " + kResnet + " --max-period 1e308", "--max-period must be"},
      {"detect " + kResnet + " --min-confidence nan", "--min-confidence"},
      // A time axis in steps of 1e-300 s.
      {"info " + kData + "/dcgmi/two_gpus_100ms.dmon.log --interval 1e-300", "--interval must be"},
      // An empty list was dropped (the error then said "pass --fields"); a repeat or another
      // --format made a confusing row error or was ignored.
      {"info " + kResnet + " --fields ,,,", "--fields ',,,' names no field"},
      {"info " + kResnet + " --fields timestamp,timestamp,utilization.gpu", "--fields lists 'timestamp' twice"},
      {"info " + kResnet + " --fields timestamp,utilization.gpu --format dcgmi", "--fields describes an nvidia-smi"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_err(c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
  }
  EXPECT_EQ(run_err("detect " + kResnet + " --min-period 1 --max-period 10").status, 0);
  EXPECT_EQ(run_err("info " + kData + "/dcgmi/two_gpus_100ms.dmon.log --interval 0.1 --gpu 1").status, 0);
}

TEST(ArgumentChecksCli, FollowingAFolderOrAFileThatNeverGrowsIsAnError) {
  // Both ended with exit 0 and no output at all once the idle timeout passed.
  TempDir dir;
  const CommandResult folder = run_err("detect --follow --idle-timeout 0.3 " + dir.path.string());
  EXPECT_EQ(folder.status, 3) << folder.out;
  EXPECT_NE(folder.out.find("it is a folder"), std::string::npos) << folder.out;
  const std::string empty = (dir.path / "empty.csv").string();
  { std::ofstream(empty) << "timestamp, utilization.gpu [%]\n"; }
  const CommandResult idle = run_err("detect --follow --idle-timeout 0.3 --poll-ms 20 " + empty);
  EXPECT_EQ(idle.status, 4) << idle.out;
  EXPECT_NE(idle.out.find("empty.csv: no data rows arrived while following"), std::string::npos) << idle.out;
}

TEST(ArgumentChecksCli, PlotOnAFullDiskIsAnError) {
  // Said "error writing full.svg" without the reason; the tail, written when the stream
  // closed, went unchecked.
  TempDir dir;
  const fs::path svg = dir.path / "full.svg";
  fs::create_symlink("/dev/full", svg);
  const CommandResult r = run_err("detect " + kResnet + " --plot " + svg.string());
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << r.out;
}

}  // namespace
