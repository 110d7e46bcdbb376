// The pass loop: discovery, incremental reads in batched queries, job split, analysis.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/fleet/watch.hpp"
#include "epochcast/trace/read.hpp"
#include "gpu_samples.hpp"
#include "job_analysis.hpp"
#include "job_key.hpp"
#include "job_split.hpp"
#include "promql_client.hpp"

namespace epochcast::fleet {

namespace {

// The first read of a group asks for this many samples per second per GPU at most (15 metrics
// at 1 s, more than dcgm-exporter's default set); later reads size themselves on what came back.
constexpr double kGuessSamplesPerGpuS = 15;
// A read window grows at most this much over the last one (a window of an idle stretch says
// little about the next).
constexpr double kMaxWindowGrowth = 8;
// Consecutive failed requests after which a pass stops: the endpoint is down or overloaded,
// and the next pass retries from where each GPU's reading stopped.
constexpr int kMaxConsecutiveFailures = 3;
// A refused request (too many samples, a proxy's size limit) is retried on a window this much
// smaller, this many times.
constexpr double kShrinkOnRefusal = 0.25;
constexpr int kRetriesOnRefusal = 2;

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct GpuState {
  std::string uuid, hostname, gpu, model_name;
  std::optional<std::string> catalog_id;
  bool catalog_checked = false;
  double read_to = 0;            // samples up to here (Unix s) have been read
  double samples_per_s = 0;      // what its reads returned, all metrics
  std::optional<GpuTimeline> timeline;
};

}  // namespace

struct Watcher::Impl {
  const Service& service;
  WatchRequest request;
  std::function<double()> clock;
  std::function<void(const std::string&)> log;
  PromClient client;
  JobKeyTemplate key_template;           // request.job_key, parsed
  std::map<std::string, GpuState> gpus;  // by UUID
  double discovered_to = 0;

  mutable std::mutex mutex;  // guards the snapshot
  FleetSnapshot snap;

  Impl(const Service& s, WatchRequest r, std::function<double()> c, std::function<void(const std::string&)> l)
      : service(s), request(std::move(r)), clock(c ? std::move(c) : wall_clock), log(std::move(l)),
        client(request.url, request.timeout_s), key_template(parse_job_key_template(request.job_key)) {}

  void say(const std::string& line) const {
    if (log) log(line);
  }

  [[nodiscard]] std::string with_selector(const std::string& matchers) const {
    return request.selector.empty() ? matchers : matchers + "," + request.selector;
  }

  void discover(double end, PassStats& stats) {
    const double start = discovered_to > 0 ? std::max(end - request.lookback_s, discovered_to - request.every_s)
                                           : end - request.lookback_s;
    const std::string match = "{" + with_selector("__name__=~\"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_POWER_USAGE\"") + "}";
    std::vector<Labels> found;
    try {
      found = client.series(match, start, end);
    } catch (const Error& e) {
      ++stats.errors;
      say(fmt::format("discovery failed (the known GPUs are still read): {}", e.what()));
      return;
    }
    discovered_to = end;
    for (const Labels& l : found) {
      const auto uuid_it = l.find("UUID");
      if (uuid_it == l.end() || uuid_it->second.empty() || !in_shard(uuid_it->second, request.shard)) continue;
      auto [it, added] = gpus.try_emplace(uuid_it->second);
      GpuState& g = it->second;
      if (added) {
        g.uuid = uuid_it->second;
        g.read_to = end - request.lookback_s;
        g.timeline.emplace(g.uuid, client.display_url());
      }
      auto label = [&](const char* k) {
        const auto f = l.find(k);
        return f == l.end() ? std::string() : f->second;
      };
      if (g.hostname.empty()) g.hostname = label("Hostname");
      if (g.gpu.empty()) g.gpu = label("gpu");
      if (const std::string model = label("modelName"); !model.empty() && model != g.model_name) {
        g.model_name = model;
        g.catalog_checked = false;
      }
    }
  }

