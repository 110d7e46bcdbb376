#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "epochcast/core/error.hpp"
#include "epochcast/core/text.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

// Quotes a CSV cell that holds a comma or a quote (GPU names are free text).
void append_cell(std::string& line, std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) {
    line.append(text);
    return;
  }
  line += '"';
  for (char c : text)
    if (c != '"' && c != '\n') line += c;
  line += '"';
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

}  // namespace

std::string format_iso8601_utc(double unix_s) {
  if (!std::isfinite(unix_s)) return {};
  const auto ms_total = static_cast<std::int64_t>(std::llround(unix_s * 1000.0));
  const std::int64_t secs = floor_div(ms_total, 1000);
  const auto ms = static_cast<int>(ms_total - secs * 1000);
  const std::int64_t days = floor_div(secs, 86400);
  const auto sod = static_cast<int>(secs - days * 86400);
  const text::CivilDate date = text::civil_from_days(days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", date.year, date.month, date.day, sod / 3600,
                     sod / 60 % 60, sod % 60, ms);
}

CanonicalCsvWriter::CanonicalCsvWriter(std::ostream& out, std::vector<Metric> columns, bool with_identity)
    : out_(out), columns_(std::move(columns)), with_identity_(with_identity) {}

void CanonicalCsvWriter::write_header(const GpuIdentity& gpu) {
  line_ = "# epochcast-trace v1\n";
  line_ += fmt::format("# gpu_index={} gpu_name={} gpu_uuid={}\n", gpu.index, gpu.name, gpu.uuid);
  line_ += "timestamp";
  if (with_identity_) line_ += ",gpu_index,gpu_uuid,gpu_name";
  for (Metric m : columns_) {
    line_ += ',';
    line_ += info(m).tag;
  }
  line_ += '\n';
  out_ << line_;
  if (!out_) throw Error(ErrorCode::kIo, "cannot write the trace header");
}

void CanonicalCsvWriter::write_row(double unix_s, const GpuIdentity& gpu, std::span<const double> values) {
  if (values.size() != columns_.size())
    throw Error(ErrorCode::kInternal,
                fmt::format("canonical row has {} values for {} columns", values.size(), columns_.size()));
  line_ = format_iso8601_utc(unix_s);
  if (with_identity_) {
    line_ += fmt::format(",{},", gpu.index);
    append_cell(line_, gpu.uuid);
    line_ += ',';
    append_cell(line_, gpu.name);
  }
  for (double v : values) {
    line_ += ',';
    if (std::isfinite(v)) fmt::format_to(std::back_inserter(line_), "{}", v);
  }
  line_ += '\n';
  out_ << line_;
  if (!out_) throw Error(ErrorCode::kIo, "cannot write a trace row");
}

void write_canonical_csv(const Trace& trace, std::ostream& out) {
  std::vector<Metric> columns;
  for (const auto& c : trace.channels) columns.push_back(c.metric);
  CanonicalCsvWriter writer(out, columns, true);
  writer.write_header(trace.gpu);
  std::vector<double> row(columns.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    for (std::size_t c = 0; c < columns.size(); ++c) row[c] = trace.channels[c].values[i];
    writer.write_row(trace.start_unix_s + trace.time_s[i], trace.gpu, row);
  }
}

}  // namespace epochcast
