// The Prometheus client against an in-process HTTP server that plays the query_range API,
// so that faults (error bodies, garbage, slowness) can be injected. The real Prometheus
// server is exercised in tests/integration/prometheus_collect_test.cpp.
#include "epochcast/collect/prometheus.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

class FakeApi {
 public:
  explicit FakeApi(std::function<void(const httplib::Request&, httplib::Response&)> handler) {
    // query_range for grid reads, query for raw ones (SELECTOR[window] at a time).
    for (const char* path : {"/api/v1/query_range", "/api/v1/query"})
      server_.Get(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(req.params);
          paths_.push_back(req.path);
        }
        handler(req, res);
      });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 1000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApi() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<httplib::Params> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::vector<std::string> paths() {
    std::lock_guard lock(mutex_);
    return paths_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<httplib::Params> requests_;
  std::vector<std::string> paths_;
};

std::string param(const httplib::Params& p, const char* key) {
  const auto it = p.find(key);
  return it == p.end() ? "" : it->second;
}

// Answers every point of the requested grid: power = t mod 100, util "NaN" at t mod 10 == 0.
void grid_answer(const httplib::Request& req, httplib::Response& res) {
  const double start = std::stod(req.get_param_value("start"));
  const double end = std::stod(req.get_param_value("end"));
  const double step = std::stod(req.get_param_value("step"));
  std::string power, util;
  for (double t = start; t <= end + 1e-9; t += step) {
    const auto ti = static_cast<long long>(std::llround(t));
    power += (power.empty() ? "" : ",") + fmt::format("[{},\"{}\"]", ti, ti % 100);
    util += (util.empty() ? "" : ",") + fmt::format("[{},\"{}\"]", ti, ti % 10 == 0 ? "NaN" : "50");
  }
  const std::string labels = R"("gpu":"0","UUID":"GPU-abc","modelName":"NVIDIA H200","Hostname":"n1")";
  res.set_content(fmt::format(R"({{"status":"success","data":{{"resultType":"matrix","result":[)"
                              R"({{"metric":{{"__name__":"DCGM_FI_DEV_POWER_USAGE",{}}},"values":[{}]}},)"
                              R"({{"metric":{{"__name__":"DCGM_FI_DEV_GPU_UTIL",{}}},"values":[{}]}}]}}}})",
                              labels, power, labels, util),
                  "application/json");
}

TEST(Prometheus, LongRangesAreChunkedUnderThePointLimit) {
  FakeApi api(grid_answer);
  PrometheusQuery q;
  q.url = api.url();
  q.uuid = "GPU-abc";
  q.start_unix_s = 1'000'000;
  q.end_unix_s = 1'000'000 + 24 * 3600;  // a day at 1 s: 86,401 points
  q.step_s = 1;
  std::size_t progress_calls = 0;
  q.on_progress = [&](std::size_t done, std::size_t total) {
    ++progress_calls;
    EXPECT_LE(done, total);
  };
  const Trace t = fetch_prometheus_trace(q);
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 9u);  // ceil(86401 / 10000)
  EXPECT_EQ(progress_calls, 9u);
  double expected_start = q.start_unix_s;
  for (const auto& r : requests) {
    const double s = std::stod(param(r, "start")), e = std::stod(param(r, "end"));
    EXPECT_DOUBLE_EQ(s, expected_start) << "chunks must tile the range without gap or overlap";
    EXPECT_LT((e - s) / 1 + 1, kPrometheusMaxPoints);
    expected_start = e + 1;
    EXPECT_NE(param(r, "query").find("UUID=\"GPU-abc\""), std::string::npos);
    EXPECT_NE(param(r, "query").find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(expected_start, q.end_unix_s + 1);
  ASSERT_EQ(t.size(), 86401u);
  EXPECT_EQ(t.format, "prometheus");
  EXPECT_EQ(t.gpu.uuid, "GPU-abc");
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(t.start_unix_s, 1'000'000);
  EXPECT_DOUBLE_EQ(t.time_s[12345], 12345);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[12345], (1'000'000 + 12345) % 100);
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[10]));  // "NaN" -> missing
  EXPECT_EQ(t.find(Metric::kGpuUtil)->values[11], 50);
}

// Stored scrapes for the raw tests: every ~100 ms with up to 22 ms of jitter, k = 0, 1, …;
// power = k; util missing at every 7th scrape; scrape 6000 sits exactly on a window border.
constexpr double kRawStart = 1'000'000;
double raw_scrape_time(long long k) {
  if (k % 6000 == 0) return kRawStart + static_cast<double>(k) / 10;
  return kRawStart + static_cast<double>(k) / 10 + static_cast<double>((k * 37) % 23) / 1000;
}