  // Reads [read_to, end] of a group of GPUs that share read_to, in windows sized to the budget.
  // Returns false when the pass should stop (the endpoint keeps failing).
  bool read_group(const std::vector<GpuState*>& group, double end, PassStats& stats, int& consecutive_failures) {
    std::string uuids;
    double rate = 0;
    for (const GpuState* g : group) {
      uuids += (uuids.empty() ? "" : "|") + regex_escape(g->uuid);
      rate += g->samples_per_s > 0 ? g->samples_per_s : kGuessSamplesPerGpuS;
    }
    const std::string selector =
        "{" + with_selector(fmt::format("__name__=~\"{}\",UUID=~{}", watched_metric_regex(), promql_quote(uuids))) + "}";
    double from = group.front()->read_to;
    double window = std::min(end - from, static_cast<double>(request.samples_per_query) / rate);
    int refusals = 0;
    while (from < end - 1e-3) {
      window = std::max(1.0, std::min(window, end - from));
      std::vector<PrometheusSeries> series;
      try {
        series = client.samples(selector, from + window, window);
        consecutive_failures = 0;
      } catch (const Error& e) {
        ++stats.errors;
        ++consecutive_failures;
        say(fmt::format("reading {} GPUs from {} failed: {}", group.size(), format_time(from), e.what()));
        if (e.code() == ErrorCode::kRemote && refusals < kRetriesOnRefusal && window > 2) {
          ++refusals;
          window *= kShrinkOnRefusal;
          continue;
        }
        return consecutive_failures < kMaxConsecutiveFailures;
      }
      refusals = 0;
      std::map<std::string, GpuRows> rows;
      std::size_t unmatched = 0;
      collect_rows(series, rows, unmatched, key_template.labels);
      std::size_t samples = 0;
      for (const auto& s : series) samples += s.points.size();
      stats.samples += samples;
      for (GpuState* g : group) {
        g->read_to = from + window;
        if (const auto it = rows.find(g->uuid); it != rows.end()) {
          if (g->hostname.empty()) g->hostname = it->second.hostname;
          if (g->model_name.empty()) g->model_name = it->second.model_name;
          if (g->gpu.empty()) g->gpu = it->second.gpu;
          g->timeline->add(it->second);
        }
      }
      // Size the next window on what this one returned.
      const double got_rate = static_cast<double>(samples) / window;
      if (samples > 0) {
        const double per_gpu = got_rate / static_cast<double>(group.size());
        for (GpuState* g : group) g->samples_per_s = std::max(g->samples_per_s * 0.5, per_gpu);
      }
      const double next = got_rate > 0 ? static_cast<double>(request.samples_per_query) / got_rate : window * kMaxWindowGrowth;
      from += window;
      window = std::min(next, window * kMaxWindowGrowth);
    }
    return true;
  }

  static std::string format_time(double unix_s) { return format_iso8601_utc(unix_s); }

  void analyse_jobs(PassStats& stats) {
    std::vector<GpuState*> all;
    for (auto& [uuid, g] : gpus) all.push_back(&g);
    analyse_gpus(all, stats);
  }

