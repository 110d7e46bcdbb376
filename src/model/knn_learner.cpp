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

  void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights, std::uint64_t) override {
    check_row_weights(weights, x.rows, "knn");
    if (columns_.empty()) {
      columns_.resize(x.cols);
      std::iota(columns_.begin(), columns_.end(), 0);
    }
    // A point of weight w stands for w copies of it: it fills w of the k places and its vote
    // counts w times. All 1: the unweighted scan and no weights in the model file.
    if (unit_weights(weights)) w_.clear();
    else w_.assign(weights.begin(), weights.end());
    const Matrix sub = select(x);
    scaler_.fit(sub, w_);
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
    if (!w_.empty()) return predict_weighted(z, dims, n);
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
      double d2[kLanes];
      distances(block, z, dims, d2);
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
    nlohmann::json j = {{"k", k_}, {"columns", columns_}, {"scaler", scaler_.to_json()}, {"rows", points_.rows},
                        {"cols", points_.cols}, {"points", points_.data}, {"y", y_}};
    if (!w_.empty()) j["weights"] = w_;  // only a weighted fit has them (older files: none)
    return j;
  }
  void from_json(const nlohmann::json& j) override {
    k_ = json_integer<int>(j.at("k"));
    columns_ = json_integers<std::size_t>(j.at("columns"));
    scaler_.from_json(j.at("scaler"));
    points_.rows = json_integer<std::size_t>(j.at("rows"));
    points_.cols = json_integer<std::size_t>(j.at("cols"));
    points_.data = j.at("points").get<std::vector<double>>();
    y_ = j.at("y").get<std::vector<double>>();
    w_ = j.contains("weights") ? j.at("weights").get<std::vector<double>>() : std::vector<double>{};
    if (!w_.empty() && w_.size() != y_.size())
      throw Error(ErrorCode::kParse, "knn state: " + std::to_string(w_.size()) + " weights for " +
                                         std::to_string(y_.size()) + " points");
    for (double w : w_)
      if (!(w > 0) || !std::isfinite(w)) throw Error(ErrorCode::kParse, "knn state: a weight is not a finite number > 0");
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

  // Squared distances of a block's 8 points to z (each point's sum in the order 0..d-1).
  static void distances(const V2* block, const double* z, std::size_t dims, double* d2) {
    V2 a0 = {0, 0}, a1 = {0, 0}, a2 = {0, 0}, a3 = {0, 0};
    for (std::size_t c = 0; c < dims; ++c) {
      const V2 zc = {z[c], z[c]};
      const V2* p = block + kVectors * c;
      const V2 e0 = p[0] - zc, e1 = p[1] - zc, e2 = p[2] - zc, e3 = p[3] - zc;
      a0 += e0 * e0;
      a1 += e1 * e1;
      a2 += e2 * e2;
      a3 += e3 * e3;
    }
    std::memcpy(d2, &a0, sizeof a0);
    std::memcpy(d2 + 2, &a1, sizeof a1);
    std::memcpy(d2 + 4, &a2, sizeof a2);
    std::memcpy(d2 + 6, &a3, sizeof a3);
  }

  // With row weights: the nearest points until their weights reach k (ties: the earlier point
  // first, as the unweighted scan), the last one counting only the part of its weight that fits;
  // each point's inverse-distance vote times that part. For integer weights this is the scan
  // over the points repeated (test Learners.RowWeightKnnIsRepetition).
  double predict_weighted(const double* z, std::size_t dims, std::size_t n) const {
    const auto k = static_cast<double>(k_);
    std::vector<std::pair<double, std::size_t>> best;  // ascending (distance², index)
    best.reserve(static_cast<std::size_t>(k_) + 1);
    double have = 0, bound = std::numeric_limits<double>::infinity();
    const V2* block = blocks_.data();
    for (std::size_t start = 0; start < n; start += kLanes, block += kVectors * dims) {
      double d2[kLanes];
      distances(block, z, dims, d2);
      const std::size_t m = std::min(kLanes, n - start);
      for (std::size_t i = 0; i < m; ++i) {
        if (!(d2[i] < bound) && have >= k) continue;
        std::size_t pos = best.size();
        while (pos > 0 && best[pos - 1].first > d2[i]) --pos;
        best.insert(best.begin() + static_cast<std::ptrdiff_t>(pos), {d2[i], start + i});
        have += w_[start + i];
        while (best.size() > 1 && have - w_[best.back().second] >= k) {
          have -= w_[best.back().second];
          best.pop_back();
        }
        if (have >= k) bound = best.back().first;
      }
    }
    double wsum = 0, sum = 0, used = 0;
    for (const auto& [d2, i] : best) {
      const double part = std::min(w_[i], k - used);
      used += part;
      const double w = part / (std::sqrt(d2) + 1e-6);
      wsum += w;
      sum += w * y_[i];
    }
    return wsum > 0 ? sum / wsum : 0.0;
  }

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
  std::vector<double> w_;  // the points' weights; empty: all 1
};

}  // namespace

std::unique_ptr<Learner> make_knn_learner(const LearnerConfig& config) { return std::make_unique<KnnLearner>(config); }

}  // namespace epochcast