// Answers "SELECTOR[Ws]" at `time` with the scrapes in [time − W, time] (both ends, as
// Prometheus 2 selects), in milliseconds as Prometheus stores them.
void raw_answer(const httplib::Request& req, httplib::Response& res) {
  ASSERT_EQ(req.path, "/api/v1/query");
  const std::string query = req.get_param_value("query");
  const auto open = query.rfind('[');
  ASSERT_NE(open, std::string::npos) << query;
  const double window = std::stod(query.substr(open + 1));
  const double at = std::stod(req.get_param_value("time"));
  std::string power, util;
  for (long long k = 0; k < 20000; ++k) {
    const double t = std::round(raw_scrape_time(k) * 1000) / 1000;
    if (t < at - window - 1e-9 || t > at + 1e-9) continue;
    // k / 10 W: the sample's number, under the 5 kW limit of a possible reading
    power += (power.empty() ? "" : ",") + fmt::format("[{:.3f},\"{}\"]", t, static_cast<double>(k) / 10);
    if (k % 7 != 0) util += (util.empty() ? "" : ",") + fmt::format("[{:.3f},\"50\"]", t);
  }
  const std::string labels = R"("gpu":"0","UUID":"GPU-abc","modelName":"NVIDIA H200","Hostname":"n1")";
  res.set_content(fmt::format(R"({{"status":"success","data":{{"resultType":"matrix","result":[)"
                              R"({{"metric":{{"__name__":"DCGM_FI_DEV_POWER_USAGE",{}}},"values":[{}]}},)"
                              R"({{"metric":{{"__name__":"DCGM_FI_DEV_GPU_UTIL",{}}},"values":[{}]}}]}}}})",
                              labels, power, labels, util),
                  "application/json");
}

TEST(Prometheus, RawSamplesKeepTheirScrapeTimestamps) {
  FakeApi api(raw_answer);
  PrometheusQuery q;
  q.url = api.url();
  q.uuid = "GPU-abc";
  q.raw_samples = true;
  q.start_unix_s = kRawStart;
  q.end_unix_s = kRawStart + 1500;  // windows of 600 s: at +600, +1200, +1500
  const Trace t = fetch_prometheus_trace(q);
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(api.paths()[i], "/api/v1/query");
    EXPECT_DOUBLE_EQ(std::stod(param(requests[i], "time")), kRawStart + std::min(1500.0, 600.0 * (i + 1)));
    const std::string query = param(requests[i], "query");
    EXPECT_NE(query.find(R"(UUID="GPU-abc")"), std::string::npos) << query;
    EXPECT_TRUE(query.ends_with("\"}[600s]")) << query;
  }
  // Scrapes 0 … 14999 lie in the range (15000 is 10 ms past its end); the one on the border at
  // +600 came back twice and is kept once.
  ASSERT_EQ(t.size(), 15000u);
  EXPECT_DOUBLE_EQ(t.start_unix_s, kRawStart);
  const Channel* power = t.find(Metric::kPower);
  const Channel* util = t.find(Metric::kGpuUtil);
  ASSERT_NE(power, nullptr);
  ASSERT_NE(util, nullptr);
  for (long long k : {1LL, 5999LL, 6000LL, 6001LL, 12345LL, 14999LL}) {
    EXPECT_NEAR(t.time_s[k], raw_scrape_time(k) - kRawStart, 1e-6) << k;  // the scrape's own time, not a grid
    EXPECT_EQ(power->values[k], static_cast<double>(k) / 10);
    EXPECT_EQ(std::isnan(util->values[k]), k % 7 == 0) << k;
  }
  EXPECT_EQ(t.diagnostics.gaps, 0u);

  // Expressions cannot be read raw: refused before any request, naming the way out.
  PrometheusQuery named = q;
  named.uuid.clear();
  named.queries = {"power_w=avg_over_time(DCGM_FI_DEV_POWER_USAGE[5s])"};
  try {
    (void)fetch_prometheus_trace(named);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--step"), std::string::npos) << e.what();
  }
  EXPECT_EQ(api.requests().size(), 3u);
}

