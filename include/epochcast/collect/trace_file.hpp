// The collector's output file: canonical CSV (docs/canonical-csv.md), flushed to the kernel
// and synced at least every flush interval, so a crash or kill -9 loses at most that much
// and leaves only whole lines behind.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/core/error.hpp"
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

  // From now on write(2) and fdatasync run on a thread of their own, every flush interval, so
  // that a slow disk (a sync takes 4-8 ms here) never delays the caller's thread: append() only
  // formats into memory. A write error there is rethrown by the next append/comment/flush/close.
  void flush_in_background();

  // Buffers one row (values indexed by Metric; only the columns are written) and, unless
  // flushing in the background, flushes when the interval has passed. Error(kIo) when the
  // file cannot take the bytes (disk full). Callable from one thread at a time.
  void append(double unix_s, const GpuIdentity& gpu, const MetricValues& values);
  // A "# text" line (errors, notes); kept in order with the rows. Callable from any thread.
  void comment(std::string_view text);
  // Writes every buffered byte and syncs the file. Error(kIo) naming the path and the cause.
  void flush();
  // Stops the background flushing, flush() and close; further appends are errors.
  void close();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::uint64_t rows() const { return rows_; }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_; }
  [[nodiscard]] std::uint64_t flushes() const { return flushes_; }
  // The slowest write + sync so far (seconds): what the background thread keeps off the caller.
  [[nodiscard]] double max_flush_s() const { return max_flush_s_; }

 private:
  // Writes `bytes`; on failure throws naming the rows lost: every accepted row not wholly on
  // disk (`row_ends`: where each of the buffer's rows ends in `bytes`).
  void write_all(std::string_view bytes, const std::vector<std::size_t>& row_ends);
  void flush_loop();
  void throw_if_failed();

  std::string path_;
  int fd_ = -1;
  bool owns_fd_ = false;
  std::vector<Metric> columns_;
  std::mutex buffer_mutex_;  // buffer_, writer_, row_, rows_, failure_
  std::mutex io_mutex_;      // one writer of the file at a time, in buffer order
  std::ostringstream buffer_;
  std::vector<std::size_t> row_ends_;  // offset in buffer_ past each buffered row's newline
  CanonicalCsvWriter writer_;
  std::vector<double> row_;
  std::chrono::milliseconds flush_interval_;
  std::chrono::steady_clock::time_point last_flush_;
  std::atomic<std::uint64_t> rows_ = 0;
  std::uint64_t rows_flushed_ = 0;
  std::atomic<std::uint64_t> bytes_written_ = 0;
  std::atomic<std::uint64_t> flushes_ = 0;
  std::atomic<double> max_flush_s_ = 0;
  std::optional<Error> failure_;  // from the background thread
  std::atomic<bool> failed_ = false;
  std::thread flusher_;
  std::condition_variable wake_;
  bool stop_flusher_ = false;  // guarded by buffer_mutex_
};

}  // namespace epochcast