  // The due jobs of `group`'s GPUs on one thread per core: each GPU's jobs are its own, and the
  // Service answers many threads at once (as under serve). Detection is most of a first pass
  // (docs/journal/watch.md, 2026-12-03: ~84 ms a job, 6,093 jobs).
  void analyse_gpus(const std::vector<GpuState*>& group, PassStats& stats) {
    const std::size_t threads = std::min<std::size_t>(group.size(), std::max(1U, std::thread::hardware_concurrency()));
    if (threads <= 1) {
      for (GpuState* g : group) analyse_gpu(*g, stats);
      return;
    }
    std::atomic<std::size_t> next{0}, analysed{0};
    std::mutex failure_mutex;
    std::exception_ptr failure;
    auto work = [&] {
      PassStats local;
      try {
        for (std::size_t i; (i = next++) < group.size();) analyse_gpu(*group[i], local);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = group.size();
      }
      analysed += local.analysed;
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    stats.analysed += analysed;
    if (failure) std::rethrow_exception(failure);
  }

  void analyse_gpu(GpuState& g, PassStats& stats) {
    {
      if (!g.catalog_checked) {
        g.catalog_id = g.model_name.empty() ? std::nullopt : service.catalog_id(g.model_name);
        g.catalog_checked = true;
      }
      AnalysisConfig config{request.gpus, request.min_confidence, g.catalog_id, g.model_name, service.has_store(),
                            &key_template};
      for (JobState& job : g.timeline->jobs())
        if (analysis_due(job)) {
          analyse(job, service, config);
          ++stats.analysed;
        }
    }
  }

  void publish(const PassStats& stats) {
    FleetSnapshot s;
    s.source = client.display_url();
    s.shard = request.shard;
    s.every_s = request.every_s;
    {
      std::lock_guard lock(mutex);
      s.passes = snap.passes + 1;
      s.errors_total = snap.errors_total + stats.errors;
      s.queries_total = snap.queries_total + stats.queries;
    }
    s.last_pass = stats;
    for (const auto& [uuid, g] : gpus) {
      GpuView& v = s.gpus.emplace_back();
      v.uuid = g.uuid;
      v.hostname = g.hostname;
      v.gpu = g.gpu;
      v.model_name = g.model_name;
      v.catalog_id = g.catalog_id;
      v.busy = g.timeline->busy();
      for (const JobState& job : g.timeline->jobs()) v.jobs.push_back(job.view);
    }
    std::sort(s.gpus.begin(), s.gpus.end(), [](const GpuView& a, const GpuView& b) {
      return std::tie(a.hostname, a.gpu, a.uuid) < std::tie(b.hostname, b.gpu, b.uuid);
    });
    std::lock_guard lock(mutex);
    snap = std::move(s);
  }
};

Watcher::Watcher(const Service& service, WatchRequest request, std::function<double()> clock,
                 std::function<void(const std::string&)> log) {
  request.validate();
  if (!request.job_key.empty() && !service.has_store())
    throw FieldError("job_key_template", "needs a job store to record the jobs in (--store DB)");
  // Unknown targets fail now, not as a reason on every job.
  for (std::string& target : request.gpus) {
    const auto id = service.catalog_id(target);
    if (!id)
      throw FieldError("gpus", fmt::format("'{}' is not in the GPU catalog ({})", target, fmt::join(service.gpu_ids(), ", ")));
    target = *id;
  }
  impl_ = std::make_unique<Impl>(service, std::move(request), std::move(clock), std::move(log));
  impl_->snap.source = impl_->client.display_url();
  impl_->snap.shard = impl_->request.shard;
  impl_->snap.every_s = impl_->request.every_s;
}

Watcher::~Watcher() = default;

PassStats Watcher::pass(const std::function<void(std::size_t, std::size_t)>& progress) {
  Impl& m = *impl_;
  PassStats stats;
  const auto t0 = std::chrono::steady_clock::now();
  stats.started_unix_s = m.clock();
  const std::size_t requests_before = m.client.requests();
  const double end = stats.started_unix_s - m.request.settle_s;
  m.discover(end, stats);

  // Groups of GPUs that share where their reading stopped (after the first pass: all of them).
  std::map<double, std::vector<GpuState*>> by_start;
  for (auto& [uuid, g] : m.gpus)
    if (g.read_to < end) by_start[g.read_to].push_back(&g);
  std::size_t done = 0;
  int consecutive_failures = 0;
  bool stop = false;
  for (auto& [start, list] : by_start) {
    for (std::size_t i = 0; i < list.size() && !stop; i += m.request.gpus_per_query) {
      const std::vector<GpuState*> group(list.begin() + static_cast<std::ptrdiff_t>(i),
                                         list.begin() + static_cast<std::ptrdiff_t>(std::min(list.size(), i + m.request.gpus_per_query)));
      stop = !m.read_group(group, end, stats, consecutive_failures);
      // Analysed now, not at the end of the pass: an ended job's rows are freed once analysed,
      // so a first pass over a day of history never holds all of it.
      m.analyse_gpus(group, stats);
      done += group.size();
      if (progress) progress(done, m.gpus.size());
    }
    if (stop) break;
  }
  if (stop) m.say("the endpoint keeps failing: this pass stops here; the next one reads on from where each GPU stopped");
  for (auto& [uuid, g] : m.gpus) {
    g.timeline->close_if_silent(static_cast<std::int64_t>(std::llround(g.read_to * 1000)));
    g.timeline->forget_ended_before(static_cast<std::int64_t>(std::llround((end - m.request.lookback_s) * 1000)));
  }
  m.analyse_jobs(stats);
  stats.queries = m.client.requests() - requests_before;
  stats.ok = stats.errors == 0;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.publish(stats);
  return stats;
}

FleetSnapshot Watcher::snapshot() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->snap;
}

}  // namespace epochcast::fleet
