// The fleet watcher's flags, shared by `watch` and `serve --prometheus`.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "epochcast/fleet/watch.hpp"

namespace epochcast::cli {

struct FleetArgs {
  std::string url;
  std::string selector;
  std::string every = "60s";
  std::string lookback = "24h";
  std::string settle = "30s";
  std::string timeout = "30s";
  std::string shard = "1/1";
  std::string gpus = "all";
  double min_confidence = 0.5;
  std::size_t gpus_per_query = 100;
  std::string job_key;  // template over a job's labels: its key in the job store
};

// `url_required`: watch needs --prometheus; serve takes it as an option.
void add_fleet_options(CLI::App& cmd, FleetArgs& args, bool url_required);
// FieldError naming the field for a bad value.
[[nodiscard]] fleet::WatchRequest to_watch_request(const FleetArgs& args);

// Passes every every_s on a thread of its own (serve --prometheus), until stop().
class FleetLoop {
 public:
  FleetLoop(fleet::Watcher& watcher, double every_s, std::function<void(const fleet::PassStats&)> after_pass);
  ~FleetLoop();
  void stop();

 private:
  fleet::Watcher& watcher_;
  double every_s_;
  std::function<void(const fleet::PassStats&)> after_pass_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// One line about a pass for stderr: "pass 3: 1000 GPUs, 812 busy, 10 queries, 1.2 s, 0 errors".
[[nodiscard]] std::string pass_line(const fleet::FleetSnapshot& snapshot);

}  // namespace epochcast::cli
