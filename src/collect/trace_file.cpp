#include "epochcast/collect/trace_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <fmt/format.h>

#include "epochcast/core/error.hpp"
#include "epochcast/collect/helper_thread.hpp"

namespace epochcast {

namespace {

std::string cause(int error_number) {
  if (error_number == ENOSPC) return "no space left on the device (disk full)";
  if (error_number == EDQUOT) return "disk quota exceeded";
  return std::strerror(error_number);
}

}  // namespace

TraceFileWriter::TraceFileWriter(std::string path, std::vector<Metric> columns, const GpuIdentity& first_gpu,
                                 std::chrono::milliseconds flush_interval)
    : path_(std::move(path)),
      columns_(std::move(columns)),
      writer_(buffer_, columns_, true),
      row_(columns_.size()),
      flush_interval_(flush_interval) {
  if (path_ == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrorCode::kIo, fmt::format("cannot create trace file {}: {}", path_, cause(errno)));
    owns_fd_ = true;
  }
  writer_.write_header(first_gpu);
  last_flush_ = std::chrono::steady_clock::now();
  try {
    flush();  // the header reaches the disk at once: an empty run still leaves a valid file
  } catch (...) {
    if (owns_fd_) ::close(fd_);
    fd_ = -1;
    throw;
  }
}

TraceFileWriter::~TraceFileWriter() {
  try {
    close();
  } catch (...) {
    // Destructors must not throw; close() is called explicitly where errors matter.
  }
}

void TraceFileWriter::throw_if_failed() {
  if (!failed_) return;
  std::lock_guard lock(buffer_mutex_);
  throw *failure_;
}

void TraceFileWriter::flush_in_background() {
  if (fd_ < 0 || flusher_.joinable()) return;
  flusher_ = detail::helper_thread([this] { flush_loop(); });
}

void TraceFileWriter::flush_loop() {
  std::unique_lock lock(buffer_mutex_);
  // Flushes start on a fixed grid, so rows wait at most one interval however long a sync takes.
  auto next = std::chrono::steady_clock::now() + flush_interval_;
  while (!stop_flusher_) {
    wake_.wait_until(lock, next, [&] { return stop_flusher_; });
    if (stop_flusher_) break;
    next = std::max(next + flush_interval_, std::chrono::steady_clock::now());
    lock.unlock();
    try {
      flush();
    } catch (const Error& e) {
      lock.lock();
      if (!failed_) {  // a sync error; write errors are recorded where they are counted
        failure_ = e;
        failed_ = true;
      }
      return;
    }
    lock.lock();
  }
}

void TraceFileWriter::append(double unix_s, const GpuIdentity& gpu, const MetricValues& values) {
  if (fd_ < 0) throw Error(ErrorCode::kInternal, fmt::format("trace file {} is closed", path_));
  {
    std::lock_guard lock(buffer_mutex_);
    // Checked under the lock the failure is recorded under: no row is taken after the count of
    // rows lost was made.
    if (failed_) throw *failure_;
    for (std::size_t c = 0; c < columns_.size(); ++c) row_[c] = values[static_cast<std::size_t>(columns_[c])];
    writer_.write_row(unix_s, gpu, row_);
    row_ends_.push_back(static_cast<std::size_t>(buffer_.tellp()));
    ++rows_;
  }
  if (!flusher_.joinable() && std::chrono::steady_clock::now() - last_flush_ >= flush_interval_) flush();
}

void TraceFileWriter::comment(std::string_view text) {
  std::string line = "# ";
  for (char c : text) line += c == '\n' ? ' ' : c;
  std::lock_guard lock(buffer_mutex_);
  buffer_ << line << '\n';
}

void TraceFileWriter::write_all(std::string_view bytes, const std::vector<std::size_t>& row_ends) {
  const std::size_t size = bytes.size();
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error_number = errno;
      // Rows of this buffer wholly written stay in the file (its last line may be a partial
      // row, which the readers drop); every other accepted row is lost, including those the
      // sampler added to the next buffer meanwhile. Counted and recorded under the buffer lock,
      // so append() takes no row after the count.
      const std::size_t written = size - bytes.size();
      const auto on_disk = static_cast<std::uint64_t>(std::upper_bound(row_ends.begin(), row_ends.end(), written) -
                                                      row_ends.begin());
      std::lock_guard lock(buffer_mutex_);
      rows_flushed_ += on_disk;
      const Error e(ErrorCode::kIo, fmt::format("writing trace file {}: {}; {} row(s) not written", path_,
                                                cause(error_number), rows_ - rows_flushed_));
      failure_ = e;
      failed_ = true;
      throw e;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
    bytes_written_ += static_cast<std::uint64_t>(n);
  }
}

void TraceFileWriter::flush() {
  if (fd_ < 0) return;
  throw_if_failed();
  // The io lock first: buffers taken in order are written in order.
  std::lock_guard io(io_mutex_);
  const auto started = std::chrono::steady_clock::now();
  last_flush_ = started;
  std::string pending;
  std::vector<std::size_t> row_ends;
  {
    std::lock_guard lock(buffer_mutex_);
    pending = buffer_.str();
    buffer_.str(std::string());
    row_ends.swap(row_ends_);
  }
  write_all(pending, row_ends);
  // Sync so that a crash of the machine, not only of us, loses at most one interval.
  // Pipes and terminals cannot be synced (EINVAL/EROFS): nothing to lose there.
  if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS)
    throw Error(ErrorCode::kIo, fmt::format("syncing trace file {}: {}", path_, cause(errno)));
  {
    std::lock_guard lock(buffer_mutex_);
    rows_flushed_ += row_ends.size();
  }
  ++flushes_;
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (took_s > max_flush_s_) max_flush_s_ = took_s;
}

void TraceFileWriter::close() {
  if (flusher_.joinable()) {
    {
      std::lock_guard lock(buffer_mutex_);
      stop_flusher_ = true;
    }
    wake_.notify_all();
    flusher_.join();
  }
  if (fd_ < 0) return;
  try {
    flush();
  } catch (...) {
    if (owns_fd_) ::close(fd_);
    fd_ = -1;
    throw;
  }
  if (owns_fd_ && ::close(fd_) != 0) {
    const int e = errno;
    fd_ = -1;
    throw Error(ErrorCode::kIo, fmt::format("closing trace file {}: {}", path_, cause(e)));
  }
  fd_ = -1;
}

}  // namespace epochcast
