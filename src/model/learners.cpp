#include "learners.hpp"

#include <xgboost/c_api.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- XGBoost through its C API: RAII owners, status codes converted here. ----

void xgb_check(int status, const char* what) {
  if (status != 0)
    throw Error(ErrorCode::kInternal, std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

class XgbMatrix {
 public:
  XgbMatrix(const Matrix& x, std::span<const double> y) {
    std::vector<float> values(x.data.begin(), x.data.end());
    xgb_check(XGDMatrixCreateFromMat(values.data(), x.rows, x.cols,
                                     std::numeric_limits<float>::quiet_NaN(), &handle_),
              "XGDMatrixCreateFromMat");
    std::vector<float> labels(y.begin(), y.end());
    xgb_check(XGDMatrixSetFloatInfo(handle_, "label", labels.data(), labels.size()),
              "XGDMatrixSetFloatInfo");
  }
  ~XgbMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  XgbMatrix(const XgbMatrix&) = delete;
  XgbMatrix& operator=(const XgbMatrix&) = delete;
  [[nodiscard]] DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

class XgbBooster {
 public:
  explicit XgbBooster(const DMatrixHandle* cache = nullptr, bst_ulong n = 0) {
    xgb_check(XGBoosterCreate(cache, n, &handle_), "XGBoosterCreate");
  }
  ~XgbBooster() {
    if (handle_) XGBoosterFree(handle_);
  }
  XgbBooster(const XgbBooster&) = delete;
  XgbBooster& operator=(const XgbBooster&) = delete;
  [[nodiscard]] BoosterHandle get() const { return handle_; }
  void set(const char* key, const std::string& value) {
    xgb_check(XGBoosterSetParam(handle_, key, value.c_str()), "XGBoosterSetParam");
  }

 private:
  BoosterHandle handle_ = nullptr;
};

class XgbLearner final : public Learner {
 public:
  explicit XgbLearner(const LearnerConfig& c) : config_(c) {}
  std::string name() const override { return "xgboost"; }

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) override {
    XgbMatrix train(x, y);
    DMatrixHandle cache[] = {train.get()};
    auto booster = std::make_unique<XgbBooster>(cache, 1);
    booster->set("objective", "reg:squarederror");
    booster->set("tree_method", "hist");
    booster->set("max_depth", std::to_string(config_.xgb_max_depth));
    booster->set("eta", std::to_string(config_.xgb_eta));
    booster->set("subsample", "0.8");
    booster->set("colsample_bytree", "0.8");
    booster->set("min_child_weight", "2");
    booster->set("lambda", "1");
    booster->set("seed", std::to_string(seed % 2147483647));
    booster->set("nthread", "1");  // OpenMP spin-waits badly on a shared machine; one thread is fast enough here
    for (int i = 0; i < config_.xgb_rounds; ++i)
      xgb_check(XGBoosterUpdateOneIter(booster->get(), i, train.get()), "XGBoosterUpdateOneIter");
    booster->set("nthread", "1");  // prediction is one row at a time
    booster_ = std::move(booster);
    cols_ = x.cols;
  }

  double predict(std::span<const double> x) const override {
    std::vector<float> row(x.begin(), x.end());
    float out = 0;
    run_predict(row.data(), 1, &out);
    return out;
  }

  void predict_many(const Matrix& x, std::span<double> out) const override {
    std::vector<float> values(x.data.begin(), x.data.end());
    std::vector<float> result(x.rows);
    if (x.rows > 0) run_predict(values.data(), x.rows, result.data());
    std::copy(result.begin(), result.end(), out.begin());
  }

  nlohmann::json to_json() const override {
    if (!booster_) throw Error(ErrorCode::kInternal, "XGBoost learner saved before fit");
    bst_ulong len = 0;
    const char* buffer = nullptr;
    std::lock_guard lock(mutex_);
    xgb_check(XGBoosterSaveModelToBuffer(booster_->get(), R"({"format": "json"})", &len, &buffer),
              "XGBoosterSaveModelToBuffer");
    return {{"columns", cols_}, {"format", "json"}, {"buffer", std::string(buffer, len)}};
  }

  void from_json(const nlohmann::json& j) override {
    const std::string buffer = j.at("buffer").get<std::string>();
    cols_ = j.at("columns").get<std::size_t>();
    auto booster = std::make_unique<XgbBooster>();
    // A damaged booster in a model file is bad input, not a bug: one line, parse error.
    if (XGBoosterLoadModelFromBuffer(booster->get(), buffer.data(), buffer.size()) != 0) {
      std::string why = XGBGetLastError();
      why = why.substr(0, why.find('\n'));
      throw Error(ErrorCode::kParse, "the XGBoost booster saved in the model file is damaged: " + why);
    }
    booster->set("nthread", "1");
    booster_ = std::move(booster);
  }

 private:
  void run_predict(const float* values, std::size_t rows, float* out) const {
    if (!booster_) throw Error(ErrorCode::kInternal, "XGBoost learner used before fit");
    // Array interface over our buffer: no DMatrix per call.
    const std::string array = R"({"data": [)" +
                              std::to_string(reinterpret_cast<std::uintptr_t>(values)) +
                              R"(, true], "shape": [)" + std::to_string(rows) + ", " +
                              std::to_string(cols_) + R"(], "typestr": "<f4", "version": 3})";
    static const char* const kConfig =
        R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false, "missing": NaN, "cache_id": 0})";
    bst_ulong const* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    // XGBoost keeps the result in per-booster storage: serialise calls.
    std::lock_guard lock(mutex_);
    xgb_check(XGBoosterPredictFromDense(booster_->get(), array.c_str(), kConfig, nullptr, &shape,
                                        &dim, &result),
              "XGBoosterPredictFromDense");
    std::copy(result, result + rows, out);
  }

  LearnerConfig config_;
  std::unique_ptr<XgbBooster> booster_;
  std::size_t cols_ = 0;
  mutable std::mutex mutex_;
};

