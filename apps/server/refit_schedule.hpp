// serve --store: refits of the model from the job store, on request (POST /v1/model/refit) and
// on a schedule in the background (--refit-every), one at a time. The service swaps the model
// atomically; this keeps the timer, the last outcome and the status GET /v1/model shows.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "epochcast/service/service.hpp"

namespace epochcast::server {

struct RefitOptions {
  double every_s = 0;       // > 0: refit this often when the store's pairable runs changed; 0: on request only
  std::string model_file;   // each refit's model is written here ("": kept in memory only)
  std::function<void(const std::string&)> log;  // one line per refit; may be empty
};

class RefitSchedule {
 public:
  // Starts the background thread when options.every_s > 0. `service` must outlive this.
  RefitSchedule(const Service& service, RefitOptions options);
  ~RefitSchedule();  // stops the timer; a refit under way finishes first
  RefitSchedule(const RefitSchedule&) = delete;
  RefitSchedule& operator=(const RefitSchedule&) = delete;

  // A refit now on the caller's thread; nullopt when one is already running. Errors as
  // Service::refit (no measured pair: kInvalidArgument), recorded in the status too.
  std::optional<RefitResult> refit_now(const std::string& why);
  // {"every_s", "running", "refits", "last": {at, why, ok, error | result}} for GET /v1/model.
  [[nodiscard]] nlohmann::json status() const;

 private:
  void loop();
  std::optional<RefitResult> run(const std::string& why);

  const Service& service_;
  RefitOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool running_ = false;
  std::size_t refits_ = 0;
  nlohmann::json last_;  // null until the first attempt
  // pairable_runs() when the last scheduled attempt ran: unchanged means nothing new to learn.
  std::optional<std::pair<std::size_t, std::int64_t>> learned_mark_;
  std::thread thread_;
};

// A refit's outcome as the JSON of POST /v1/model/refit and GET /v1/model.
[[nodiscard]] nlohmann::json to_json(const RefitResult& r);
[[nodiscard]] nlohmann::json to_json(const ModelInfo& m);

}  // namespace epochcast::server
