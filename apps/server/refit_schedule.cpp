#include "refit_schedule.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <exception>

#include "epochcast/core/error.hpp"

namespace epochcast::server {

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

nlohmann::json to_json(const ModelInfo& m) {
  return {{"label", m.label}, {"version", m.version}, {"trained_on", m.trained_on}, {"generation", m.generation}};
}

nlohmann::json to_json(const RefitResult& r) {
  return {{"model", to_json(r.model)},
          {"previous", to_json(r.previous)},
          {"store_pairs", r.store_pairs},
          {"store_rows", r.store_rows},
          {"refused", r.refused},
          {"calibration_only", r.calibration_only},
          {"fit_seconds", r.seconds},
          {"model_file", r.model_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.model_file)}};
}

RefitSchedule::RefitSchedule(const Service& service, RefitOptions options)
    : service_(service), options_(std::move(options)) {
  if (options_.every_s > 0) thread_ = std::thread([this] { loop(); });
}

RefitSchedule::~RefitSchedule() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<RefitResult> RefitSchedule::refit_now(const std::string& why) { return run(why); }

std::optional<RefitResult> RefitSchedule::run(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (running_) return std::nullopt;
    running_ = true;
  }
  nlohmann::json last = {{"at", utc_now()}, {"why", why}};
  std::optional<RefitResult> result;
  std::string failure;
  std::exception_ptr error;
  try {
    result = service_.refit(options_.model_file);  // nullopt only if another caller raced past running_
  } catch (const std::exception& e) {
    failure = e.what();
    error = std::current_exception();
  }
  last["ok"] = failure.empty() && result.has_value();
  if (result) last["result"] = to_json(*result);
  if (!failure.empty()) last["error"] = failure;
  if (options_.log) {
    if (result)
      options_.log(fmt::format("refit ({}): {} measured pairs (store rows {}) in {:.1f} s; model {} -> {}", why,
                               result->store_pairs, result->store_rows, result->seconds, result->previous.version,
                               result->model.version));
    else if (!failure.empty())
      options_.log(fmt::format("refit ({}) not done: {}", why, failure));
  }
  {
    std::lock_guard lock(mu_);
    running_ = false;
    if (result) ++refits_;
    last_ = std::move(last);
  }
  if (error) std::rethrow_exception(error);
  return result;
}

nlohmann::json RefitSchedule::status() const {
  std::lock_guard lock(mu_);
  return {{"every_s", options_.every_s > 0 ? nlohmann::json(options_.every_s) : nlohmann::json(nullptr)},
          {"running", running_},
          {"refits", refits_},
          {"last", last_}};
}

void RefitSchedule::loop() {
  std::unique_lock lock(mu_);
  const auto period = std::chrono::duration<double>(options_.every_s);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    try {
      // Nothing new since the last attempt: the same data would fit the same model.
      const auto mark = service_.store_pairable_runs();
      if (!learned_mark_ || *learned_mark_ != mark) {
        learned_mark_ = mark;
        static_cast<void>(run(fmt::format("every {:g} s", options_.every_s)));
      }
    } catch (const std::exception&) {
      // Recorded in the status and the log by run(); the schedule goes on.
    }
    lock.lock();
  }
}

}  // namespace epochcast::server
