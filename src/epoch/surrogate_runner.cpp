#include "surrogate_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "epochcast/core/error.hpp"

namespace epochcast::detail {
namespace {

constexpr std::size_t kUnset = static_cast<std::size_t>(-1);
// The most helpers EPOCHCAST_SURROGATE_HELPERS may ask for (beyond any machine's useful count).
constexpr std::size_t kMaxHelpersSetting = 1024;
std::atomic<std::size_t> g_max_helpers{kUnset};  // kUnset: $EPOCHCAST_SURROGATE_HELPERS or the default
std::atomic<std::size_t> g_running{0};  // searches (callers) and helpers working now

// $EPOCHCAST_SURROGATE_HELPERS (0 to 1024), else the hardware's threads less one.
std::size_t max_helpers() {
  std::size_t v = g_max_helpers.load();
  if (v != kUnset) return v;
  v = std::max(1U, std::thread::hardware_concurrency()) - 1;
  if (const char* env = std::getenv("EPOCHCAST_SURROGATE_HELPERS"); env && *env) {
    const std::string_view text(env);
    std::size_t parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc{} || end != text.data() + text.size() || parsed > kMaxHelpersSetting)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("EPOCHCAST_SURROGATE_HELPERS='{}': expected a whole number of threads, 0 to {}", text,
                              kMaxHelpersSetting));
    v = parsed;
  }
  std::size_t expected = kUnset;
  g_max_helpers.compare_exchange_strong(expected, v);
  return g_max_helpers.load();
}

// Fewer surrogates than this: one thread (a helper's start costs more than a few scans).
constexpr std::size_t kMinParallelCount = 4;

}  // namespace

std::size_t set_max_surrogate_helpers(std::size_t helpers) {
  const std::size_t before = max_helpers();
  g_max_helpers.store(helpers);
  return before;
}

std::size_t run_ordered(std::size_t count, const std::function<void(std::size_t)>& prepare,
                        const std::function<double(std::size_t, std::size_t)>& score,
                        const std::function<bool(std::size_t, double)>& consume) {
  // An explicit setting above the hardware's count is honoured as if there were that many cores.
  const std::size_t cores = std::max<std::size_t>(std::max(1U, std::thread::hardware_concurrency()), max_helpers() + 1);
  const std::size_t running = g_running.fetch_add(1) + 1;
  const std::size_t idle = cores > running ? cores - running : 0;
  const std::size_t helpers =
      count < kMinParallelCount ? 0 : std::min({max_helpers(), idle, count - 1});
  g_running.fetch_add(helpers);
  struct Release {
    std::size_t n;
    ~Release() { g_running.fetch_sub(n); }
  } release{helpers + 1};
  prepare(helpers);
  if (helpers == 0) {
    for (std::size_t i = 0; i < count; ++i)
      if (!consume(i, score(0, i))) break;
    return 0;
  }
  // Shared by the caller and its helpers, under one mutex (a scan is ~1 ms; the lock is not
  // where the time goes): the next index to take, how many the caller has consumed, each
  // index's score and whether it is there. An index is taken only within `window` of the
  // consumed ones, so a stop leaves at most window - 1 scores computed for nothing.
  const std::size_t window = helpers + 1;
  std::size_t next = 0, consumed = 0;
  bool stop = false;
  std::vector<double> scores(count, 0.0);
  std::vector<char> ready(count, 0);
  std::mutex m;
  std::condition_variable changed;
  const auto can_take = [&] { return !stop && next < count && next < consumed + window; };
  // Takes and scores one index when the window allows (the lock held on entry and exit).
  const auto take_and_score = [&](std::unique_lock<std::mutex>& lock, std::size_t worker) {
    const std::size_t i = next++;
    lock.unlock();
    const double v = score(worker, i);
    lock.lock();
    scores[i] = v;
    ready[i] = 1;
    changed.notify_all();
  };
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  // The helpers stop and are joined however the caller leaves (a consume that throws too).
  struct Joiner {
    std::mutex& m;
    bool& stop;
    std::condition_variable& changed;
    std::vector<std::thread>& pool;
    ~Joiner() {
      {
        std::lock_guard lock(m);
        stop = true;
      }
      changed.notify_all();
      for (auto& t : pool) t.join();
    }
  } joiner{m, stop, changed, pool};
  for (std::size_t w = 1; w <= helpers; ++w) {
    try {
      pool.emplace_back([&, w] {
        std::unique_lock lock(m);
        while (true) {
          changed.wait(lock, [&] { return stop || next >= count || can_take(); });
          if (stop || next >= count) return;
          take_and_score(lock, w);
        }
      });
    } catch (const std::system_error&) {
      break;  // no thread to be had: the caller and the helpers started do the work
    }
  }
  {
    std::unique_lock lock(m);
    for (std::size_t i = 0; i < count; ++i) {
      // The caller works too while its next score is not there.
      while (!ready[i]) {
        if (can_take()) take_and_score(lock, 0);
        else changed.wait(lock, [&] { return ready[i] || can_take(); });
      }
      const double v = scores[i];
      lock.unlock();
      const bool more = consume(i, v);
      lock.lock();
      if (!more) break;
      consumed = i + 1;
      changed.notify_all();
    }
  }
  return pool.size();
}

}  // namespace epochcast::detail
