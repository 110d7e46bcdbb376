// watch at fleet scale against a real Prometheus (docs/watch.md, "Scale"): generates a fleet of
// dcgm-exporter series (--gpus at a 15 s scrape plus --fast-gpus at 1 s, --hours long) with jobs
// of known period, backfills it with promtool, starts Prometheus on it, and times the first
// full pass and --passes incremental passes (the clock advanced 60 s each), with the peak RSS
// of this process, the queries sent, and the share of jobs found within 5 % / confidently wrong.
// The fleet's rules are fixed before any run (below); the seed fixes the draw.
//
//   watch_scale_bench [--gpus 1000] [--fast-gpus 50] [--hours 24] [--passes 5] [--dir DIR]
//                     [--shards 2] [--json FILE]
//   watch_scale_bench --serve --dir DIR [--gpus 20 --hours 3]   # Prometheus on a fleet ending now
//   (use a --dir of its own: a timed run reuses a TSDB of the same spec)
//
// Not a Google Benchmark: one fleet, one run. DIR keeps the TSDB for a rerun of the same spec.
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/service.hpp"
#include "eval/fleet.hpp"

using namespace epochcast;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 0.05;      // the "found within 5 %"
constexpr std::size_t kGpusPerFile = 50;  // one promtool run per file keeps its memory bounded
constexpr double kPassStepS = 60;         // the clock between incremental passes (watch's default --every)

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