// ---- Ridge regression on Eigen, penalty chosen by generalised cross-validation. ----

class RidgeLearner final : public Learner {
 public:
  std::string name() const override { return "ridge"; }

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t) override {
    scaler_.fit(x);
    const auto n = static_cast<Eigen::Index>(x.rows), p = static_cast<Eigen::Index>(x.cols);
    Eigen::MatrixXd z(n, p);
    std::vector<double> buf(x.cols);
    for (Eigen::Index i = 0; i < n; ++i) {
      scaler_.apply(x.row(i), buf);
      for (Eigen::Index c = 0; c < p; ++c) z(i, c) = buf[c];
    }
    Eigen::VectorXd yv = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
    intercept_ = yv.mean();
    yv.array() -= intercept_;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(z.transpose() * z);
    const Eigen::VectorXd d = eig.eigenvalues().cwiseMax(0.0);
    const Eigen::MatrixXd& v = eig.eigenvectors();
    const Eigen::VectorXd vty = v.transpose() * (z.transpose() * yv);
    double best_gcv = std::numeric_limits<double>::infinity();
    for (double lambda : {0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0}) {
      const Eigen::VectorXd beta = v * (vty.array() / (d.array() + lambda)).matrix();
      const double rss = (yv - z * beta).squaredNorm();
      const double dof = (d.array() / (d.array() + lambda)).sum();
      const double denom = static_cast<double>(n) - dof;
      const double gcv = denom > 0 ? static_cast<double>(n) * rss / (denom * denom)
                                   : std::numeric_limits<double>::infinity();
      if (gcv < best_gcv) {
        best_gcv = gcv;
        lambda_ = lambda;
        coef_.assign(beta.data(), beta.data() + beta.size());
      }
    }
  }

  double predict(std::span<const double> x) const override {
    double out = intercept_;
    for (std::size_t c = 0; c < coef_.size(); ++c) {
      const double v = std::isfinite(x[c]) ? (x[c] - scaler_.mean[c]) / scaler_.scale[c] : 0.0;
      out += coef_[c] * v;
    }
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"scaler", scaler_.to_json()}, {"coef", coef_}, {"intercept", intercept_},
            {"lambda", lambda_}};
  }
  void from_json(const nlohmann::json& j) override {
    scaler_.from_json(j.at("scaler"));
    coef_ = j.at("coef").get<std::vector<double>>();
    intercept_ = j.at("intercept").get<double>();
    lambda_ = j.at("lambda").get<double>();
    if (coef_.size() != scaler_.mean.size())
      throw Error(ErrorCode::kParse, "ridge state: coefficient count does not match the scaler");
  }

 private:
  Standardizer scaler_;
  std::vector<double> coef_;
  double intercept_ = 0, lambda_ = 0;
};

