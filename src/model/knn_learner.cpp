// k nearest neighbours, inverse-distance weighted, scanned in SSE2 blocks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string_view>

#include "epochcast/core/error.hpp"
#include "learners.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace epochcast {
namespace {

// ---- k nearest neighbours in standardised space, inverse-distance weighted. ----

class KnnLearner final : public Learner {
 public:
  explicit KnnLearner(const LearnerConfig& c) : k_(std::max(1, c.knn_k)), columns_(c.knn_columns) {}
  std::string name() const override { return "knn"; }
  std::size_t columns_read() const override {
    return columns_.empty() ? 0 : *std::max_element(columns_.begin(), columns_.end()) + 1;
  }

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t) override {
    if (columns_.empty()) {
      columns_.resize(x.cols);
      std::iota(columns_.begin(), columns_.end(), 0);
    }
    const Matrix sub = select(x);
    scaler_.fit(sub);
    points_ = Matrix(sub.rows, sub.cols);
    for (std::size_t i = 0; i < sub.rows; ++i) scaler_.apply(sub.row(i), points_.row(i));
    y_.assign(y.begin(), y.end());
    transpose();
  }

  double predict(std::span<const double> x) const override {
    // Scaled query on the stack; distances to 8 points at a time from the blocked copy, one
    // dimension after another in vector registers (each point's sum keeps the order 0..d-1,
    // so the distances are the ones a row-by-row scan computes).
    constexpr std::size_t kMaxDims = 64;
    const std::size_t dims = columns_.size(), n = points_.rows;
    double z_buf[kMaxDims];
    std::vector<double> z_heap;
    double* z = z_buf;
    if (dims > kMaxDims) {
      z_heap.resize(dims);
      z = z_heap.data();
    }
    for (std::size_t c = 0; c < dims; ++c) {
      const double v = x[columns_[c]];
      z[c] = std::isfinite(v) ? (v - scaler_.mean[c]) / scaler_.scale[c] : 0.0;
    }
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(k_), n);
    // The k smallest (distance², index), ascending; ties keep the earlier point first.
    std::pair<double, std::size_t> best_buf[16];
    std::vector<std::pair<double, std::size_t>> best_heap;
    std::pair<double, std::size_t>* best = best_buf;
    if (k > std::size(best_buf)) {
      best_heap.resize(k);
      best = best_heap.data();
    }
    std::size_t found = 0;
    double bound = std::numeric_limits<double>::infinity();
    const V2* block = blocks_.data();
    for (std::size_t start = 0; start < n; start += kLanes, block += kVectors * dims) {
      V2 a0 = {0, 0}, a1 = {0, 0}, a2 = {0, 0}, a3 = {0, 0};
      for (std::size_t c = 0; c < dims; ++c) {
        const V2 zc = {z[c], z[c]};
        const V2* p = block + kVectors * c;
        const V2 d0 = p[0] - zc, d1 = p[1] - zc, d2 = p[2] - zc, d3 = p[3] - zc;
        a0 += d0 * d0;
        a1 += d1 * d1;
        a2 += d2 * d2;
        a3 += d3 * d3;
      }
      double d2[kLanes];
      std::memcpy(d2, &a0, sizeof a0);
      std::memcpy(d2 + 2, &a1, sizeof a1);
      std::memcpy(d2 + 4, &a2, sizeof a2);
      std::memcpy(d2 + 6, &a3, sizeof a3);
      const std::size_t m = std::min(kLanes, n - start);
      for (std::size_t i = 0; i < m; ++i) {
        if (!(d2[i] < bound) && found == k) continue;
        std::size_t pos = found < k ? found++ : k - 1;
        while (pos > 0 && best[pos - 1].first > d2[i]) {
          best[pos] = best[pos - 1];
          --pos;
        }
        best[pos] = {d2[i], start + i};
        if (found == k) bound = best[k - 1].first;
      }
    }
    double wsum = 0, sum = 0;
    for (std::size_t j = 0; j < found; ++j) {
      const double w = 1.0 / (std::sqrt(best[j].first) + 1e-6);
      wsum += w;
      sum += w * y_[best[j].second];
    }
    return wsum > 0 ? sum / wsum : 0.0;
  }

  nlohmann::json to_json() const override {
    return {{"k", k_}, {"columns", columns_}, {"scaler", scaler_.to_json()}, {"rows", points_.rows},
            {"cols", points_.cols}, {"points", points_.data}, {"y", y_}};
  }
  void from_json(const nlohmann::json& j) override {
    k_ = json_integer<int>(j.at("k"));
    columns_ = json_integers<std::size_t>(j.at("columns"));
    scaler_.from_json(j.at("scaler"));
    points_.rows = json_integer<std::size_t>(j.at("rows"));
    points_.cols = json_integer<std::size_t>(j.at("cols"));
    points_.data = j.at("points").get<std::vector<double>>();
    y_ = j.at("y").get<std::vector<double>>();
    if (k_ < 1 || points_.data.size() != points_.rows * points_.cols || y_.size() != points_.rows ||
        scaler_.mean.size() != points_.cols || columns_.size() != points_.cols)
      throw Error(ErrorCode::kParse, "knn state: inconsistent sizes");
    transpose();
  }

 private:
  // 8 points a block, dimension-major inside it: [dim 0: p0..p7][dim 1: p0..p7]...; the last
  // block padded with zeros (never selected).
  // (GCC/Clang vector extension, 2 doubles: one SSE2 register, the x86-64 baseline.)
  using V2 = double __attribute__((vector_size(16)));
  static constexpr std::size_t kLanes = 8, kVectors = kLanes / 2;
  void transpose() {
    const std::size_t n = points_.rows, dims = points_.cols, nb = (n + kLanes - 1) / kLanes;
    blocks_.assign(nb * kVectors * dims, V2{0, 0});
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < dims; ++c) {
        const std::size_t lane = i % kLanes;
        blocks_[(i / kLanes) * kVectors * dims + kVectors * c + lane / 2][lane % 2] = points_.data[i * dims + c];
      }
  }

  Matrix select(const Matrix& x) const {
    Matrix out(x.rows, columns_.size());
    for (std::size_t i = 0; i < x.rows; ++i)
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        if (columns_[c] >= x.cols) throw Error(ErrorCode::kInternal, "knn column out of range");
        out.data[i * columns_.size() + c] = x.data[i * x.cols + columns_[c]];
      }
    return out;
  }

  int k_;
  std::vector<std::size_t> columns_;
  Standardizer scaler_;
  Matrix points_;               // standardised, row-major (the model file's layout)
  std::vector<V2> blocks_;       // the same, blocked for the scan
  std::vector<double> y_;
};

}  // namespace

std::unique_ptr<Learner> make_knn_learner(const LearnerConfig& config) { return std::make_unique<KnnLearner>(config); }

}  // namespace epochcast
