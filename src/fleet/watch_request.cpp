// WatchRequest's checks; errors name the field (the CLI words them as flags).
#include <fmt/format.h>

#include <cmath>

#include "epochcast/collect/prometheus.hpp"
#include "epochcast/fleet/watch.hpp"
#include "job_key.hpp"

namespace epochcast::fleet {

namespace {
// A pass takes at least a round trip per query: under a second between passes only loads the
// endpoint. A day's lookback at 1 s is 86,400 samples per series, the most a job trace keeps.
constexpr double kMinEveryS = 1;
constexpr double kMaxLookbackS = 31 * 86400.0;

void check_range(const char* field, double v, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw FieldError(field, fmt::format("must be {} to {}, got {}", lo, hi, v));
}
}  // namespace

void WatchRequest::validate() const {
  if (url.empty()) throw FieldError("url", "is needed (the PromQL endpoint, e.g. http://prometheus:9090)");
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw FieldError("url", fmt::format("must start with http:// or https://, got '{}'", strip_credentials(url)));
  check_range("every_s", every_s, kMinEveryS, 86400);
  check_range("lookback_s", lookback_s, 60, kMaxLookbackS);
  check_range("settle_s", settle_s, 0, 3600);
  check_range("timeout_s", timeout_s, 0.1, 3600);
  check_range("min_confidence", min_confidence, 0, 1);
  if (gpus_per_query < 1 || gpus_per_query > 10000)
    throw FieldError("gpus_per_query", fmt::format("must be 1 to 10000, got {}", gpus_per_query));
  if (samples_per_query < 1000 || samples_per_query > 50000000)
    throw FieldError("samples_per_query", fmt::format("must be 1000 to 50000000, got {}", samples_per_query));
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    throw FieldError("shard", fmt::format("must be i/n with 1 <= i <= n, got {}/{}", shard.index, shard.count));
  // The selector goes inside {...}: braces would end it early and change the query.
  if (selector.find_first_of("{}") != std::string::npos)
    throw FieldError("selector", fmt::format("takes label matchers only, without braces (namespace=\"ml\"), got '{}'",
                                             selector));
  static_cast<void>(parse_job_key_template(job_key));
}

double parse_duration_s(std::string_view text, std::string_view field) {
  try {
    return parse_prometheus_duration_s(text);
  } catch (const Error&) {
    throw FieldError(std::string(field), fmt::format("must be a duration such as 60s, 5m, 24h or 500ms, got '{}'", text));
  }
}

}  // namespace epochcast::fleet