// ---- k nearest neighbours in standardised space, inverse-distance weighted. ----

class KnnLearner final : public Learner {
 public:
  explicit KnnLearner(const LearnerConfig& c) : k_(std::max(1, c.knn_k)), columns_(c.knn_columns) {}
  std::string name() const override { return "knn"; }

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
  }

  double predict(std::span<const double> x) const override {
    double picked[64];
    std::vector<double> picked_heap;
    std::span<double> in(picked, std::min<std::size_t>(columns_.size(), 64));
    if (columns_.size() > 64) {
      picked_heap.resize(columns_.size());
      in = picked_heap;
    }
    for (std::size_t c = 0; c < columns_.size(); ++c) in[c] = x[columns_[c]];
    double z_buf[64];
    std::vector<double> z_heap;
    std::span<double> z(z_buf, in.size());
    if (in.size() > 64) {
      z_heap.resize(in.size());
      z = z_heap;
    }
    scaler_.apply(in, z);
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(k_), points_.rows);
    std::vector<std::pair<double, std::size_t>> best;  // (distance², index), k smallest
    best.reserve(k + 1);
    for (std::size_t i = 0; i < points_.rows; ++i) {
      const auto p = points_.row(i);
      // Stop summing once this point cannot enter the k best: most points leave early.
      const double bound = best.size() < k ? std::numeric_limits<double>::infinity() : best.back().first;
      double d2 = 0;
      for (std::size_t c = 0; c < z.size() && d2 < bound; c += 8) {
        const std::size_t end = std::min(z.size(), c + 8);
        for (std::size_t q = c; q < end; ++q) d2 += (p[q] - z[q]) * (p[q] - z[q]);
      }
      if (best.size() < k || d2 < best.back().first) {
        auto pos = std::upper_bound(best.begin(), best.end(), std::make_pair(d2, i));
        best.insert(pos, {d2, i});
        if (best.size() > k) best.pop_back();
      }
    }
    double wsum = 0, sum = 0;
    for (auto [d2, i] : best) {
      const double w = 1.0 / (std::sqrt(d2) + 1e-6);
      wsum += w;
      sum += w * y_[i];
    }
    return wsum > 0 ? sum / wsum : 0.0;
  }

  nlohmann::json to_json() const override {
    return {{"k", k_}, {"columns", columns_}, {"scaler", scaler_.to_json()}, {"rows", points_.rows},
            {"cols", points_.cols}, {"points", points_.data}, {"y", y_}};
  }
  void from_json(const nlohmann::json& j) override {
    k_ = j.at("k").get<int>();
    columns_ = j.at("columns").get<std::vector<std::size_t>>();
    scaler_.from_json(j.at("scaler"));
    points_.rows = j.at("rows").get<std::size_t>();
    points_.cols = j.at("cols").get<std::size_t>();
    points_.data = j.at("points").get<std::vector<double>>();
    y_ = j.at("y").get<std::vector<double>>();
    if (k_ < 1 || points_.data.size() != points_.rows * points_.cols || y_.size() != points_.rows ||
        scaler_.mean.size() != points_.cols || columns_.size() != points_.cols)
      throw Error(ErrorCode::kParse, "knn state: inconsistent sizes");
  }

 private:
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
  Matrix points_;
  std::vector<double> y_;
};

// ---- Extra trees (Geurts et al. 2006): random thresholds, best of all features per node. ----

class ExtraTreesLearner final : public Learner {
 public:
  explicit ExtraTreesLearner(const LearnerConfig& c)
      : trees_wanted_(std::max(1, c.trees)), min_leaf_(std::max(1, c.tree_min_leaf)),
        threads_(std::max(1, c.threads)), max_features_(c.tree_max_features) {}
  std::string name() const override { return "extra_trees"; }

