// The collector's output file: canonical CSV (docs/canonical-csv.md), flushed to the kernel
// and synced at least every flush interval, so a crash or kill -9 loses at most that much
// and leaves only whole lines behind.
#pragma once

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {

class TraceFileWriter {
 public:
  // Creates (truncates) `path` and writes the header for `columns`; "-" writes to stdout.
  // Error(kIo) naming the path when it cannot be created or written.
  TraceFileWriter(std::string path, std::vector<Metric> columns, const GpuIdentity& first_gpu,
                  std::chrono::milliseconds flush_interval = std::chrono::milliseconds(1000));
  ~TraceFileWriter();  // flushes what it can, never throws
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  // Buffers one row (values indexed by Metric; only the columns are written) and flushes
  // when the interval has passed. Error(kIo) when the file cannot take the bytes (disk full).
  void append(double unix_s, const GpuIdentity& gpu, const MetricValues& values);
  // A "# text" line (errors, notes); kept in order with the rows.
  void comment(std::string_view text);
  // Writes every buffered byte and syncs the file. Error(kIo) naming the path and the cause.
  void flush();
  // flush() and close; further appends are errors.
  void close();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::uint64_t rows() const { return rows_; }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_; }
  [[nodiscard]] std::uint64_t flushes() const { return flushes_; }

 private:
  void write_all(std::string_view bytes);

  std::string path_;
  int fd_ = -1;
  bool owns_fd_ = false;
  std::vector<Metric> columns_;
  std::ostringstream buffer_;
  CanonicalCsvWriter writer_;
  std::vector<double> row_;
  std::chrono::milliseconds flush_interval_;
  std::chrono::steady_clock::time_point last_flush_;
  std::uint64_t rows_ = 0;
  std::uint64_t rows_flushed_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t flushes_ = 0;
};

}  // namespace epochcast
