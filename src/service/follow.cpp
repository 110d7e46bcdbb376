#include "epochcast/service/follow.hpp"

#include "service_impl.hpp"

namespace epochcast {

struct DetectionFollower::Impl {
  IncrementalTraceReader reader;
  Detector detector;
  std::size_t fed_rows = 0;
};

namespace {

ReadOptions follow_read_options(const TraceRequest& read) {
  ReadOptions options = to_read_options(read);
  options.host_path.clear();  // a host log is not merged while following
  options.progress = nullptr;
  return options;
}

}  // namespace

DetectionFollower::DetectionFollower(std::string name, const TraceRequest& read, const DetectRequest& detect)
    : impl_(std::make_unique<Impl>(
          Impl{IncrementalTraceReader(std::move(name), follow_read_options(read)), Detector(to_detect_options(detect))})) {}

DetectionFollower::~DetectionFollower() = default;
DetectionFollower::DetectionFollower(DetectionFollower&&) noexcept = default;
DetectionFollower& DetectionFollower::operator=(DetectionFollower&&) noexcept = default;

std::size_t DetectionFollower::feed(std::string_view bytes) {
  const std::size_t rows = impl_->reader.feed(bytes);
  impl_->fed_rows += rows;
  return rows;
}

bool DetectionFollower::update() {
  if (impl_->fed_rows == 0 || impl_->reader.rows() <= impl_->detector.trace().size()) return false;
  return impl_->detector.push(impl_->reader.trace());
}

bool DetectionFollower::flush() { return impl_->detector.trace().size() > 0 && impl_->detector.flush(); }

std::size_t DetectionFollower::rows() const { return impl_->reader.rows(); }
const Trace& DetectionFollower::trace() const { return impl_->detector.trace(); }
const Segmentation& DetectionFollower::current() const { return impl_->detector.current(); }

}  // namespace epochcast
