#include "eval/trace_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <sstream>

#include "epochcast/core/metric.hpp"
#include "epochcast/trace/read.hpp"
#include "eval/variants.hpp"

namespace epochcast::eval {
namespace {

// "YYYY/MM/DD HH:MM:SS.mmm" (sep '/') or "YYYY-MM-DD …" in local time, as nvidia-smi and `ts` print it.
std::string local_stamp(double unix_s, char sep) {
  const auto ms_total = static_cast<std::int64_t>(std::llround(unix_s * 1000.0));
  const auto secs = static_cast<std::time_t>(ms_total / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  return fmt::format("{:04}{}{:02}{}{:02} {:02}:{:02}:{:02}.{:03}", tm.tm_year + 1900, sep, tm.tm_mon + 1, sep,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms_total % 1000));
}

std::string num(double x) { return fmt::format("{:.6g}", x); }

std::string labels(const Trace& t) {
  return fmt::format("gpu=\"{}\",UUID=\"{}\",modelName=\"{}\"", t.gpu.index < 0 ? 0 : t.gpu.index,
                     t.gpu.uuid.empty() ? "GPU-00000000-0000-0000-0000-000000000000" : t.gpu.uuid,
                     t.gpu.name.empty() ? "NVIDIA H200" : t.gpu.name);
}

std::vector<const Channel*> dcgm_channels(const Trace& t) {
  std::vector<const Channel*> out;
  for (const auto& c : t.channels)
    if (!info(c.metric).dcgm_name.empty() && !info(c.metric).host) out.push_back(&c);
  return out;
}

std::string smi_csv(const Trace& t) {
  struct Col {
    const Channel* c;
    std::string unit;  // value suffix, "" for none
  };
  std::vector<Col> cols;
  for (const auto& c : t.channels) {
    const auto& m = info(c.metric);
    if (m.host || m.smi_name.empty()) continue;
    if (c.metric == Metric::kPstate || m.unit == "" || m.unit == "C") cols.push_back({&c, ""});
    else if (m.unit == "%" || m.unit == "W" || m.unit == "MHz" || m.unit == "MiB") cols.push_back({&c, std::string(m.unit)});
  }
  std::string s = "timestamp, index, name";
  for (const auto& col : cols)
    s += fmt::format(", {}{}", info(col.c->metric).smi_name, col.unit.empty() ? "" : " [" + col.unit + "]");
  s += '\n';
  const std::string name = t.gpu.name.empty() ? "NVIDIA H200" : t.gpu.name;
  for (std::size_t i = 0; i < t.size(); ++i) {
    s += fmt::format("{}, {}, {}", local_stamp(t.start_unix_s + t.time_s[i], '/'), t.gpu.index < 0 ? 0 : t.gpu.index, name);
    for (const auto& col : cols) {
      const double x = col.c->values[i];
      if (std::isnan(x)) s += ", [N/A]";
      else if (col.c->metric == Metric::kPstate) s += fmt::format(", P{}", std::lround(x));
      else s += fmt::format(", {}{}", num(x), col.unit.empty() ? "" : " " + col.unit);
    }
    s += '\n';
  }
  return s;
}

std::string exposition(const Trace& t) {
  const auto cols = dcgm_channels(t);
  const std::string lab = labels(t);
  std::string s;
  for (std::size_t i = 0; i < t.size(); ++i) {
    s += fmt::format("{:.3f}\n", t.start_unix_s + t.time_s[i]);
    for (const auto* c : cols) {
      const auto name = info(c->metric).dcgm_name;
      s += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{{{}}} {}\n", name, info(c->metric).tag, name, name, lab,
                       std::isnan(c->values[i]) ? std::string("NaN") : num(c->values[i]));
    }
  }
  return s;
}

std::string query_range(const Trace& t) {
  const auto cols = dcgm_channels(t);
  std::string s = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (std::size_t k = 0; k < cols.size(); ++k) {
    s += fmt::format(R"({}{{"metric":{{"__name__":"{}","gpu":"{}","UUID":"{}","modelName":"{}"}},"values":[)",
                     k ? "," : "", info(cols[k]->metric).dcgm_name, t.gpu.index < 0 ? 0 : t.gpu.index, t.gpu.uuid,
                     t.gpu.name.empty() ? "NVIDIA H200" : t.gpu.name);
    bool first = true;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double x = cols[k]->values[i];
      if (std::isnan(x)) continue;  // Prometheus has no sample there
      s += fmt::format(R"({}[{:.3f},"{}"])", first ? "" : ",", t.start_unix_s + t.time_s[i], num(x));
      first = false;
    }
    s += "]}";
  }
  s += "]}}\n";
  return s;
}

