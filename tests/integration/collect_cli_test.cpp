// `epochcast collect` end to end: the built CLI, the real dlopen loader and sampler, and the
// fake NVML (libnvml_fake.so) replaying a shared H200 trace.
#include <gtest/gtest.h>
#include <httplib.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <nlohmann/json.hpp>

#include "collect_process.hpp"
#include "epochcast/core/error.hpp"
#include "eval/synthetic.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

using testing::EnvVars;
using testing::fake_nvml_env;
using testing::Process;
using testing::run_cli;
using testing::TempDir;

const std::string kResnet = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json detect_json(const std::string& path, const TempDir& dir) {
  const auto r = run_cli({"detect", path, "--json"}, {}, dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// How many of `collected`'s values of `metric` are the original's sample current at the replay
// instant the row's timestamp names, (start + time - replay start) x speed, or one of its two
// neighbours (millisecond timestamps; reads follow the stamp within microseconds).
std::size_t replay_matches(const Trace& original, const Trace& collected, Metric metric, double offset_s,
                           double speed) {
  const auto& o = original.find(metric)->values;
  const auto& c = collected.find(metric)->values;
  std::size_t matches = 0;
  for (std::size_t i = 0; i < collected.size(); ++i) {
    const double replay_s = (collected.time_s[i] + offset_s) * speed;
    const auto k = static_cast<std::size_t>(
        std::upper_bound(original.time_s.begin(), original.time_s.end(), replay_s) - original.time_s.begin());
    const std::size_t current = k == 0 ? 0 : k - 1;
    bool hit = false;
    for (std::size_t j = current == 0 ? 0 : current - 1; j <= std::min(current + 1, o.size() - 1) && !hit; ++j)
      hit = std::abs(o[j] - c[i]) < 0.006;
    matches += hit;
  }
  return matches;
}

// Replaying at 5x, one sample of the original (100 ms of trace) is current for 20 ms of wall time;
// sampling every 10 ms reads each one at least twice. At one tick per replayed sample (20 ms, as
// until 2026-12-01) the collector's series was the original with a sample dropped and its
// neighbour doubled wherever a tick fell a millisecond either side of a sample boundary, and
// `detect`'s confidence on such a replay ranged from 0.59 to 0.97 with the phase alone (0.35 and
// 0.13 in two loaded runs, both with every value equal to the original at its timestamp: the
// "flaky" failure of this test).
//
// Checked on every run, each a hard failure:
// - the sampler's own account: every deadline is a row or a recorded miss, one `# gap:` line per
//   gap, no unrecorded hole, no repeated timestamp;
// - sample by sample, each collected value is the original's at the replay instant its timestamp
//   names. The fake writes when its replay started (EPOCHCAST_FAKE_NVML_REPLAY_LOG), so that
//   instant is known, not searched for: rows stamped late or early, shifted, lost or doubled
//   do not match.
// The period needs every epoch in view and enough of each: a run the sampler records as stalled
// (a gap: stopped > 1 s; or ticks read a whole interval or more late, whose replayed samples it
// could not see) may leave `detect` abstaining. Such a run is reported (test property) and run
// again, at most 3 runs. `detect` abstaining on a run with no stall recorded fails at once.
TEST(CollectCli, ReplayedH200TraceGivesTheSamePeriodAndTheSameSamples) {
  constexpr double kSpeed = 5;
  constexpr int kIntervalMs = 10;
  constexpr std::uint64_t kDeadlines = 620;  // 6.2 s at 10 ms
  const Trace original = read_trace(kResnet);
  const auto a = [] {
    TempDir dir("collect-replay-original");
    return detect_json(kResnet, dir);
  }();
  ASSERT_TRUE(a["found"].get<bool>());
  const double original_period = a["period_s"].get<double>();
  for (int run = 1;; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    TempDir dir("collect-replay");
    const std::string out = (dir / "collected.csv").string();
    const std::string replay_log = (dir / "replay-start").string();
    EnvVars env = fake_nvml_env(kResnet, "5");
    env["EPOCHCAST_FAKE_NVML_REPLAY_LOG"] = replay_log;
    const auto r = run_cli({"collect", "-o", out, "--interval-ms", std::to_string(kIntervalMs), "--duration", "6.2"},
                           env, dir.path());
    // A failed run's trace and messages are kept for a post-mortem.
    auto keep = [&](const std::string& why) {
      const auto kept = std::filesystem::temp_directory_path() /
                        ("epochcast-collect-replay-run" + std::to_string(run) + ".csv");
      std::error_code ec;
      std::filesystem::copy_file(out, kept, std::filesystem::copy_options::overwrite_existing, ec);
      std::ofstream(kept.string() + ".err") << r.err;
      std::cerr << why << "; trace kept in " << kept.string() << " (stderr in " << kept.string() << ".err)\n";
    };
    struct KeepOnFailure {
      std::function<void()> f;
      ~KeepOnFailure() {
        if (::testing::Test::HasFailure()) f();
      }
    } keep_on_failure{[&] { keep("failed"); }};
    ASSERT_EQ(r.status, 0) << r.err;

    // The sampler's own account: every deadline is a row or a recorded miss.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) ticks, (\d+) missed \((\d+) gaps?\), (\d+) late)")))
        << r.err;
    const std::uint64_t ticks = std::stoull(m[1]), missed = std::stoull(m[2]), gaps = std::stoull(m[3]),
                        late = std::stoull(m[4]);
    EXPECT_EQ(ticks + missed, kDeadlines) << r.err;
    EXPECT_EQ(gaps == 0, missed == 0) << r.err;
    EXPECT_LE(missed, kDeadlines / 2) << "over half the run skipped: " << r.err;
    EXPECT_NE(r.err.find(fmt::format("; {} rows,", ticks)), std::string::npos) << r.err;
    const std::string text = testing::read_file(out);
    EXPECT_NE(text.find(fmt::format("\n# sampler: {} ticks, {} missed ({} gap", ticks, missed, gaps)),
              std::string::npos);
    std::size_t gap_lines = 0;
    for (std::size_t at = text.find("\n# gap: sampling woke "); at != std::string::npos;
         at = text.find("\n# gap: sampling woke ", at + 1))
      ++gap_lines;
    EXPECT_EQ(gap_lines, gaps);

    const Trace collected = read_trace(out);
    ASSERT_EQ(collected.size(), ticks);
    EXPECT_EQ(collected.diagnostics.repeated_timestamps, 0u);
    EXPECT_EQ(collected.format, "canonical");
    EXPECT_EQ(collected.gpu.name, "NVIDIA H200");
    // A hole in the time axis longer than max_behind (plus a tick) is always a recorded gap.
    std::size_t holes = 0;
    for (std::size_t i = 1; i < collected.size(); ++i) holes += collected.time_s[i] - collected.time_s[i - 1] > 1.1;
    EXPECT_LE(holes, gaps);

    // Sample by sample: each collected value is the original's at the replay instant its
    // timestamp names, (stamp - replay start) x speed. The stamp is when the tick's reads began
    // (written to the millisecond), the reads follow within microseconds: one replayed sample
    // (20 ms of wall time) either side covers both, a stamp 20 ms or more off does not match.
    const std::string replay_start_text = testing::read_file(replay_log);
    ASSERT_FALSE(replay_start_text.empty()) << "the fake did not write " << replay_log;
    const double replay_start_unix_s = std::stod(replay_start_text);
    const double offset_s = collected.start_unix_s - replay_start_unix_s;  // start-up: nvmlInit to the first tick
    EXPECT_GE(offset_s, -0.001) << "first row stamped before the replay (and nvmlInit) began";
    EXPECT_LE(offset_s, 2.0) << "first row stamped over 2 s after nvmlInit";
    for (Metric metric : {Metric::kGpuUtil, Metric::kPower, Metric::kSmClock, Metric::kMemUsed}) {
      const std::size_t matches = replay_matches(original, collected, metric, offset_s, kSpeed);
      EXPECT_GE(matches, collected.size() * 98 / 100)
          << info(metric).tag << ": " << matches << " of " << collected.size() << " (start-up offset " << offset_s
          << " s)";
    }

    if (missed == 0) {
      const auto b = detect_json(out, dir);
      if (b["found"].get<bool>()) {
        const double replayed_period = b["period_s"].get<double>() * kSpeed;
        EXPECT_NEAR(replayed_period, original_period, 0.02 * original_period);
        EXPECT_EQ(a["epochs"].size(), b["epochs"].size());
        return;
      }
      ASSERT_GT(late, 0u) << "detect abstained on a run with no stall recorded: " << b.dump() << "\n" << r.err;
      RecordProperty("abstained_run_" + std::to_string(run), static_cast<int>(late));
      keep(fmt::format("run {}: detect abstained ({}) after {} late ticks; running again", run,
                       b["reason"].get<std::string>(), late));
    } else {
      RecordProperty("missed_ticks_run_" + std::to_string(run), static_cast<int>(missed));
      std::cerr << "run " << run << ": " << missed << " ticks missed in " << gaps
                << " recorded gap(s) (process stalled > 1 s); running again for the period\n";
    }
    ASSERT_LT(run, 3) << "three runs in a row stalled (a gap, or late ticks and detect abstaining); last: " << r.err;
  }
}

// A tick's timestamp is taken when its reads begin. A collector preempted between the stamp and
// a read (seen once in ~43,000 rows under load: power read 46 ms after its stamp) would write
// values from two instants under one timestamp; such a tick is read again with a new stamp.
// The fake sleeps 40 ms in every 7th power read (two replayed samples at 5x): with the re-read
// every row's power is the original's at its timestamp; without it about one row in seven is not.
TEST(CollectCli, ATickStalledBetweenItsStampAndItsReadsIsReadAgain) {
  constexpr double kSpeed = 5;
  const Trace original = read_trace(kResnet);
  TempDir dir("collect-stall");
  const std::string out = (dir / "t.csv").string();
  const std::string replay_log = (dir / "replay-start").string();
  EnvVars env = fake_nvml_env(kResnet, "5");
  env["EPOCHCAST_FAKE_NVML_REPLAY_LOG"] = replay_log;
  env["EPOCHCAST_FAKE_NVML_STALL"] = "7:40";
  const auto r = run_cli({"collect", "-o", out, "--interval-ms", "50", "--duration", "3"}, env, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) ticks, (\d+) missed .*; (\d+) read again)"))) << r.err;
  const std::uint64_t ticks = std::stoull(m[1]), rereads = std::stoull(m[3]);
  // 60 ticks + the probe's read: 8 or more stalled power reads, each one tick read again.
  EXPECT_GE(rereads, 6u) << r.err;
  EXPECT_LE(rereads, ticks / 4) << r.err;
  const Trace collected = read_trace(out);
  ASSERT_EQ(collected.size(), ticks);
  EXPECT_EQ(collected.diagnostics.repeated_timestamps, 0u);
  const double offset_s = collected.start_unix_s - std::stod(testing::read_file(replay_log));
  const std::size_t power = replay_matches(original, collected, Metric::kPower, offset_s, kSpeed);
  EXPECT_GE(power + 1, collected.size()) << "power of " << collected.size() - power
                                         << " rows read well after their timestamp:\n" << r.err;
  EXPECT_GE(replay_matches(original, collected, Metric::kGpuUtil, offset_s, kSpeed) + 1, collected.size());
}

TEST(CollectCli, MissingNvmlIsAClearDeviceError) {
  TempDir dir("collect-nonvml");
  const auto r = run_cli({"collect", "-o", (dir / "t.csv").string(), "--duration", "1"},
                         {{"EPOCHCAST_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}, dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kDevice));
  EXPECT_NE(r.err.find("cannot load NVML (/nonexistent/libnvidia-ml.so.1)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(CollectCli, GpuLostMidRunKeepsTheTraceAndRecordsTheError) {
  TempDir dir("collect-lost");
  const std::string out = (dir / "t.csv").string();
  EnvVars env = fake_nvml_env(kResnet, "10");
  env["EPOCHCAST_FAKE_NVML_LOST_AFTER_S"] = "0.5";
  const auto r = run_cli({"collect", "-o", out, "--interval-ms", "10", "--duration", "10"}, env, dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kDevice)) << r.err;
  EXPECT_NE(r.err.find("lost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trace up to then is kept in " + out), std::string::npos) << r.err;
  // Every deadline before the loss is a row or a recorded miss, and every row is in the file.
  // How many that is depends on when the collector got going after nvmlInit (the fake's clock
  // starts there): ~50 on a quiet machine, 8 in one run at load ~7 (its stderr was not kept;
  // a start-up held up ~0.4 s would give that),
  // so the count is taken from the collector's own account rather than assumed (it was >= 35).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(lost at [0-9.]+ s \(tick (\d+)\))"))) << r.err;
  const std::uint64_t lost_tick = std::stoull(m[1]);
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) ticks, (\d+) missed .*; (\d+) rows,)"))) << r.err;
  const std::uint64_t ticks = std::stoull(m[1]), missed = std::stoull(m[2]), rows = std::stoull(m[3]);
  EXPECT_EQ(ticks + missed, lost_tick) << r.err;
  EXPECT_EQ(rows, ticks) << r.err;
  const Trace t = read_trace(out);
  EXPECT_EQ(t.size(), ticks);
  EXPECT_GE(t.size(), 1u);
  EXPECT_LE(t.size(), 60u) << "sampled past the loss 0.5 s after nvmlInit";
  EXPECT_NE(testing::read_file(out).find("# error: GPU 0 (NVIDIA H200"), std::string::npos);
}

TEST(CollectCli, KillNineLosesAtMostTheLastSecond) {
  TempDir dir("collect-kill");
  const std::string out = (dir / "t.csv").string();
  Process p({EPOCHCAST_CLI, "collect", "-o", out, "--interval-ms", "10"}, fake_nvml_env(kResnet, "10"), dir.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(2600));
  const double killed_at = unix_now();
  p.signal(SIGKILL);
  EXPECT_EQ(p.wait(), 128 + SIGKILL);
  const Trace t = read_trace(out);  // every reader accepts what is left
  ASSERT_GT(t.size(), 100u);
  const double last_sample = t.start_unix_s + t.time_s.back();
  EXPECT_LE(killed_at - last_sample, 1.2) << "lost more than the last second";
  EXPECT_FALSE(t.diagnostics.truncated_last_line);
}

TEST(CollectCli, SigtermClosesCleanly) {
  TempDir dir("collect-term");
  const std::string out = (dir / "t.csv").string();
  Process p({EPOCHCAST_CLI, "collect", "-o", out, "--interval-ms", "10"}, fake_nvml_env(kResnet, "10"), dir.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const double signalled_at = unix_now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(), 0) << p.err();
  EXPECT_NE(p.err().find("stopped by signal 15"), std::string::npos) << p.err();
  const Trace t = read_trace(out);
  EXPECT_LE(signalled_at - (t.start_unix_s + t.time_s.back()), 0.1) << "the last samples were not written";
}

TEST(CollectCli, SigtermEndsALongIntervalSleepAtOnce) {
  // 5 s between ticks: the signal must interrupt the sleep, not wait for the next deadline.
  TempDir dir("collect-term-long");
  const std::string out = (dir / "t.csv").string();
  Process p({EPOCHCAST_CLI, "collect", "-o", out, "--interval-ms", "5000", "--listen", "127.0.0.1:0"},
            fake_nvml_env(kResnet, "10"), dir.path());
  ASSERT_GT(p.serving_port(), 0) << p.err();  // up, the first tick taken, the threads started
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto signalled = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(), 0) << p.err();
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_LT(took_s, 2.0) << "waited for the next 5 s deadline";
  EXPECT_GE(read_trace(out).size(), 1u);
}

TEST(CollectCli, DiskFullIsAClearIoError) {
  TempDir dir("collect-full");
  const auto r = run_cli({"collect", "-o", "/dev/full", "--duration", "1"}, fake_nvml_env(kResnet), dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kIo));
  EXPECT_NE(r.err.find("/dev/full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
}

// --job KEY: the collected run is predicted and recorded under the key when sampling ends.
TEST(CollectCli, JobKeyRecordsTheCollectedRunInTheStore) {
  TempDir dir("collect-job");
  const std::string out = (dir / "t.csv").string();
  const std::string db = (dir / "jobs.db").string();
  const auto r = run_cli({"collect", "-o", out, "--duration", "1", "-q", "--job", "nightly", "--store", db},
                         fake_nvml_env(kResnet), dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(job nightly)"), std::string::npos) << r.out;
  const auto list = run_cli({"jobs", "list", "--store", db, "--json"}, {}, dir.path());
  ASSERT_EQ(list.status, 0) << list.err;
  const auto j = nlohmann::json::parse(list.out);
  ASSERT_EQ(j["runs"].size(), 1u) << list.out;
  EXPECT_EQ(j["runs"][0]["job_key"], "nightly");
  EXPECT_EQ(j["runs"][0]["trace"], out);
  // --job without a trace file to predict from is refused before sampling.
  const auto bad = run_cli({"collect", "--listen", "127.0.0.1:0", "--job", "x"}, fake_nvml_env(kResnet), dir.path());
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("--job needs -o"), std::string::npos) << bad.err;
}

TEST(CollectCli, CommandModeReturnsTheCommandStatusAndDetects) {
  TempDir dir("collect-cmd");
  const std::string out = (dir / "t.csv").string();
  const auto started = std::chrono::steady_clock::now();
  const auto r = run_cli({"collect", "-o", out, "--interval-ms", "20", "--", "sh", "-c", "sleep 1.5; exit 3"},
                         fake_nvml_env(kResnet, "10"), dir.path());
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_GE(took_s, 1.4);
  EXPECT_NE(r.out.find("== detect " + out), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== predict " + out), std::string::npos) << r.out;
  const Trace t = read_trace(out);
  EXPECT_GE(t.size(), 60u);
  EXPECT_LE(t.size(), 80u);
}

TEST(CollectCli, CommandThatCannotStartIsAnError) {
  TempDir dir("collect-nocmd");
  const auto r = run_cli({"collect", "-o", (dir / "t.csv").string(), "--", "/nonexistent/train.py"},
                         fake_nvml_env(kResnet), dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kIo));
  EXPECT_NE(r.err.find("cannot start '/nonexistent/train.py'"), std::string::npos) << r.err;
}

TEST(CollectCli, SeveralGpusInterleaveAndReadBackPerGpu) {
  TempDir dir("collect-multi");
  const std::string out = (dir / "t.csv").string();
  EnvVars env = fake_nvml_env(kResnet, "10");
  env["EPOCHCAST_FAKE_NVML_GPUS"] = "2";
  const auto r = run_cli({"collect", "-o", out, "--interval-ms", "50", "--duration", "1", "--gpu", "all"}, env,
                         dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  ReadOptions second;
  second.gpu = 1;
  const Trace t = read_trace(out, second);
  EXPECT_EQ(t.size(), 20u);
  EXPECT_EQ(t.gpu.index, 1);
  EXPECT_EQ(t.gpus_in_source.size(), 2u);
  // A new file: collect no longer overwrites the trace above without --force.
  const auto bad = run_cli({"collect", "-o", (dir / "t2.csv").string(), "--gpu", "4", "--duration", "1"}, env,
                           dir.path());
  EXPECT_EQ(bad.status, exit_status(ErrorCode::kNotFound)) << bad.err;
}

TEST(CollectCli, ListenServesDcgmExporterMetrics) {
  TempDir dir("collect-listen");
  // Port 0: the collector binds a free port itself and says which (no bind-close-reuse race).
  Process p({EPOCHCAST_CLI, "collect", "--listen", "127.0.0.1:0", "--interval-ms", "50", "--duration", "3"},
            fake_nvml_env(kResnet, "0.000001"), dir.path());
  const int port = p.serving_port();
  ASSERT_GT(port, 0) << p.err();
  httplib::Client client("127.0.0.1", port);
  httplib::Result res{nullptr, httplib::Error::Unknown};
  // Until the first tick has landed: the server answers (with no series) from the moment it binds.
  for (int i = 0; i < 100 && !((res = client.Get("/metrics")) && res->body.find("} 1980\n") != std::string::npos); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(res) << p.err();
  EXPECT_NE(res->body.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-fa4e"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("modelName=\"NVIDIA H200\""), std::string::npos);
  EXPECT_NE(res->body.find("DCGM_FI_DEV_SM_CLOCK{"), std::string::npos);
  EXPECT_NE(res->body.find("} 1980\n"), std::string::npos);
  EXPECT_EQ(p.wait(), 0) << p.err();
}

TEST(CollectCli, QuietStillSaysTheSystemChosenPort) {
  // -q silences the banner, but a port picked by the system is useless unless it is printed.
  TempDir dir("collect-quiet-port");
  Process p({EPOCHCAST_CLI, "collect", "-q", "--listen", "127.0.0.1:0", "--interval-ms", "50", "--duration", "1"},
            fake_nvml_env(kResnet, "0.000001"), dir.path());
  EXPECT_GT(p.serving_port(), 0) << p.err();
  EXPECT_EQ(p.wait(), 0) << p.err();
}

TEST(CollectCli, GpuListedTwiceIsRefused) {
  TempDir dir("collect-gpu-twice");
  EnvVars env = fake_nvml_env(kResnet, "10");
  env["EPOCHCAST_FAKE_NVML_GPUS"] = "2";
  const std::string out = (dir / "t.csv").string();
  const auto r = run_cli({"collect", "-o", out, "--gpu", "0,1,0", "--duration", "0.5"}, env, dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kInvalidArgument)) << r.err;
  EXPECT_NE(r.err.find("--gpu: GPU list '0,1,0': GPU 0 is listed twice"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "refused before the trace file was created";
}

std::ptrdiff_t count_of(const std::string& text, const std::string& what) {
  std::ptrdiff_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The live case: a period on the status line while the job still has epochs to run. The shared
// vgg16 trace has only 4 epochs, so its period can only appear in the last one (a margin of
// 0.13 s on one status line: failed 1 in 16 under load, docs/collect.md); a synthetic job of
// 10 epochs with a known period leaves the rest of the run as margin.
TEST(CollectCli, StatusShowsThePeriodBeforeTrainingEnds) {
  constexpr double kSpeed = 5;
  SyntheticSpec spec;
  spec.period_s = 4;
  spec.epochs = 10;
  spec.idle_head_s = 4;
  spec.warmup_s = 2;
  const SyntheticTrace job = make_synthetic_trace(spec, 11);
  TempDir dir("collect-status");
  const std::string trace = (dir / "job.csv").string();
  {
    Trace t = job.trace;
    t.gpu.name = "NVIDIA H200";
    std::ofstream out(trace);
    write_canonical_csv(t, out);
  }
  // Wall seconds after the replay starts; the first status line comes ~1 s after that.
  const double training_end_wall_s = job.truth.epochs.back().end_s / kSpeed;
  const double epoch_wall_s = job.truth.period_s / kSpeed;

  const auto r = run_cli({"collect", "-o", (dir / "t.csv").string(), "--interval-ms", "10", "--duration", "10.5",
                          "--status"},
                         fake_nvml_env(trace, "5"), dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "not a terminal: plain lines";
  // "8 s  320 samples  GPU 100 %  643 W  epochs 3, period 1.41 s (confidence 0.93)"
  std::istringstream lines(r.err);
  int status_lines = 0;
  std::optional<double> first_period_at, first_period;
  for (std::string line; std::getline(lines, line);) {
    double elapsed = 0;
    if (std::sscanf(line.c_str(), "%lf s  ", &elapsed) != 1 || line.find(" samples") == std::string::npos) continue;
    ++status_lines;
    const auto at = line.find(", period ");
    if (at == std::string::npos || first_period) continue;
    first_period_at = elapsed;
    first_period = std::stod(line.substr(at + 9));
  }
  EXPECT_GE(status_lines, 8) << r.err;
  ASSERT_TRUE(first_period.has_value()) << "no period shown:\n" << r.err;
  // Shown with at least three epochs still to run (the line's second is rounded: +0.5 s).
  EXPECT_LT(*first_period_at + 0.5, training_end_wall_s - 3 * epoch_wall_s) << r.err;
  EXPECT_NEAR(*first_period * kSpeed, job.truth.period_s, 0.04 * job.truth.period_s) << r.err;
}

TEST(CollectCli, TerminalGetsTheStatusLineRewrittenInPlace) {
  // On a pseudo-terminal (util-linux `script`) the status appears without --status, as one
  // line rewritten with "\r\x1b[K", ended by a newline before the summary.
  if (::access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "/usr/bin/script (util-linux) is not installed";
  TempDir dir("collect-pty");
  const std::string cmd = std::string(EPOCHCAST_CLI) + " collect -o " + (dir / "t.csv").string() +
                          " --interval-ms 20 --duration 2.5";
  Process p({"/usr/bin/script", "-qefc", cmd, "/dev/null"}, fake_nvml_env(kResnet, "10"), dir.path());
  ASSERT_EQ(p.wait(60), 0) << p.out() << p.err();
  const std::string text = p.out();
  EXPECT_GE(count_of(text, "\r\x1b[K"), 2) << text;
  EXPECT_NE(text.find(" samples  GPU "), std::string::npos) << text;
  EXPECT_NE(text.find("125 ticks, 0 missed (0 gaps)"), std::string::npos) << text;
}

TEST(CollectCli, StoppedProcessLeavesOneRecordedGapNotABurst) {
  // SIGSTOP for 1.5 s (a debugger, a suspended laptop): on SIGCONT the collector must not
  // fire 150 catch-up reads; the skipped deadlines are one gap, said in the trace.
  TempDir dir("collect-stop");
  const std::string out = (dir / "t.csv").string();
  Process p({EPOCHCAST_CLI, "collect", "-o", out, "--interval-ms", "10"}, fake_nvml_env(kResnet, "10"), dir.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  p.signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  p.signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  p.signal(SIGTERM);
  ASSERT_EQ(p.wait(), 0) << p.err();
  const std::string text = testing::read_file(out);
  EXPECT_NE(text.find("\n# gap: sampling woke "), std::string::npos) << p.err();
  EXPECT_NE(p.err().find("gap: sampling woke "), std::string::npos) << p.err();
  const Trace t = read_trace(out);
  std::size_t long_gaps = 0;
  double gap_s = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const double d = t.time_s[i] - t.time_s[i - 1];
    if (d > 1.0) ++long_gaps, gap_s = d;
  }
  EXPECT_EQ(long_gaps, 1u);
  EXPECT_GE(gap_s, 1.3) << "the stop is one gap in the timestamps";
  // Deadlines inside the stop are skipped, not read late: the samples fit the 10 ms grid of
  // the time outside the gap. A catch-up burst would add ~150. (Counting close pairs instead
  // failed under load: reads up to max_behind late are taken 2.5 ms apart by design.)
  const double sampled_s = t.time_s.back() - t.time_s.front() - gap_s;
  EXPECT_LE(static_cast<double>(t.size()), sampled_s / 0.010 + 10) << "a burst of catch-up reads after the stop";
  EXPECT_GE(static_cast<double>(t.size()), sampled_s / 0.010 * 0.5) << "sampling did not resume on the grid";
  EXPECT_EQ(t.diagnostics.repeated_timestamps, 0u);
}

}  // namespace
}  // namespace epochcast
