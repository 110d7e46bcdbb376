#include "fleet_options.hpp"

#include <fmt/format.h>

#include "epochcast/service/request.hpp"

namespace epochcast::cli {

void add_fleet_options(CLI::App& cmd, FleetArgs& a, bool url_required) {
  auto* url = cmd.add_option("--prometheus", a.url,
                             "PromQL endpoint to read dcgm-exporter series from (Prometheus, Thanos, Mimir, "
                             "VictoriaMetrics): http://HOST:PORT[/PREFIX]; user:password@ is sent as basic auth");
  if (url_required) url->required();
  cmd.add_option("--selector", a.selector, "label matchers added to every query, e.g. namespace=\"ml\",Hostname=~\"n1.*\"");
  cmd.add_option("--every", a.every, "time between passes (s, m, h)")->capture_default_str();
  cmd.add_option("--lookback", a.lookback, "history the first pass (and a newly seen GPU) reads")->capture_default_str();
  cmd.add_option("--settle", a.settle, "read only samples older than this (scrapes land late; clock skew)")
      ->capture_default_str();
  cmd.add_option("--timeout", a.timeout, "per request to the endpoint")->capture_default_str();
  cmd.add_option("--shard", a.shard, "this process's part of the fleet, i/n: GPUs by a stable hash of their UUID")
      ->capture_default_str();
  cmd.add_option("--gpus", a.gpus, "GPU types to predict for (catalog ids), or all")->capture_default_str();
  cmd.add_option("--min-confidence", a.min_confidence, "detection's bar for a found period (0 to 1)")->capture_default_str();
  cmd.add_option("--gpus-per-query", a.gpus_per_query, "UUIDs per query (a regex alternation)")->capture_default_str();
  cmd.add_option("--job-key", a.job_key,
                 "record each ended job in the job store under this key made of its labels, e.g. "
                 "'{namespace}/{pod|workload}' ({pod|workload}: the pod name less Kubernetes' generated suffixes): runs "
                 "of one key on two GPU types are measured pairs (needs --store)");
}

fleet::WatchRequest to_watch_request(const FleetArgs& a) {
  fleet::WatchRequest r;
  r.url = a.url;
  r.selector = a.selector;
  r.every_s = fleet::parse_duration_s(a.every, "every_s");
  r.lookback_s = fleet::parse_duration_s(a.lookback, "lookback_s");
  r.settle_s = fleet::parse_duration_s(a.settle, "settle_s");
  r.timeout_s = fleet::parse_duration_s(a.timeout, "timeout_s");
  r.shard = fleet::parse_shard(a.shard);
  r.gpus = parse_gpu_list(a.gpus, "gpus");
  r.min_confidence = a.min_confidence;
  r.gpus_per_query = a.gpus_per_query;
  r.job_key = a.job_key;
  r.validate();
  return r;
}

FleetLoop::FleetLoop(fleet::Watcher& watcher, double every_s, std::function<void(const fleet::PassStats&)> after_pass)
    : watcher_(watcher), every_s_(every_s), after_pass_(std::move(after_pass)) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      const fleet::PassStats stats = watcher_.pass();
      if (after_pass_) after_pass_(stats);
      lock.lock();
      wake_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, every_s_ - stats.seconds)), [this] { return stop_; });
    }
  });
}

FleetLoop::~FleetLoop() { stop(); }

void FleetLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string pass_line(const fleet::FleetSnapshot& s) {
  std::size_t busy = 0, jobs = 0, found = 0;
  for (const auto& g : s.gpus) {
    busy += g.busy ? 1 : 0;
    jobs += g.jobs.size();
    for (const auto& j : g.jobs) found += j.found ? 1 : 0;
  }
  const auto& p = *s.last_pass;
  return fmt::format("pass {}: {} GPUs ({} busy), {} jobs ({} with a period), {} queries, {} samples, {:.1f} s, {} errors{}",
                     s.passes, s.gpus.size(), busy, jobs, found, p.queries, p.samples, p.seconds, p.errors,
                     p.ok ? "" : " (see above; retried next pass)");
}

}  // namespace epochcast::cli