std::string dcgm_csv(const Trace& t) {
  const auto cols = dcgm_channels(t);
  std::string s = "timestamp,gpu,UUID,modelName";
  for (const auto* c : cols) s += fmt::format(",{}", info(c->metric).dcgm_name);
  s += '\n';
  for (std::size_t i = 0; i < t.size(); ++i) {
    s += fmt::format("{},{},{},{}", format_iso8601_utc(t.start_unix_s + t.time_s[i]), t.gpu.index < 0 ? 0 : t.gpu.index,
                     t.gpu.uuid, t.gpu.name.empty() ? "NVIDIA H200" : t.gpu.name);
    for (const auto* c : cols) s += "," + (std::isnan(c->values[i]) ? std::string() : num(c->values[i]));
    s += '\n';
  }
  return s;
}

// Tracker keys: the candidates are looked up through the metric table's alias functions, so the
// key and its unit factor are the table's, not spelled twice.
struct TrackerCol {
  const Channel* c;
  std::string key;
  double factor;  // source unit -> canonical
};

std::vector<TrackerCol> tracker_cols(const Trace& t, bool wandb) {
  static const char* const kWandb[] = {"gpu", "memory", "temp", "powerWatts", "smClock", "memoryClock",
                                       "graphicsClock", "memoryAllocatedBytes"};
  static const char* const kMlflow[] = {"utilization_percentage", "power_usage_watts", "memory_usage_megabytes"};
  std::vector<TrackerCol> out;
  const int gpu = t.gpu.index < 0 ? 0 : t.gpu.index;
  auto add = [&](const char* key, std::optional<SourceMetric> sm, const std::string& full) {
    if (!sm) return;
    if (const Channel* c = t.find(sm->metric)) out.push_back({c, full, sm->factor});
    (void)key;
  };
  if (wandb)
    for (const char* k : kWandb) add(k, metric_by_wandb_gpu_key(k), fmt::format("system.gpu.{}.{}", gpu, k));
  else
    for (const char* k : kMlflow) add(k, metric_by_mlflow_gpu_key(k), fmt::format("system/gpu_{}_{}", gpu, k));
  static const std::vector<const char*> kWandbHost = {"system.cpu"};
  static const std::vector<const char*> kMlflowHost = {"system/cpu_utilization_percentage",
                                                       "system/system_memory_usage_megabytes"};
  for (const char* k : wandb ? kWandbHost : kMlflowHost) add(k, metric_by_tracker_host_key(k), k);
  return out;
}

std::string wandb_csv(const Trace& t) {
  const auto cols = tracker_cols(t, true);
  std::string s;
  for (const auto& c : cols) s += c.key + ",";
  s += "_runtime,_timestamp\n";
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (const auto& c : cols) s += (std::isnan(c.c->values[i]) ? std::string() : num(c.c->values[i] / c.factor)) + ",";
    s += fmt::format("{:.3f},{:.3f}\n", t.time_s[i], t.start_unix_s + t.time_s[i]);
  }
  return s;
}

std::string mlflow_csv(const Trace& t) {
  const auto cols = tracker_cols(t, false);
  std::string s = "key,value,timestamp,step\n";
  for (const auto& c : cols)
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (std::isnan(c.c->values[i])) continue;
      s += fmt::format("{},{},{},{}\n", c.key, num(c.c->values[i] / c.factor),
                       std::llround((t.start_unix_s + t.time_s[i]) * 1000.0), i);
    }
  return s;
}

}  // namespace

const std::vector<FormatInfo>& text_formats() {
  static const std::vector<FormatInfo> v = {
      {TextFormat::kNvidiaSmiCsv, "nvidia-smi CSV", false}, {TextFormat::kCanonicalCsv, "canonical CSV", true},
      {TextFormat::kDcgmiDmon, "dcgmi dmon (stamped)", false}, {TextFormat::kExposition, "Prometheus exposition", false},
      {TextFormat::kQueryRangeJson, "query_range JSON", false}, {TextFormat::kDcgmCsv, "DCGM_FI CSV", false},
      {TextFormat::kWandbCsv, "W&B CSV", true},                 {TextFormat::kMlflowCsv, "MLflow history", true},
  };
  return v;
}

std::string write_trace_text(const Trace& t, TextFormat f) {
  switch (f) {
    case TextFormat::kNvidiaSmiCsv: return smi_csv(t);
    case TextFormat::kCanonicalCsv: {
      std::ostringstream out;
      write_canonical_csv(t, out);
      return out.str();
    }
    case TextFormat::kDcgmiDmon: {
      Trace g = t;
      std::erase_if(g.channels, [](const Channel& c) { return info(c.metric).host; });
      return testing::dmon_text(g, true);
    }
    case TextFormat::kExposition: return exposition(t);
    case TextFormat::kQueryRangeJson: return query_range(t);
    case TextFormat::kDcgmCsv: return dcgm_csv(t);
    case TextFormat::kWandbCsv: return wandb_csv(t);
    case TextFormat::kMlflowCsv: return mlflow_csv(t);
  }
  return {};
}

}  // namespace epochcast::eval
