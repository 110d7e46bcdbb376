// What every learner shares: the standardiser and the batch prediction default.
#include "learners.hpp"

#include <cmath>

#include "epochcast/core/error.hpp"

namespace epochcast {

void Standardizer::fit(const Matrix& x) {
  mean.assign(x.cols, 0.0);
  scale.assign(x.cols, 1.0);
  for (std::size_t c = 0; c < x.cols; ++c) {
    double s = 0, ss = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < x.rows; ++i) {
      const double v = x.data[i * x.cols + c];
      if (!std::isfinite(v)) continue;
      s += v;
      ss += v * v;
      ++n;
    }
    if (n == 0) continue;
    mean[c] = s / static_cast<double>(n);
    const double var = ss / static_cast<double>(n) - mean[c] * mean[c];
    scale[c] = var > 1e-12 ? std::sqrt(var) : 1.0;
  }
}

void Standardizer::apply(std::span<const double> in, std::span<double> out) const {
  for (std::size_t c = 0; c < mean.size(); ++c)
    out[c] = std::isfinite(in[c]) ? (in[c] - mean[c]) / scale[c] : 0.0;
}

nlohmann::json Standardizer::to_json() const { return {{"mean", mean}, {"scale", scale}}; }

void Standardizer::from_json(const nlohmann::json& j) {
  mean = j.at("mean").get<std::vector<double>>();
  scale = j.at("scale").get<std::vector<double>>();
  if (mean.size() != scale.size()) throw Error(ErrorCode::kParse, "scaler: size mismatch");
  for (double s : scale)
    if (!(s > 0) || !std::isfinite(s)) throw Error(ErrorCode::kParse, "scaler: bad scale");
}

void Learner::predict_many(const Matrix& x, std::span<double> out) const {
  for (std::size_t i = 0; i < x.rows; ++i) out[i] = predict(x.row(i));
}

}  // namespace epochcast
