// Files of a known kind that hold no trace epochcast reads: said by name, with how to log one.
#include <fmt/format.h>

#include "trace_parser.hpp"

namespace epochcast {

using detail::starts_with_ci;

namespace {

constexpr std::string_view kLogGpu =
    "log the GPU with `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,utilization.memory,power.draw,"
    "clocks.sm,clocks.mem,memory.used --format=csv -lms 100 > gpu.csv` or `nvidia-smi dmon -s pucm -o DT`";

bool contains(std::string_view s, std::string_view w) { return s.find(w) != std::string_view::npos; }

}  // namespace

std::string TraceParser::recognise_foreign(std::string_view line) {
  if (contains(line, "NVSMI LOG"))
    return fmt::format("this is `nvidia-smi -q` output: one report of the GPU's state, not a time series; {}", kLogGpu);
  if (starts_with_ci(line, "+----") || contains(line, "NVIDIA-SMI"))
    return fmt::format("this is nvidia-smi's summary table: one snapshot, not a time series; {}", kLogGpu);
  if (contains(line, "pid") && (contains(line, "process_name") || contains(line, "used_gpu_memory") ||
                                contains(line, "used_memory")))
    return fmt::format("this is `nvidia-smi --query-compute-apps` output: processes and their memory, no "
                       "utilisation, power or clocks of the GPU; {}",
                       kLogGpu);
  if (starts_with_ci(line, "\"Dstat") || starts_with_ci(line, "Dstat"))
    return "this is a dstat CSV: host metrics only (CPU, memory), no GPU metrics; give it with --host after "
           "converting it to timestamp,cpu_util_pct,mem_used_mib, beside a GPU log";
  if (starts_with_ci(line, "epoch,") || starts_with_ci(line, "\"epoch\","))
    return fmt::format("this looks like a training log (Keras CSVLogger, per-epoch losses): the job's own numbers, "
                       "no GPU metrics; pass its epoch time with --epoch-s and {}",
                       kLogGpu);
  if (line.size() >= 1 && line[0] == '[')
    return "a JSON array: epochcast reads a saved Prometheus query_range answer (an object "
           "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",…}})";
  return {};
}

}  // namespace epochcast
