// epochcast watch against a real Prometheus holding a backfilled fleet (watch_fleet.hpp):
// discovery, job split, found periods, incremental passes, shards, the metrics text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/service.hpp"
#include "watch_fleet.hpp"

using namespace epochcast;
using namespace epochcast::testing;

namespace {

// The bar for a found period.
constexpr double kPeriodTolerance = 0.05;

class WatchFleet : public SmallFleetSuite<> {
 protected:
  static fleet::WatchRequest request() { return small_fleet_request(fleet_->url(), {"a100-80gb", "h100-sxm", "l4"}); }
  // A watcher whose clock stands at `at` (Unix s).
  static std::unique_ptr<fleet::Watcher> watcher(fleet::WatchRequest r, const double* at) {
    return std::make_unique<fleet::Watcher>(*service_, std::move(r), [at] { return *at; },
                                            [](const std::string& line) { std::cerr << "watch: " << line << "\n"; });
  }
  static const fleet::GpuView* gpu(const fleet::FleetSnapshot& s, const std::string& uuid) {
    for (const auto& g : s.gpus)
      if (g.uuid == uuid) return &g;
    return nullptr;
  }
};

TEST_F(WatchFleet, DiscoversEveryGpuAndSplitsJobs) {
  const double at = fleet_->end_unix_s() + 60;
  auto w = watcher(request(), &at);
  const fleet::PassStats stats = w->pass();
  EXPECT_TRUE(stats.ok);
  const fleet::FleetSnapshot s = w->snapshot();
  ASSERT_EQ(s.gpus.size(), 6u) << fleet::fleet_json(s, 1);
  const auto& specs = fleet_->gpus();
  const fleet::GpuView* a = gpu(s, specs[0].uuid);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->hostname, "n1");
  EXPECT_EQ(a->catalog_id.value_or(""), "h100-sxm");
  ASSERT_EQ(a->jobs.size(), 2u) << fleet::fleet_json(s, 1);
  EXPECT_EQ(a->jobs[0].labels.at("pod"), "train-a");
  EXPECT_EQ(a->jobs[1].labels.at("pod"), "train-b");
  EXPECT_TRUE(a->jobs[0].end_unix_s.has_value());
  EXPECT_TRUE(gpu(s, specs[1].uuid)->jobs.empty()) << "an idle GPU has no job";
  EXPECT_FALSE(gpu(s, specs[1].uuid)->busy);
  const fleet::GpuView* d = gpu(s, specs[3].uuid);
  ASSERT_EQ(d->jobs.size(), 2u) << "a 15 min idle gap splits a bare-metal GPU's jobs";
  EXPECT_TRUE(d->jobs[0].labels.empty());
  EXPECT_EQ(d->catalog_id.value_or(""), "a100-80gb");
  EXPECT_EQ(gpu(s, specs[4].uuid)->jobs.size(), 1u) << "4 min without samples is not a new job";
  const fleet::GpuView* f = gpu(s, specs[5].uuid);
  ASSERT_EQ(f->jobs.size(), 1u);
  EXPECT_TRUE(f->busy);
  EXPECT_FALSE(f->jobs[0].end_unix_s.has_value()) << "still running";
  // Every job starts within a scrape or two of its truth (its warm-up is busy).
  for (const FleetJobTruth& t : fleet_->truth()) {
    const fleet::GpuView* g = gpu(s, t.uuid);
    bool matched = false;
    for (const auto& j : g->jobs) matched |= std::abs(j.start_unix_s - t.start_unix_s) < 120 && j.labels == t.labels;
    EXPECT_TRUE(matched) << t.uuid << " job at " << t.start_unix_s << "\n" << fleet::fleet_json(s, 1);
  }
}

