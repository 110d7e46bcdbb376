// `detect --follow`: the bytes of a growing trace in, the detector's running estimate out.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/service/request.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

class DetectionFollower {
 public:
  // `read`: how to parse the bytes (its host log is not merged: GPU channels only).
  // Throws FieldError for a bad field of either request.
  DetectionFollower(std::string name, const TraceRequest& read, const DetectRequest& detect);
  ~DetectionFollower();
  DetectionFollower(DetectionFollower&&) noexcept;
  DetectionFollower& operator=(DetectionFollower&&) noexcept;

  // Takes the next bytes; returns the data rows the lines they completed held.
  std::size_t feed(std::string_view bytes);
  // Hands the rows read so far to the detector; true when its estimate changed.
  bool update();
  // Recomputes now (end of input); true when the estimate changed.
  bool flush();

  [[nodiscard]] std::size_t rows() const;             // data rows read
  [[nodiscard]] const Trace& trace() const;           // what the detector holds
  [[nodiscard]] const Segmentation& current() const;  // its estimate

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochcast
