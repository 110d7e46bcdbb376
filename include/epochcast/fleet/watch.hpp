// `epochcast watch`: a whole fleet through a PromQL endpoint (docs/watch.md). Discovers the GPUs
// of dcgm-exporter series, splits each GPU's history into jobs, reads only what is new on each
// pass, and asks the Service for each job's epoch period and its predictions on every GPU type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/collect/promql_endpoint.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::fleet {

// This process's part of the fleet: GPUs whose stable UUID hash mod count is index - 1.
struct Shard {
  int index = 1;  // 1-based
  int count = 1;
};
// "i/n" with 1 <= i <= n <= 4096. FieldError("shard", ...) otherwise.
[[nodiscard]] Shard parse_shard(std::string_view text);
// FNV-1a 64 of the UUID: the same on every machine and in every release.
[[nodiscard]] std::uint64_t stable_hash(std::string_view text);
[[nodiscard]] bool in_shard(std::string_view uuid, const Shard& shard);

struct WatchRequest {
  std::string url;             // PromQL endpoint base URL (http://host:9090, a path prefix is kept)
  std::string selector;        // extra label matchers for every query: namespace="ml",Hostname=~"n1.*"
  double every_s = 60;         // between passes
  double lookback_s = 24 * 3600;  // how far back the first pass (and a new GPU) reads
  // Only samples older than this are read: a scrape is stored under its start time and may land
  // in the TSDB up to a scrape timeout later (also covers that much clock skew between series).
  double settle_s = 30;
  Shard shard;
  double timeout_s = 30;       // per request
  std::size_t gpus_per_query = 100;        // UUIDs in one query's regex
  std::size_t samples_per_query = 400000;  // aimed at per request (answer size: ~25 bytes each)
  std::vector<std::string> gpus;           // prediction targets; empty: the whole catalog
  double min_confidence = 0.5;             // detection's bar for "found"
  // With a Service that has a job store: each job is recorded there once it ends, under the key
  // this template makes of its labels ("{namespace}/{job_name}"; docs/watch.md "Job store");
  // "": recorded without a key. Without a store it must be "".
  std::string job_key;

  void validate() const;  // FieldError naming the field
};

struct InstancePrice {
  std::string provider;
  std::string instance;
  double usd = 0;  // on demand, per epoch
};

struct JobPrediction {
  std::string target_gpu;  // catalog id
  double epoch_s = 0;
  double lo_s = 0;         // the nominal 90 % interval
  double hi_s = 0;
  std::vector<InstancePrice> usd_per_epoch;  // cheapest first
};

struct JobView {
  std::string id;                              // stable: UUID/start
  std::map<std::string, std::string> labels;   // pod, namespace, container, the job key's (those present)
  std::string job_key;                         // from WatchRequest::job_key; "" when none
  std::int64_t store_run_id = 0;               // the job store's run, once the ended job is recorded
  double start_unix_s = 0;
  std::optional<double> end_unix_s;            // none while running
  std::size_t samples = 0;
  bool analysed = false;                       // detection has run at least once
  bool found = false;
  double epoch_s = 0;
  double confidence = 0;
  std::string why;                             // reason when not found, or a caveat
  std::vector<JobPrediction> predictions;      // fastest first
};

struct GpuView {
  std::string uuid;
  std::string hostname;
  std::string gpu;                             // the gpu label ("0")
  std::string model_name;                      // modelName label
  std::optional<std::string> catalog_id;
  bool busy = false;                           // a job is running now
  std::vector<JobView> jobs;                   // oldest first
};

struct PassStats {
  double started_unix_s = 0;
  double seconds = 0;
  std::size_t queries = 0;
  std::size_t samples = 0;                     // samples read
  std::size_t errors = 0;                      // requests that failed
  std::size_t analysed = 0;                    // jobs (re)analysed
  bool ok = true;                              // no request failed
};

struct FleetSnapshot {
  std::string source;                          // the URL without credentials
  Shard shard;
  double every_s = 60;
  std::optional<PassStats> last_pass;
  std::uint64_t passes = 0;
  std::uint64_t errors_total = 0;
  std::uint64_t queries_total = 0;
  std::vector<GpuView> gpus;                   // by hostname, gpu, UUID
};

class Watcher {
 public:
  // `clock`: Unix seconds now (default: the wall clock); `log`: one line per fault or step
  // (default: none). Throws FieldError for a bad request. `service` must outlive this.
  Watcher(const Service& service, WatchRequest request, std::function<double()> clock = {},
          std::function<void(const std::string&)> log = {});
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // One pass: discovery, the new samples of every GPU, the jobs they extend, analysis of the
  // jobs that grew enough. Faults of the endpoint are counted and logged, never thrown; what
  // could not be read is read on a later pass. `progress`: (GPUs read, GPUs in all).
  PassStats pass(const std::function<void(std::size_t, std::size_t)>& progress = {});

  // A copy of the current state; safe from any thread while a pass runs.
  [[nodiscard]] FleetSnapshot snapshot() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// GET /v1/fleet's object (docs/watch.md).
[[nodiscard]] std::string fleet_json(const FleetSnapshot& snapshot, int indent = -1);
// The exposition text of /metrics: running jobs' detections and predictions, and the
// watcher's own counters (docs/watch.md, "Metrics").
[[nodiscard]] std::string fleet_metrics_text(const FleetSnapshot& snapshot);
// A duration for a request field: "60", "60s", "500ms", "5m", "24h", "1d". FieldError(field).
[[nodiscard]] double parse_duration_s(std::string_view text, std::string_view field);
// The URL with any user:password@ removed (collect's, shared with collect --prometheus).
using epochcast::strip_credentials;

}  // namespace epochcast::fleet
