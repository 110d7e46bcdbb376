// The PromQL HTTP API subset watch uses (docs/watch.md, "API subset"): POST /api/v1/series and
// POST /api/v1/query with a range selector (the stored samples at their own timestamps). Every
// request is counted; faults are Error(kIo) (unreachable, timed out) or Error(kRemote) (an error
// status, an error body, JSON that is not a matrix), naming the URL without credentials.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "epochcast/collect/prometheus.hpp"

namespace httplib {
class Client;
}

namespace epochcast::fleet {

using Labels = std::map<std::string, std::string>;

class PromClient {
 public:
  PromClient(const std::string& url, double timeout_s);
  ~PromClient();

  // The label sets of the series `match` selects with samples in [start, end].
  [[nodiscard]] std::vector<Labels> series(const std::string& match, double start_unix_s, double end_unix_s);
  // The stored samples of `selector` in (end - window, end], at their own timestamps.
  [[nodiscard]] std::vector<PrometheusSeries> samples(const std::string& selector, double end_unix_s,
                                                      double window_s);

  [[nodiscard]] std::size_t requests() const { return requests_; }
  [[nodiscard]] const std::string& display_url() const { return display_url_; }

 private:
  std::string post(const std::string& endpoint, const std::multimap<std::string, std::string>& form);

  std::string display_url_;
  std::string path_prefix_;
  double timeout_s_ = 0;
  std::unique_ptr<httplib::Client> client_;
  std::size_t requests_ = 0;
};

// A PromQL string literal: "..." with \ and " escaped.
[[nodiscard]] std::string promql_quote(const std::string& text);
// Regex metacharacters escaped, for an exact alternative inside =~"a|b".
[[nodiscard]] std::string regex_escape(const std::string& text);

}  // namespace epochcast::fleet