TEST(Prometheus, NamedExpressionsAndUnnamedOnes) {
  FakeApi api([](const httplib::Request& req, httplib::Response& res) {
    const double start = std::stod(req.get_param_value("start"));
    res.set_content(fmt::format(R"({{"status":"success","data":{{"resultType":"matrix","result":[)"
                                R"({{"metric":{{"gpu":"0"}},"values":[[{},"7"]]}}]}}}})",
                                start),
                    "application/json");
  });
  PrometheusQuery q{.url = api.url(), .queries = {"power_w=avg(DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"})"},
                    .start_unix_s = 100, .end_unix_s = 110};
  const Trace t = fetch_prometheus_trace(q);
  ASSERT_NE(t.find(Metric::kPower), nullptr);
  EXPECT_EQ(t.find(Metric::kPower)->values[0], 7);
  EXPECT_EQ(param(api.requests()[0], "query"), "avg(DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"})");

  q.queries = {"avg(DCGM_FI_DEV_POWER_USAGE)"};
  try {
    (void)fetch_prometheus_trace(q);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("TAG=EXPR"), std::string::npos) << e.what();
    // Found by fuzzing (tests/fuzz/fuzz_prometheus): this one error did not name the server.
    EXPECT_NE(std::string(e.what()).find(api.url()), std::string::npos) << e.what();
  }
}

PrometheusQuery simple(const std::string& url) {
  return PrometheusQuery{.url = url, .queries = {"DCGM_FI_DEV_GPU_UTIL"}, .start_unix_s = 100, .end_unix_s = 200,
                         .timeout = std::chrono::milliseconds(500)};
}

void expect_error(const PrometheusQuery& q, ErrorCode code, const std::string& needle) {
  try {
    (void)fetch_prometheus_trace(q);
    FAIL() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(q.url), std::string::npos) << "the error must name the URL: " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Impossible readings (util 250 %, negative power) are missing, counted and warned with the
// server, the sample and its time, as the file readers do (until 2026-12-01 read as given).
TEST(Prometheus, ImpossibleReadingsAreMissingAndWarned) {
  FakeApi api([](const httplib::Request& req, httplib::Response& res) {
    const double start = std::stod(req.get_param_value("start"));
    const std::string labels = R"("gpu":"0","UUID":"GPU-abc")";
    res.set_content(fmt::format(R"({{"status":"success","data":{{"resultType":"matrix","result":[)"
                                R"({{"metric":{{"__name__":"DCGM_FI_DEV_GPU_UTIL",{}}},"values":[[{},"50"],[{},"250"],[{},"60"]]}},)"
                                R"({{"metric":{{"__name__":"DCGM_FI_DEV_POWER_USAGE",{}}},"values":[[{},"-3"],[{},"-4"],[{},"-5"]]}}]}}}})",
                                labels, start, start + 1, start + 2, labels, start, start + 1, start + 2),
                    "application/json");
  });
  PrometheusQuery q{.url = api.url(), .uuid = "GPU-abc", .start_unix_s = 1796032800, .end_unix_s = 1796032802};
  const Trace t = fetch_prometheus_trace(q);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.find(Metric::kGpuUtil)->values[0], 50);
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[1]));
  for (double v : t.find(Metric::kPower)->values) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(t.diagnostics.impossible_values, 4u);
  std::string w;
  for (const auto& line : t.diagnostics.warnings) w += line + "\n";
  EXPECT_NE(w.find(q.url + ": 1 impossible gpu_util_pct value(s) (outside 0 to 100 %) read as missing; the first at "
                           "sample 2 (2026-11-30T10:00:01.000Z): '250'"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("3 impossible power_w value(s) (outside 0 to 5000 W) read as missing; the first at sample 1 "
                   "(2026-11-30T10:00:00.000Z): '-3'; the channel power_w is missing"),
            std::string::npos)
      << w;
}

TEST(Prometheus, ServerDownNamesTheUrl) {
  // A port that was free a moment ago and on which nothing listens.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  expect_error(simple("http://127.0.0.1:" + std::to_string(port)), ErrorCode::kIo, "cannot reach");
}

TEST(Prometheus, ErrorBodyIsReported) {
  FakeApi api([](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content(R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points"})",
                    "application/json");
  });
  expect_error(simple(api.url()), ErrorCode::kRemote, "exceeded maximum resolution");
}

TEST(Prometheus, MalformedJsonIsReported) {
  FakeApi api([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":)", "application/json");
  });
  expect_error(simple(api.url()), ErrorCode::kRemote, "malformed JSON");
}

TEST(Prometheus, SlowServerTimesOut) {
  std::atomic<bool> release{false};
  FakeApi api([&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 300 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    res.set_content("{}", "application/json");
  });
  const auto started = std::chrono::steady_clock::now();
  expect_error(simple(api.url()), ErrorCode::kIo, "no answer within 0.5 s");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  release = true;
}

