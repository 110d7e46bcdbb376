// A trace written in the shape each metric source writes (docs/trace-formats.md), for the
// format invariance (issue 23 item 4: the same run in every format the readers accept gives the
// same period or an abstention). Each writer puts out only what its tool can carry: the
// nvidia-smi query fields, DCGM field names, a tracker's system keys; host channels only where
// the format has them (canonical, W&B, MLflow). tests/unit/epoch/format_invariance_test.cpp
// reads each back with the real readers.
#pragma once

#include <string>
#include <vector>

#include "epochcast/trace/trace.hpp"

namespace epochcast::eval {

enum class TextFormat {
  kNvidiaSmiCsv,    // nvidia-smi --query-gpu=… --format=csv (units in the header and the values)
  kCanonicalCsv,    // write_canonical_csv
  kDcgmiDmon,       // dcgmi dmon rows stamped by `ts`
  kExposition,      // dcgm-exporter scrapes appended, a `date +%s.%N` line before each
  kQueryRangeJson,  // a saved /api/v1/query_range answer
  kDcgmCsv,         // a wide CSV of DCGM_FI_* columns
  kWandbCsv,        // W&B system metrics export
  kMlflowCsv,       // MLflow metric history
};

struct FormatInfo {
  TextFormat format;
  const char* name;        // for messages and test names
  bool carries_host;       // host CPU/memory channels survive
};
[[nodiscard]] const std::vector<FormatInfo>& text_formats();

// The trace as that tool would have written it. Values NaN are written as the tool writes a
// missing reading; times to the millisecond (local wall time where the tool writes local time).
[[nodiscard]] std::string write_trace_text(const Trace& trace, TextFormat format);

}  // namespace epochcast::eval
