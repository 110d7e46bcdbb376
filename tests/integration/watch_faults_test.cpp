// watch against a misbehaving endpoint (fault_proxy.hpp in front of a real Prometheus): every
// fault is counted and said, the pass goes on or stops, no tracked job is lost, and once the
// endpoint recovers the watcher ends where a fault-free one does.
#include <gtest/gtest.h>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/service.hpp"
#include "fault_proxy.hpp"
#include "watch_fleet.hpp"

using namespace epochcast;
using namespace epochcast::testing;

namespace {

struct Case {
  const char* name;
  Fault fault;
  bool counted;  // an error (NaN values are data, not an error)
};

class WatchFaults : public SmallFleetSuite<::testing::TestWithParam<Case>> {
 protected:
  static fleet::WatchRequest request(const std::string& url) {
    fleet::WatchRequest r = small_fleet_request(url, {"a100-80gb"});
    r.timeout_s = 0.5;
    return r;
  }
};

TEST_P(WatchFaults, CountedSaidNoJobLostAndRecovered) {
  const Case c = GetParam();
  const int port = std::stoi(fleet_->url().substr(fleet_->url().rfind(':') + 1));
  FaultProxy proxy("127.0.0.1", port);
  std::vector<std::string> said;
  double now = fleet_->start_unix_s() + 3600;
  fleet::Watcher w(*service_, request(proxy.url()), [&now] { return now; },
                   [&said](const std::string& line) { said.push_back(line); });
  ASSERT_TRUE(w.pass().ok);
  const fleet::FleetSnapshot before = w.snapshot();
  std::size_t jobs_before = 0;
  for (const auto& g : before.gpus) jobs_before += g.jobs.size();
  ASSERT_GT(jobs_before, 3u);

  proxy.set(c.fault);
  now += 900;
  const fleet::PassStats faulty = w.pass();
  const fleet::FleetSnapshot during = w.snapshot();
  if (c.counted) {
    EXPECT_FALSE(faulty.ok);
    EXPECT_GT(during.errors_total, 0u);
    ASSERT_FALSE(said.empty());
    EXPECT_NE(said.front().find(proxy.url()), std::string::npos) << said.front();
    EXPECT_NE(fleet::fleet_metrics_text(during).find("epochcast_watch_errors_total " + std::to_string(during.errors_total)),
              std::string::npos);
  }
  // Nothing tracked is forgotten: every job of the first pass is still there, as it was or longer.
  ASSERT_EQ(during.gpus.size(), before.gpus.size());
  for (std::size_t i = 0; i < before.gpus.size(); ++i) {
    ASSERT_GE(during.gpus[i].jobs.size(), before.gpus[i].jobs.size());
    for (std::size_t k = 0; k < before.gpus[i].jobs.size(); ++k) {
      EXPECT_EQ(during.gpus[i].jobs[k].id, before.gpus[i].jobs[k].id);
      EXPECT_GE(during.gpus[i].jobs[k].samples, before.gpus[i].jobs[k].samples);
    }
  }

  proxy.set(Fault::kNone);
  now = fleet_->end_unix_s() + 60;
  EXPECT_TRUE(w.pass().ok);
  if (c.fault == Fault::kNaN) return;  // NaN was the endpoint's answer: those samples are missing
  // What could not be read was read on the next pass: the end state is a fault-free watcher's.
  double at = now;
  fleet::Watcher clean(*service_, request(fleet_->url()), [&at] { return at; });
  static_cast<void>(clean.pass());
  const fleet::FleetSnapshot want = clean.snapshot(), got = w.snapshot();
  ASSERT_EQ(got.gpus.size(), want.gpus.size());
  for (std::size_t i = 0; i < want.gpus.size(); ++i) {
    ASSERT_EQ(got.gpus[i].jobs.size(), want.gpus[i].jobs.size()) << want.gpus[i].uuid;
    for (std::size_t k = 0; k < want.gpus[i].jobs.size(); ++k) {
      EXPECT_EQ(got.gpus[i].jobs[k].id, want.gpus[i].jobs[k].id);
      EXPECT_EQ(got.gpus[i].jobs[k].samples, want.gpus[i].jobs[k].samples);
      EXPECT_EQ(got.gpus[i].jobs[k].found, want.gpus[i].jobs[k].found);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, WatchFaults,
                         ::testing::Values(Case{"Status500", Fault::kStatus500, true},
                                           Case{"GarbledBody", Fault::kGarbled, true},
                                           Case{"CutJson", Fault::kPartial, true},
                                           Case{"NaNValues", Fault::kNaN, false},
                                           Case{"TooSlow", Fault::kSlow, true},
                                           Case{"Unavailable", Fault::kRefused, true}),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(WatchDown, NoServerIsSaidAndCountedEveryPass) {
  // A port nothing listens on: connection refused.
  const int port = free_port();
  Service service;
  std::vector<std::string> said;
  fleet::WatchRequest r;
  r.url = "http://user:secret@127.0.0.1:" + std::to_string(port);
  r.timeout_s = 0.5;
  fleet::Watcher w(service, r, {}, [&said](const std::string& line) { said.push_back(line); });
  for (int i = 1; i <= 2; ++i) {
    const fleet::PassStats s = w.pass();
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(w.snapshot().errors_total, static_cast<std::uint64_t>(i));
  }
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said.front().find("127.0.0.1:" + std::to_string(port)), std::string::npos) << said.front();
  EXPECT_NE(said.front().find("cannot reach"), std::string::npos) << said.front();
  for (const auto& line : said) EXPECT_EQ(line.find("secret"), std::string::npos) << "credentials in the log: " << line;
  EXPECT_EQ(w.snapshot().source.find("secret"), std::string::npos);
}

}  // namespace
