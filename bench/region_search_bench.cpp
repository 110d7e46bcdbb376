// The whole-region search (src/epoch/region_search.cpp) against the frozen copy of the search it
// replaced (bench/region_search_reference.hpp), side by side in every iteration: the same
// inputs (bench/region_search_cases.hpp, quick set: each shared trace's training region with
// and without the host log, the whole host trace, four synthetic runs; the proposer's options),
// each search timed in this thread's CPU time (the shared box's load swings wall time). Counters:
// ms per call of each, their ratio (reference / shipped: how many times cheaper), and
// `mismatches`, the cases whose results differ in any bit (must be 0).
#include <benchmark/benchmark.h>

#include <cstring>
#include <ctime>
#include <string>

#include "region_search_cases.hpp"
#include "region_search_reference.hpp"

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool same(const epochcast::detail::RegionSearchResult& a, const epochcast::detail::RegionSearchResult& r) {
  const auto bits = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  bool ok = a.ok == r.ok && a.inner == r.inner && a.why == r.why && bits(a.period_samples, r.period_samples) &&
            bits(a.z, r.z) && bits(a.p_value, r.p_value) && bits(a.p_phase, r.p_phase) && bits(a.p_block, r.p_block) &&
            bits(a.epochs, r.epochs) && a.boundaries.size() == r.boundaries.size();
  for (std::size_t i = 0; ok && i < a.boundaries.size(); ++i) ok = bits(a.boundaries[i], r.boundaries[i]);
  return ok;
}

void BM_RegionSearch(benchmark::State& state) {
  static const auto cases =
      epochcast::region_cases::make_cases(std::string(EPOCHCAST_TEST_DATA) + "/h200/", true);
  double shipped_s = 0, reference_s = 0;
  long calls = 0, mismatches = 0;
  for (auto _ : state) {
    for (const auto& c : cases) {
      const auto ch = c.spans();
      double t0 = thread_cpu_s();
      const auto a = epochcast::detail::region_search(ch, c.options);
      double t1 = thread_cpu_s();
      const auto r = epochcast::region_reference::region_search(ch, c.options);
      double t2 = thread_cpu_s();
      shipped_s += t1 - t0;
      reference_s += t2 - t1;
      mismatches += !same(a, r);
      ++calls;
      benchmark::DoNotOptimize(a.z);
      benchmark::DoNotOptimize(r.z);
    }
  }
  state.counters["cases"] = static_cast<double>(cases.size());
  state.counters["shipped_ms_per_call"] = 1e3 * shipped_s / static_cast<double>(calls);
  state.counters["reference_ms_per_call"] = 1e3 * reference_s / static_cast<double>(calls);
  state.counters["x_cheaper"] = shipped_s > 0 ? reference_s / shipped_s : 0;
  state.counters["mismatches"] = static_cast<double>(mismatches);
}
BENCHMARK(BM_RegionSearch)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
