// What every learner shares: the standardiser and the batch prediction default.
#include "learners.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "epochcast/core/error.hpp"

namespace epochcast {

void check_row_weights(std::span<const double> weights, std::size_t rows, const char* learner) {
  if (weights.empty()) return;
  if (weights.size() != rows)
    throw Error(ErrorCode::kInvalidArgument, std::string(learner) + ": " + std::to_string(weights.size()) +
                                                 " row weights for " + std::to_string(rows) + " rows");
  for (std::size_t i = 0; i < weights.size(); ++i)
    if (!(weights[i] > 0) || !std::isfinite(weights[i]))
      throw Error(ErrorCode::kInvalidArgument, std::string(learner) + ": row " + std::to_string(i) +
                                                   " has weight " + std::to_string(weights[i]) +
                                                   ", a row weight must be a finite number > 0");
}

bool unit_weights(std::span<const double> weights) {
  return std::all_of(weights.begin(), weights.end(), [](double w) { return w == 1.0; });
}

void Standardizer::fit(const Matrix& x, std::span<const double> weights) {
  check_row_weights(weights, x.rows, "standardizer");
  const bool weighted = !unit_weights(weights);
  mean.assign(x.cols, 0.0);
  scale.assign(x.cols, 1.0);
  for (std::size_t c = 0; c < x.cols; ++c) {
    double s = 0, ss = 0, n = 0;
    for (std::size_t i = 0; i < x.rows; ++i) {
      const double v = x.data[i * x.cols + c];
      if (!std::isfinite(v)) continue;
      // Unweighted: the sums as before weights existed (the same bits).
      if (weighted) {
        s += weights[i] * v;
        ss += weights[i] * v * v;
        n += weights[i];
      } else {
        s += v;
        ss += v * v;
        n += 1;
      }
    }
    if (n == 0) continue;
    mean[c] = s / n;
    const double var = ss / n - mean[c] * mean[c];
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
