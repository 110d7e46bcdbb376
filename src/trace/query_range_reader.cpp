// A saved Prometheus query_range answer (`curl '…/api/v1/query_range?query=…&start=…&end=…&step=…'
// > range.json`, the HTTP API v1): {"status":"success","data":{"resultType":"matrix","result":
// [{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","UUID":…,"modelName":…},"values":[[1764516173.5,"95"],…]}]}}.
// Series map to channels by __name__ through the metric table; the gpu label picks the GPU.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::kNaN;
using detail::printable;

namespace {

std::string label(const nlohmann::json& metric, const char* key) {
  const auto it = metric.find(key);
  return it != metric.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

void TraceParser::query_range_document(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // byte offset -> line and column, for the message
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    line_no_ = 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t bol = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t col = bol == std::string_view::npos ? at + 1 : at - bol;
    // nlohmann's text repeats the place ("[json.exception.parse_error.101] parse error at line 1, column 9: …")
    std::string_view why = e.what();
    if (const std::size_t c = why.find("column "); c != std::string_view::npos)
      if (const std::size_t colon = why.find(": ", c); colon != std::string_view::npos) why.remove_prefix(colon + 2);
    fail(col, "(json)", fmt::format("not valid JSON ({}); a query_range answer cut short?", printable(why, 120)));
  }
  if (!doc.is_object()) fail(1, "(json)", "a JSON document that is not an object: not a query_range answer");
  if (doc.value("status", "") == "error")
    fail(1, "status", fmt::format("the saved answer is a Prometheus error: {}: {}", doc.value("errorType", "?"),
                                  printable(doc.value("error", ""), 200)));
  const auto data = doc.find("data");
  if (doc.value("status", "") != "success" || data == doc.end() || !data->is_object())
    fail(1, "status", "not a Prometheus API answer (no \"status\":\"success\" and \"data\")");
  const std::string type = data->value("resultType", "");
  if (type == "vector" || type == "scalar")
    fail(1, "resultType",
         fmt::format("an instant query answer (resultType {}): one sample per series, no time series; save a "
                     "/api/v1/query_range answer (start, end, step) instead",
                     type));
  if (type != "matrix") fail(1, "resultType", fmt::format("resultType '{}' is not a matrix", printable(type)));
  const auto result = data->find("result");
  if (result == data->end() || !result->is_array()) fail(1, "result", "no \"result\" array");
  have_timestamps_ = true;
  std::size_t index = 0;
  for (const auto& series : *result) {
    ++index;
    const auto metric = series.find("metric");
    const auto values = series.find("values");
    if (metric == series.end() || !metric->is_object() || values == series.end() || !values->is_array())
      fail(index, "result", fmt::format("series {} lacks \"metric\" or \"values\"", index));
    const std::string name = label(*metric, "__name__");
    const auto m = metric_by_dcgm_name(name);
    if (!m) {
      const std::string shown = name.empty() ? "(an expression without __name__)" : name;
      if (std::find(ignored_names_.begin(), ignored_names_.end(), shown) == ignored_names_.end()) ignored_names_.push_back(shown);
      continue;
    }
    int gpu = -1;
    if (const std::string g = label(*metric, "gpu"); !g.empty() && (!detail::parse_int(g, gpu) || gpu < 0))
      fail(index, "gpu", fmt::format("series {}: label gpu is not a GPU index: '{}'", index, printable(g)));
    pivot_identity(gpu, label(*metric, "modelName"), label(*metric, "UUID"));
    const int slot = pivot_slot(*m, name);
    if (slot < 0) continue;
    std::size_t k = 0;
    for (const auto& point : *values) {
      ++k;
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_string())
        fail(index, name, fmt::format("series {} point {}: expected [unix_seconds, \"value\"]", index, k));
      const double t = point[0].get<double>();
      if (!(t >= 0 && t < 1e11)) fail(index, name, fmt::format("series {} point {}: not a Unix time: {}", index, k, t));
      const std::string& vs = point[1].get_ref<const std::string&>();
      double v = kNaN;
      if (vs != "NaN" && vs != "+Inf" && vs != "-Inf" && (!detail::parse_double(vs, v) || !std::isfinite(v)))
        fail(index, name, fmt::format("series {} point {}: {}", index, k, detail::bad_number(vs)));
      pivot_add(gpu, std::llround(unix_stamp(t) * 1e6), slot, v);
    }
  }
}

}  // namespace epochcast