TEST_F(WatchFleet, FindsEachPeriodWithinFivePercentAndAbstainsWithoutSignature) {
  const double at = fleet_->end_unix_s() + 60;
  auto w = watcher(request(), &at);
  static_cast<void>(w->pass());
  const fleet::FleetSnapshot s = w->snapshot();
  for (const FleetJobTruth& t : fleet_->truth()) {
    const fleet::GpuView* g = gpu(s, t.uuid);
    for (const auto& j : g->jobs) {
      if (std::abs(j.start_unix_s - t.start_unix_s) > 120) continue;
      if (!t.has_signature) {
        EXPECT_FALSE(j.found && std::abs(j.epoch_s - t.period_s) <= kPeriodTolerance * t.period_s)
            << "no signature, yet a period: " << j.epoch_s;
        continue;
      }
      EXPECT_TRUE(j.found) << t.uuid << " (" << t.period_s << " s): " << j.why;
      EXPECT_NEAR(j.epoch_s, t.period_s, kPeriodTolerance * t.period_s) << t.uuid;
      if (g->catalog_id) EXPECT_EQ(j.predictions.size(), 3u) << j.why;
    }
  }
}

TEST_F(WatchFleet, IncrementalPassesReadEachSampleOnceAndAgreeWithOnePass) {
  const double end = fleet_->end_unix_s() + 60;
  double at = end;
  auto whole = watcher(request(), &at);
  const fleet::PassStats one = whole->pass();
  const fleet::FleetSnapshot expected = whole->snapshot();

  // The same fleet seen live: a first pass 40 min into it, then a pass every 5 min.
  double now = fleet_->start_unix_s() + 2400;
  auto live = watcher(request(), &now);
  std::size_t samples = 0, passes = 0, max_queries = 0;
  for (; now <= end + 1e-6; now += 300) {
    const fleet::PassStats p = live->pass();
    EXPECT_TRUE(p.ok);
    samples += p.samples;
    if (passes++ > 0) max_queries = std::max(max_queries, p.queries);
  }
  // Each pass asks for (last pass, now] only: the samples add up to one pass's, none twice.
  EXPECT_EQ(samples, one.samples);
  // An incremental pass: one discovery and one read of the 6 GPUs.
  EXPECT_LE(max_queries, 2u);
  const fleet::FleetSnapshot got = live->snapshot();
  ASSERT_EQ(got.gpus.size(), expected.gpus.size());
  for (std::size_t i = 0; i < got.gpus.size(); ++i) {
    ASSERT_EQ(got.gpus[i].jobs.size(), expected.gpus[i].jobs.size()) << got.gpus[i].uuid;
    for (std::size_t k = 0; k < got.gpus[i].jobs.size(); ++k) {
      const auto& a = got.gpus[i].jobs[k];
      const auto& b = expected.gpus[i].jobs[k];
      EXPECT_EQ(a.id, b.id);
      EXPECT_EQ(a.samples, b.samples) << a.id;
      EXPECT_EQ(a.found, b.found) << a.id;
      if (a.found && b.found) EXPECT_NEAR(a.epoch_s, b.epoch_s, 0.01 * b.epoch_s) << a.id;
    }
  }
}

TEST_F(WatchFleet, TwoShardsCoverTheFleetExactlyOnce) {
  const double at = fleet_->end_unix_s() + 60;
  std::multiset<std::string> seen;
  for (int i = 1; i <= 2; ++i) {
    fleet::WatchRequest r = request();
    r.shard = {i, 2};
    auto w = watcher(r, &at);
    static_cast<void>(w->pass());
    for (const auto& g : w->snapshot().gpus) {
      seen.insert(g.uuid);
      EXPECT_TRUE(fleet::in_shard(g.uuid, r.shard));
    }
  }
  std::multiset<std::string> fleet;
  for (const auto& g : fleet_->gpus()) fleet.insert(g.uuid);
  EXPECT_EQ(seen, fleet);
}

TEST_F(WatchFleet, SelectorNarrowsTheFleet) {
  const double at = fleet_->end_unix_s() + 60;
  fleet::WatchRequest r = request();
  r.selector = "Hostname=\"n2\"";
  auto w = watcher(r, &at);
  static_cast<void>(w->pass());
  const auto s = w->snapshot();
  ASSERT_EQ(s.gpus.size(), 2u);
  for (const auto& g : s.gpus) EXPECT_EQ(g.hostname, "n2");
}

}  // namespace