  struct Node {
    int feature = -1;  // -1: leaf
    double threshold = 0;
    int left = -1, right = -1;
    double value = 0;
  };

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) override {
    // Missing values take the column median: trees then see them as typical.
    fill_.assign(x.cols, 0.0);
    for (std::size_t c = 0; c < x.cols; ++c) {
      std::vector<double> v;
      for (std::size_t i = 0; i < x.rows; ++i)
        if (std::isfinite(x.data[i * x.cols + c])) v.push_back(x.data[i * x.cols + c]);
      if (!v.empty()) {
        std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
        fill_[c] = v[v.size() / 2];
      }
    }
    Matrix filled = x;
    for (std::size_t i = 0; i < x.rows; ++i)
      for (std::size_t c = 0; c < x.cols; ++c)
        if (!std::isfinite(filled.data[i * x.cols + c])) filled.data[i * x.cols + c] = fill_[c];
    cols_ = x.cols;
    trees_.assign(static_cast<std::size_t>(trees_wanted_), {});
    // Each tree has its own generator seeded from (seed, tree): same result for any thread count.
    auto work = [&](int first, int step) {
      for (int t = first; t < trees_wanted_; t += step) {
        std::mt19937_64 rng(seed * 1000003ULL + static_cast<std::uint64_t>(t));
        std::vector<std::size_t> idx(filled.rows);
        std::iota(idx.begin(), idx.end(), 0);
        auto& nodes = trees_[static_cast<std::size_t>(t)];
        build(filled, y, idx, 0, idx.size(), nodes, rng);
      }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads_; ++w) pool.emplace_back(work, w, threads_);
    work(0, threads_);
    for (auto& th : pool) th.join();
  }

  double predict(std::span<const double> x) const override {
    double sum = 0;
    for (const auto& nodes : trees_) {
      int n = 0;
      while (nodes[static_cast<std::size_t>(n)].feature >= 0) {
        const Node& node = nodes[static_cast<std::size_t>(n)];
        double v = x[static_cast<std::size_t>(node.feature)];
        if (!std::isfinite(v)) v = fill_[static_cast<std::size_t>(node.feature)];
        n = v <= node.threshold ? node.left : node.right;
      }
      sum += nodes[static_cast<std::size_t>(n)].value;
    }
    return trees_.empty() ? 0.0 : sum / static_cast<double>(trees_.size());
  }

  nlohmann::json to_json() const override {
    nlohmann::json trees = nlohmann::json::array();
    for (const auto& nodes : trees_) {
      std::vector<int> f, l, r;
      std::vector<double> t, v;
      for (const auto& n : nodes) {
        f.push_back(n.feature);
        l.push_back(n.left);
        r.push_back(n.right);
        t.push_back(n.threshold);
        v.push_back(n.value);
      }
      trees.push_back({{"feature", f}, {"threshold", t}, {"left", l}, {"right", r}, {"value", v}});
    }
    return {{"columns", cols_}, {"fill", fill_}, {"min_leaf", min_leaf_}, {"trees", trees}};
  }

  void from_json(const nlohmann::json& j) override {
    cols_ = j.at("columns").get<std::size_t>();
    fill_ = j.at("fill").get<std::vector<double>>();
    min_leaf_ = j.at("min_leaf").get<int>();
    trees_.clear();
    for (const auto& tj : j.at("trees")) {
      const auto f = tj.at("feature").get<std::vector<int>>();
      const auto t = tj.at("threshold").get<std::vector<double>>();
      const auto l = tj.at("left").get<std::vector<int>>();
      const auto r = tj.at("right").get<std::vector<int>>();
      const auto v = tj.at("value").get<std::vector<double>>();
      const std::size_t n = f.size();
      if (n == 0 || t.size() != n || l.size() != n || r.size() != n || v.size() != n)
        throw Error(ErrorCode::kParse, "extra_trees state: inconsistent node arrays");
      std::vector<Node> nodes(n);
      for (std::size_t i = 0; i < n; ++i) {
        nodes[i] = {f[i], t[i], l[i], r[i], v[i]};
        // Children must point forward (no cycles) and features must exist.
        if (f[i] >= 0 && (static_cast<std::size_t>(f[i]) >= cols_ || l[i] <= static_cast<int>(i) ||
                          r[i] <= static_cast<int>(i) || static_cast<std::size_t>(l[i]) >= n ||
                          static_cast<std::size_t>(r[i]) >= n))
          throw Error(ErrorCode::kParse, "extra_trees state: bad node " + std::to_string(i));
      }
      trees_.push_back(std::move(nodes));
    }
    if (fill_.size() != cols_) throw Error(ErrorCode::kParse, "extra_trees state: bad fill size");
  }

 private:
  int build(const Matrix& x, std::span<const double> y, std::vector<std::size_t>& idx,
            std::size_t begin, std::size_t end, std::vector<Node>& nodes, std::mt19937_64& rng) {
    const std::size_t n = end - begin;
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += y[idx[i]];
    const int id = static_cast<int>(nodes.size());
    nodes.push_back(Node{-1, 0, -1, -1, sum / static_cast<double>(n)});
    if (n < 2 * static_cast<std::size_t>(min_leaf_)) return id;
    double best_score = -std::numeric_limits<double>::infinity();
    int best_feature = -1;
    double best_threshold = 0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    // A random subset of the features per node (partial Fisher-Yates over a reused buffer).
    std::vector<std::size_t>& order = order_buffer(x.cols);
    const std::size_t tries = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::ceil(max_features_ * static_cast<double>(x.cols))), 1, x.cols);
    for (std::size_t j = 0; j < tries; ++j) {
      std::uniform_int_distribution<std::size_t> pick(j, x.cols - 1);
      std::swap(order[j], order[pick(rng)]);
    }
    for (std::size_t j = 0; j < tries; ++j) {
      const std::size_t c = order[j];
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (std::size_t i = begin; i < end; ++i) {
        const double v = x.data[idx[i] * x.cols + c];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      const double u = unit(rng);  // drawn for every feature: the stream does not depend on data
      if (!(hi > lo)) continue;
      const double threshold = lo + u * (hi - lo);
      double left_sum = 0;
      std::size_t left_n = 0;
      for (std::size_t i = begin; i < end; ++i)
        if (x.data[idx[i] * x.cols + c] <= threshold) {
          left_sum += y[idx[i]];
          ++left_n;
        }
      const std::size_t right_n = n - left_n;
      if (left_n < static_cast<std::size_t>(min_leaf_) || right_n < static_cast<std::size_t>(min_leaf_))
        continue;
      const double right_sum = sum - left_sum;
      // Maximising this is maximising the variance reduction.
      const double score = left_sum * left_sum / static_cast<double>(left_n) +
                           right_sum * right_sum / static_cast<double>(right_n);
      if (score > best_score) {
        best_score = score;
        best_feature = static_cast<int>(c);
        best_threshold = threshold;
      }
    }
    if (best_feature < 0) return id;
    const auto mid_it = std::partition(
        idx.begin() + static_cast<long>(begin), idx.begin() + static_cast<long>(end),
        [&](std::size_t r) { return x.data[r * x.cols + static_cast<std::size_t>(best_feature)] <= best_threshold; });
    const auto mid = static_cast<std::size_t>(mid_it - idx.begin());
    const int left = build(x, y, idx, begin, mid, nodes, rng);
    const int right = build(x, y, idx, mid, end, nodes, rng);
    Node& node = nodes[static_cast<std::size_t>(id)];
    node.feature = best_feature;
    node.threshold = best_threshold;
    node.left = left;
    node.right = right;
    return id;
  }

  static std::vector<std::size_t>& order_buffer(std::size_t cols) {
    // Reset per node so the draw depends only on the tree's own generator.
    thread_local std::vector<std::size_t> order;
    order.resize(cols);
    std::iota(order.begin(), order.end(), 0);
    return order;
  }

  int trees_wanted_, min_leaf_, threads_;
  double max_features_;
  std::size_t cols_ = 0;
  std::vector<double> fill_;
  std::vector<std::vector<Node>> trees_;
};

}  // namespace

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

std::unique_ptr<Learner> make_learner(const std::string& name, const LearnerConfig& config) {
  if (name == "xgboost") return std::make_unique<XgbLearner>(config);
  if (name == "ridge") return std::make_unique<RidgeLearner>();
  if (name == "knn") return std::make_unique<KnnLearner>(config);
  if (name == "extra_trees") return std::make_unique<ExtraTreesLearner>(config);
  throw Error(ErrorCode::kParse, "unknown learner '" + name + "'");
}

std::vector<std::unique_ptr<Learner>> make_learners(const LearnerConfig& config) {
  std::vector<std::unique_ptr<Learner>> out;
  for (const char* n : {"xgboost", "ridge", "knn", "extra_trees"}) out.push_back(make_learner(n, config));
  return out;
}

}  // namespace epochcast