long rss_kib(const char* field, pid_t pid = 0) {
  std::ifstream in(pid ? fmt::format("/proc/{}/status", pid) : std::string("/proc/self/status"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  return -1;
}

// The fleet's rules. Per GPU: 10 % idle all day; else jobs back to back of 1-6 h, with an idle
// pause of 1-5 min (a new pod) or, one time in three, 15-60 min; periods log-uniform in
// 120-1800 s (15 s scrape: at least 8 samples an epoch) or 20-600 s (1 s scrape); one job in
// ten without a boundary signature.
std::vector<FleetGpuSpec> make_fleet(std::size_t gpus, std::size_t fast, double seconds, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const char* models[] = {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA H200"};
  std::vector<FleetGpuSpec> out;
  for (std::size_t i = 0; i < gpus + fast; ++i) {
    FleetGpuSpec g;
    g.uuid = fmt::format("GPU-{:08x}-{:04x}-bench", static_cast<std::uint32_t>(rng()), i);
    g.hostname = fmt::format("node{:04d}", i / 8);
    g.gpu = std::to_string(i % 8);
    g.model_name = models[(i / 8) % 4];
    g.scrape_s = i < gpus ? 15 : 1;
    if (u(rng) < 0.1) {
      out.push_back(std::move(g));
      continue;
    }
    double t = 60 + 1800 * u(rng);
    int k = 0;
    while (t < seconds - 3600) {
      const double lo = g.scrape_s >= 15 ? 120 : 20, hi = g.scrape_s >= 15 ? 1800 : 600;
      const double period = lo * std::pow(hi / lo, u(rng));
      const double length = std::min(3600 * (1 + 5 * u(rng)), seconds - t);
      FleetJobSpec j;
      j.labels = {{"pod", fmt::format("train-{}-{}", i, k)}, {"namespace", fmt::format("team{}", i % 5)}, {"container", "trainer"}};
      j.start_s = t;
      j.spec.period_s = period;
      j.spec.epochs = std::max(1, static_cast<int>((length - 60) / period));
      j.spec.event_duty = 0.15;
      j.spec.event_depth = u(rng) < 0.1 ? 0 : 0.5;
      j.spec.idle_head_s = 30;
      j.spec.warmup_s = 30;
      j.spec.idle_tail_s = 0;
      j.spec.iteration_s = 1.1;
      j.seed = rng();
      const double end = t + 60 + period * j.spec.epochs * 1.05;
      g.jobs.push_back(j);
      t = end + (u(rng) < 1.0 / 3 ? 900 + 2700 * u(rng) : 60 + 240 * u(rng));
      ++k;
    }
    out.push_back(std::move(g));
  }
  return out;
}

int run(const std::vector<std::string>& args) {
  pid_t pid = 0;
  std::vector<char*> argv;
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Prometheus {
  pid_t pid = 0;
  int port = 0;
  ~Prometheus() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

void start_prometheus(Prometheus& p, const fs::path& dir) {
  {
    std::ofstream yml(dir / "prometheus.yml");
    yml << "global:\n  scrape_interval: 1h\nscrape_configs: []\n";
  }
  const std::string log = (dir / "prometheus.log").string();
  const std::string cmd = fmt::format(
      "exec /usr/bin/prometheus --config.file={} --storage.tsdb.path={} --storage.tsdb.retention.time=10y "
      "--web.listen-address=127.0.0.1:0 --log.level=info > {} 2>&1",
      (dir / "prometheus.yml").string(), (dir / "tsdb").string(), log);
  std::vector<std::string> sh = {"/bin/sh", "-c", cmd};
  std::vector<char*> argv;
  for (auto& a : sh) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn(&p.pid, "/bin/sh", nullptr, nullptr, argv.data(), environ);
  const std::regex port_re("msg=\"Listening on\" address=127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 1200 && p.port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    std::smatch m;
    const std::string text = s.str();
    if (std::regex_search(text, m, port_re) && text.find("Server is ready") != std::string::npos) p.port = std::stoi(m[1]);
  }
  if (p.port == 0) throw std::runtime_error("prometheus did not become ready; see " + log);
  // The backfilled blocks overlap (one promtool run per 50 GPUs); Prometheus merges them in its
  // compaction cycle (once a minute from its start). The passes are timed once no two blocks
  // share a time range.
  auto overlapping = [&] {
    std::vector<std::pair<long long, long long>> ranges;
    for (const auto& e : fs::directory_iterator(dir / "tsdb")) {
      std::ifstream meta(e.path() / "meta.json");
      if (!meta) continue;
      try {
        const auto j = nlohmann::json::parse(meta);
        ranges.emplace_back(j.at("minTime").get<long long>(), j.at("maxTime").get<long long>());
      } catch (const std::exception&) {
        return true;  // being written
      }
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second) return true;
    return false;
  };
  std::size_t last = 0;
  for (int i = 0; i < 3600 && overlapping(); ++i) std::this_thread::sleep_for(std::chrono::seconds(1));
  for (const auto& e : fs::directory_iterator(dir / "tsdb")) last += fs::exists(e.path() / "meta.json") ? 1 : 0;
  std::cerr << fmt::format("prometheus ready on port {} with {} blocks\n", p.port, last);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t gpus = 1000, fast = 50, passes = 5;
  double hours = 24;
  int shards = 2;
  bool serve = false;
  fs::path dir = fs::temp_directory_path() / "epochcast-watch-scale";
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "--gpus") gpus = std::stoul(next());
    else if (a == "--fast-gpus") fast = std::stoul(next());
    else if (a == "--hours") hours = std::stod(next());
    else if (a == "--passes") passes = std::stoul(next());
    else if (a == "--shards") shards = std::stoi(next());
    else if (a == "--dir") dir = next();
    else if (a == "--json") json_path = next();
    else if (a == "--serve") serve = true;
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  const double seconds = hours * 3600;
  // The data reach past the first pass's clock by the incremental passes' minutes.
  const double span = seconds + static_cast<double>(passes + 2) * kPassStepS;
  const std::string spec = fmt::format("gpus={} fast={} hours={} passes={} v1", gpus, fast, hours, passes);
  fs::create_directories(dir);
  std::vector<FleetGpuSpec> fleet = make_fleet(gpus, fast, span, 20261202);
  std::vector<FleetJobTruth> truth;
  double start = 0;
  // A rerun of the same spec reuses the TSDB (its start is kept in spec.txt).
  {
    std::ifstream in(dir / "spec.txt");
    std::string line;
    if (std::getline(in, line) && line == spec && in >> start && fs::exists(dir / "tsdb")) {
      std::cerr << "reusing " << (dir / "tsdb") << "\n";
    } else {
      start = 0;
    }
  }
  double generate_s = 0, backfill_s = 0;
  if (start == 0) {
    fs::remove_all(dir / "tsdb");
    // Timed runs: wholly in the past, nothing for the head block. --serve: ending now, so a
    // watch started on it sees running jobs (Prometheus scrapes nothing here, its head is empty).
    start = std::floor(now_s() - span - (serve ? 0 : 3600));
    for (std::size_t f = 0; f * kGpusPerFile < fleet.size(); ++f) {
      const std::vector<FleetGpuSpec> part(fleet.begin() + static_cast<std::ptrdiff_t>(f * kGpusPerFile),
                                           fleet.begin() + static_cast<std::ptrdiff_t>(std::min(fleet.size(), (f + 1) * kGpusPerFile)));
      const auto t0 = std::chrono::steady_clock::now();
      const fs::path om = dir / "part.om";
      {
        std::ofstream out(om);
        out.rdbuf()->pubsetbuf(nullptr, 0);
        write_fleet_openmetrics(part, start, span, out);
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (run({"/bin/sh", "-c",
               fmt::format("/usr/bin/promtool tsdb create-blocks-from openmetrics {} {} >> {} 2>&1", om.string(),
                           (dir / "tsdb").string(), (dir / "promtool.log").string())}) != 0) {
        std::cerr << "promtool failed on " << om << "\n";
        return 1;
      }
      const auto t2 = std::chrono::steady_clock::now();
      generate_s += std::chrono::duration<double>(t1 - t0).count();
      backfill_s += std::chrono::duration<double>(t2 - t1).count();
      fs::remove(om);
      std::cerr << fmt::format("\rbackfilled {}/{} GPUs ({:.0f} s generating, {:.0f} s promtool)",
                               std::min(fleet.size(), (f + 1) * kGpusPerFile),
                               fleet.size(), generate_s, backfill_s)
                << std::flush;
    }
    std::cerr << "\n";
    std::ofstream(dir / "spec.txt") << spec << "\n" << fmt::format("{:.0f}", start) << "\n";
  }
  {
    std::ostringstream sink;  // the truth alone (a 1 s span writes no sample): the generator is deterministic
    for (std::size_t f = 0; f * kGpusPerFile < fleet.size(); ++f) {
      const std::vector<FleetGpuSpec> part(fleet.begin() + static_cast<std::ptrdiff_t>(f * kGpusPerFile),
                                           fleet.begin() + static_cast<std::ptrdiff_t>(std::min(fleet.size(), (f + 1) * kGpusPerFile)));
      for (auto& t : write_fleet_openmetrics(part, start, 1, sink)) truth.push_back(t);
      sink.str("");
    }
  }

  Prometheus prom;
  start_prometheus(prom, dir);
  const std::string url = fmt::format("http://127.0.0.1:{}", prom.port);
  if (serve) {
    std::cout << fmt::format("serving the fleet at {} (data {} .. {}); Ctrl-C stops\n", url, start, start + span)
              << std::flush;
    pause();
    return 0;
  }

  const Service service;
  service.load();  // the default model's fit is not the watcher's time
  double clock = start + seconds;
  fleet::WatchRequest request;
  request.url = url;
  request.lookback_s = seconds;
  request.settle_s = 0;
  nlohmann::json result = {{"spec", spec}, {"generate_s", generate_s}, {"backfill_s", backfill_s},
                           {"utc", fmt::format("{:.0f}", now_s())}};
  auto loadavg = [] {
    std::ifstream in("/proc/loadavg");
    std::string s;
    std::getline(in, s);
    return s;
  };
  fleet::Watcher watcher(service, request, [&clock] { return clock; },
                         [](const std::string& line) { std::cerr << "watch: " << line << "\n"; });
  fmt::print("{:<12} {:>9} {:>8} {:>10} {:>9} {:>10} {:>12} {:>13}\n", "pass", "seconds", "queries", "samples",
             "analysed", "rss_mib", "prom_rss_mib", "prom_peak_mib");
  nlohmann::json pass_rows = nlohmann::json::array();
  for (std::size_t p = 0; p <= passes; ++p) {
    const fleet::PassStats s = watcher.pass([&](std::size_t done, std::size_t total) {
      if (p == 0) std::cerr << fmt::format("\rfirst pass: {}/{} GPUs read", done, total) << std::flush;
    });
    if (p == 0) std::cerr << "\n";
    const long rss = rss_kib("VmHWM:"), prss = rss_kib("VmRSS:", prom.pid), phwm = rss_kib("VmHWM:", prom.pid);
    fmt::print("{:<12} {:>9.2f} {:>8} {:>10} {:>9} {:>10.0f} {:>12.0f} {:>13.0f}\n",
               p == 0 ? "first" : fmt::format("incr {}", p), s.seconds, s.queries, s.samples, s.analysed, rss / 1024.0,
               prss / 1024.0, phwm / 1024.0);
    std::fflush(stdout);
    pass_rows.push_back({{"pass", p}, {"seconds", s.seconds}, {"queries", s.queries}, {"samples", s.samples},
                         {"analysed", s.analysed}, {"errors", s.errors}, {"peak_rss_mib", rss / 1024.0},
                         {"prometheus_rss_mib", prss / 1024.0},
                         {"prometheus_peak_rss_mib", phwm / 1024.0}});
    clock += kPassStepS;
  }
  result["passes"] = pass_rows;
  result["loadavg"] = loadavg();

  // Accuracy against the truth: a watched job matches a true one on the same GPU starting
  // within 2 min of it. Tallied over the fleet and per scrape interval (the 15 s fleet, the
  // 1 s slice), with each confidently wrong job listed.
  const fleet::FleetSnapshot snap = watcher.snapshot();
  std::map<std::string, const fleet::GpuView*> by_uuid;
  for (const auto& g : snap.gpus) by_uuid[g.uuid] = &g;
  std::map<std::string, double> scrape_of;
  for (const auto& g : fleet) scrape_of[g.uuid] = g.scrape_s;
  struct Tally {
    std::size_t sig = 0, hit = 0, wrong = 0, abstained = 0, unmatched = 0, nosig = 0, nosig_found = 0;
    std::map<std::string, int> wrong_kind, wrong_by_samples;
    std::vector<double> wrong_confidence;
  };
  std::map<std::string, Tally> tallies;  // "all", "scrape 15s", "scrape 1s"
  nlohmann::json wrong_rows = nlohmann::json::array();
  for (const FleetJobTruth& t : truth) {
    if (t.start_unix_s > clock - kPassStepS) continue;  // after the last pass
    const double scrape = scrape_of[t.uuid];
    Tally& all = tallies["all"];
    Tally& mine = tallies[fmt::format("scrape {}s", scrape)];
    const fleet::JobView* job = nullptr;
    if (const auto it = by_uuid.find(t.uuid); it != by_uuid.end())
      for (const auto& j : it->second->jobs)
        if (std::abs(j.start_unix_s - t.start_unix_s) < 120) job = &j;
    for (Tally* y : {&all, &mine}) {
      if (!t.has_signature) {
        ++y->nosig;
        if (job && job->found) ++y->nosig_found;
        continue;
      }
      ++y->sig;
      if (!job) ++y->unmatched;
      else if (!job->found) ++y->abstained;
      else if (std::abs(job->epoch_s - t.period_s) <= kTolerance * t.period_s) ++y->hit;
      else {
        ++y->wrong;
        // What the wrong ones are: a multiple or a fraction of the period, or other; and how
        // many samples an epoch the truth had.
        const double r = job->epoch_s / t.period_s;
        const char* kind = "other";
        for (const auto& [k, name] : {std::pair{2.0, "x2"}, {3.0, "x3"}, {0.5, "x1/2"}, {1.0 / 3, "x1/3"}, {1.5, "x3/2"}, {2.0 / 3, "x2/3"}})
          if (std::abs(r - k) <= kTolerance * k) kind = name;
        ++y->wrong_kind[kind];
        const double samples_per_epoch = t.period_s / (job->samples > 0 ? (t.end_unix_s - t.start_unix_s) / static_cast<double>(job->samples) : 1);
        ++y->wrong_by_samples[samples_per_epoch < 8 ? "< 8 samples/epoch" : samples_per_epoch < 16 ? "8-16" : samples_per_epoch < 32 ? "16-32" : ">= 32"];
        y->wrong_confidence.push_back(job->confidence);
        if (y == &all)
          wrong_rows.push_back({{"uuid", t.uuid}, {"scrape_s", scrape}, {"true_period_s", t.period_s},
                                {"found_epoch_s", job->epoch_s}, {"ratio", r}, {"kind", kind},
                                {"confidence", job->confidence}, {"samples_per_epoch", samples_per_epoch},
                                {"job_samples", job->samples}});
      }
    }
  }
  nlohmann::json accuracy = nlohmann::json::object();
  for (auto& [name, y] : tallies) {
    fmt::print("\n[{}]\n", name);
    if (y.wrong > 0) {
      std::sort(y.wrong_confidence.begin(), y.wrong_confidence.end());
      fmt::print("confidently wrong, detected/true: ");
      for (const auto& [k, n] : y.wrong_kind) fmt::print("{} {}  ", k, n);
      fmt::print("\nconfidently wrong by samples per epoch: ");
      for (const auto& [k, n] : y.wrong_by_samples) fmt::print("{}: {}  ", k, n);
      fmt::print("\nconfidently wrong, median confidence {:.2f}\n", y.wrong_confidence[y.wrong_confidence.size() / 2]);
    }
    fmt::print("jobs with a signature: {}; found within 5 %: {} ({:.1f} %); confidently wrong: {} ({:.1f} %); "
               "abstained: {}; not matched: {}\njobs without a signature: {}; given a period: {}\n",
               y.sig, y.hit, 100.0 * y.hit / std::max<std::size_t>(1, y.sig), y.wrong,
               100.0 * y.wrong / std::max<std::size_t>(1, y.sig), y.abstained, y.unmatched, y.nosig, y.nosig_found);
    nlohmann::json a = {{"jobs_with_signature", y.sig}, {"found_within_5pct", y.hit}, {"confidently_wrong", y.wrong},
                        {"abstained", y.abstained}, {"not_matched", y.unmatched}, {"jobs_without_signature", y.nosig},
                        {"without_signature_given_a_period", y.nosig_found}};
    if (y.wrong > 0) {
      a["confidently_wrong_kinds"] = y.wrong_kind;
      a["confidently_wrong_by_samples_per_epoch"] = y.wrong_by_samples;
    }
    accuracy[name] = a;
  }
  result["accuracy"] = accuracy;
  result["confidently_wrong_jobs"] = wrong_rows;

  // Shards: i/n together are the fleet, each GPU once.
  std::multiset<std::string> seen;
  for (int i = 1; i <= shards; ++i) {
    fleet::WatchRequest r = request;
    r.shard = {i, shards};
    r.lookback_s = 600;  // discovery is what is compared
    fleet::Watcher w(service, r, [&clock] { return clock; });
    const auto t0 = std::chrono::steady_clock::now();
    static_cast<void>(w.pass());
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t n = 0;
    for (const auto& g : w.snapshot().gpus) seen.insert(g.uuid), ++n;
    fmt::print("shard {}/{}: {} GPUs ({:.1f} s, 10 min lookback)\n", i, shards, n, took);
  }
  std::multiset<std::string> all;
  for (const auto& g : fleet) all.insert(g.uuid);
  const bool exact = seen == all;
  fmt::print("shards together cover the fleet exactly once: {}\n", exact ? "yes" : "NO");
  result["shards_exact"] = exact;
  if (!json_path.empty()) std::ofstream(json_path) << result.dump(1) << "\n";
  return exact ? 0 : 1;
}