// user:password@ in the URL goes out as basic auth and never into a message or the trace's
// source (a trace file and a report are shared; a password in them is leaked).
TEST(Prometheus, CredentialsInTheUrlAreSentAndNeverShown) {
  std::mutex mutex;
  std::string authorization;
  FakeApi api([&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      authorization = req.get_header_value("Authorization");
    }
    grid_answer(req, res);
  });
  const std::string host = api.url().substr(std::string("http://").size());
  PrometheusQuery q = simple("http://reader:s%3Acret@" + host);
  const Trace trace = fetch_prometheus_trace(q);
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(authorization, "Basic cmVhZGVyOnM6Y3JldA==");  // base64 of reader:s:cret
  }
  EXPECT_EQ(trace.source, api.url());
  q.queries = {"no_such_metric"};
  FakeApi empty([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "application/json");
  });
  q.url = "http://reader:s%3Acret@" + empty.url().substr(std::string("http://").size());
  try {
    (void)fetch_prometheus_trace(q);
    FAIL() << "expected no series";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(empty.url()), std::string::npos) << e.what();
  }
}

// A proxy's HTML error page with terminal escapes: named by status, its bytes made printable.
TEST(Prometheus, NonJsonErrorBodiesArePrintable) {
  FakeApi api([](const httplib::Request&, httplib::Response& res) {
    res.status = 502;
    res.set_content("<html>\x1b[2J bad gateway</html>", "text/html");
  });
  try {
    (void)fetch_prometheus_trace(simple(api.url()));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kRemote) << what;
    EXPECT_NE(what.find("HTTP 502: <html>\\x1b[2J bad gateway"), std::string::npos) << what;
    EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
  }
}

TEST(Prometheus, NoMatchingSeriesIsNotFound) {
  FakeApi api([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "application/json");
  });
  expect_error(simple(api.url()), ErrorCode::kNotFound, "no series matched");
}

TEST(Prometheus, ParsesValuesAndRefusesOtherShapes) {
  const auto series = parse_query_range_response(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},"values":[[1.5,"NaN"],[2.5,"+Inf"],[3.5,"4.25"]]}]}})",
      "http://p");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].labels.at("__name__"), "x");
  EXPECT_TRUE(std::isnan(series[0].points[0].second));
  EXPECT_TRUE(std::isnan(series[0].points[1].second));
  EXPECT_DOUBLE_EQ(series[0].points[2].first, 3.5);
  EXPECT_DOUBLE_EQ(series[0].points[2].second, 4.25);
  EXPECT_THROW((void)parse_query_range_response(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "u"),
               Error);
  EXPECT_THROW((void)parse_query_range_response(R"([1,2])", "u"), Error);
}

TEST(Prometheus, BadArgumentsAreRefusedBeforeAnyRequest) {
  PrometheusQuery q = simple("ftp://x");
  EXPECT_THROW((void)fetch_prometheus_trace(q), Error);
  q = simple("http://127.0.0.1:1");
  q.end_unix_s = q.start_unix_s;
  try {
    (void)fetch_prometheus_trace(q);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  q = simple("http://127.0.0.1:1");
  q.queries.clear();
  EXPECT_THROW((void)fetch_prometheus_trace(q), Error);
  // A range that would need more points than any trace does is refused before allocating.
  for (double step : {1e-300, 1e-6}) {
    q = simple("http://127.0.0.1:1");
    q.end_unix_s = q.start_unix_s + 1e6;
    q.step_s = step;
    try {
      (void)fetch_prometheus_trace(q);
      FAIL() << step;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--step"), std::string::npos) << e.what();
    }
  }
}

TEST(Prometheus, TimesAndDurations) {
  EXPECT_DOUBLE_EQ(parse_prometheus_time("1764515000.5", 0), 1764515000.5);
  EXPECT_DOUBLE_EQ(parse_prometheus_time("now", 5000), 5000);
  EXPECT_DOUBLE_EQ(parse_prometheus_time("now-15m", 5000), 4100);
  EXPECT_DOUBLE_EQ(parse_prometheus_time("1970-01-02T00:00:01.25Z", 0), 86401.25);
  EXPECT_DOUBLE_EQ(parse_prometheus_time("2026-11-30T15:00:00Z", 0), 1796050800);
  EXPECT_THROW((void)parse_prometheus_time("yesterday", 0), Error);
  EXPECT_THROW((void)parse_prometheus_time("2026-11-30T15:00:00", 0), Error);
  EXPECT_DOUBLE_EQ(parse_prometheus_duration_s("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(parse_prometheus_duration_s("2"), 2);
  EXPECT_DOUBLE_EQ(parse_prometheus_duration_s("1m"), 60);
  EXPECT_THROW((void)parse_prometheus_duration_s("fast"), Error);
}

}  // namespace
}  // namespace epochcast
