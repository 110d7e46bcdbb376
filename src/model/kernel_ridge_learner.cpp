// Kernel ridge regression on a Nyström basis, and the tuning of its length scale and λ.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string_view>

#include "epochcast/core/error.hpp"
#include "fast_rng.hpp"
#include "kernel_math.hpp"
#include "learners.hpp"
#include "simd_target.hpp"

namespace epochcast {
namespace {

// ---- Kernel ridge regression (RBF or Matérn 5/2) on a Nyström basis. ----


// k(r) with r² = d2 / ℓ²: exp(−r²/2), or Matérn 5/2 (1 + √5 r + 5r²/3) exp(−√5 r).
double kernel_value(double d2, double inv_l2, bool matern) {
  const double r2 = d2 * inv_l2;
  if (!matern) return std::exp(-0.5 * r2);
  const double s5r = std::sqrt(5.0 * r2);
  return (1.0 + s5r + 5.0 / 3.0 * r2) * std::exp(-s5r);
}

// The linear algebra's copy for this processor (kernel_math.hpp): the AVX2 + FMA one where the
// extra-trees dispatch allows AVX2 or wider (so EPOCHCAST_SIMD=baseline forces the baseline)
// and the processor has FMA.
const kernel_math::Fns& kernel_fns() {
#if EPOCHCAST_TREES_AVX2
  // AVX2 and FMA asked for here, not inferred from the tree dispatch (the copy is compiled with
  // -mavx2 -mfma whatever the trees chose).
  if (tree_simd() != TreeSimd::kBaseline && __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0)
    return kernel_math::avx2_fns();
#endif
  return kernel_math::baseline_fns();
}

// What a fit needs, computed once per training set: the scaler, the standardised rows
// (row-major) and the basis rows.
struct KernelData {
  Standardizer scaler;
  std::size_t n = 0, d = 0;
  std::vector<double> z;  // n×d
  std::vector<std::ptrdiff_t> basis_rows;
};

KernelData kernel_data(const Matrix& x, std::span<const double> y, std::span<const double> weights,
                       const std::vector<std::size_t>& columns, int basis, std::uint64_t seed) {
  if (x.rows == 0 || y.size() != x.rows) throw Error(ErrorCode::kInvalidArgument, "kernel ridge: no training rows");
  KernelData k;
  const std::size_t n = x.rows, d = columns.size();
  k.n = n;
  k.d = d;
  Matrix sub(n, d);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) {
      if (columns[c] >= x.cols) throw Error(ErrorCode::kInternal, "kernel ridge column out of range");
      sub.data[i * d + c] = x.data[i * x.cols + columns[c]];
    }
  k.scaler.fit(sub, weights);
  k.z.resize(n * d);
  for (std::size_t i = 0; i < n; ++i) k.scaler.apply(sub.row(i), std::span<double>(k.z.data() + i * d, d));
  // Basis: a seeded random subset of the training rows (partial Fisher–Yates), kept in row order.
  const std::size_t m = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, basis)), n);
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  FastRng rng(seed ^ 0x6b65726e656cULL);
  for (std::size_t i = 0; i < m && m < n; ++i)
    std::swap(idx[i], idx[i + rng.below(static_cast<std::uint32_t>(n - i))]);
  std::sort(idx.begin(), idx.begin() + static_cast<long>(m));
  k.basis_rows.assign(idx.begin(), idx.begin() + static_cast<long>(m));
  return k;
}


class KernelRidgeLearner final : public Learner {
 public:
  explicit KernelRidgeLearner(const LearnerConfig& c) : config_(c), columns_(c.kernel_columns), matern_(c.kernel_matern) {}
  std::string name() const override { return "kernel_ridge"; }

  void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights, std::uint64_t seed) override {
    check_row_weights(weights, x.rows, "kernel_ridge");
    if (unit_weights(weights)) weights = {};  // all 1: the unweighted solve, the same bits as before weights
    if (columns_.empty()) {
      columns_.resize(x.cols);
      std::iota(columns_.begin(), columns_.end(), 0);
    }
    // Hyperparameters from the config when the caller tuned them (the stack, on grouped
    // folds), else by CV over the rows here.
    KernelChoice choice{config_.kernel_length_scale, config_.kernel_lambda};
    if (!(choice.length_scale > 0 && choice.lambda > 0)) {
      LearnerConfig c = config_;
      c.kernel_columns = columns_;
      choice = tune_kernel_ridge(x, y, {}, c, seed, weights);
    }
    const KernelData k = kernel_data(x, y, weights, columns_, config_.kernel_basis, seed);
    const std::size_t m = k.basis_rows.size(), d = k.d;
    alpha_.assign(m, 0.0);
    kernel_fns().solve(k.z.data(), static_cast<std::ptrdiff_t>(k.n), static_cast<std::ptrdiff_t>(d), y.data(),
                       weights.empty() ? nullptr : weights.data(), k.basis_rows.data(), static_cast<std::ptrdiff_t>(m), choice.length_scale, choice.lambda,
                       matern_, alpha_.data(), &intercept_);
    scaler_ = k.scaler;
    length_scale_ = choice.length_scale;
    lambda_ = choice.lambda;
    basis_ = Matrix(m, d);
    for (std::size_t i = 0; i < m; ++i)
      std::copy_n(k.z.data() + static_cast<std::size_t>(k.basis_rows[i]) * d, d, basis_.data.data() + i * d);
    if (!std::all_of(alpha_.begin(), alpha_.end(), [](double v) { return std::isfinite(v); }))
      throw Error(ErrorCode::kInternal, "kernel ridge: the solve gave non-finite weights");
  }

  double predict(std::span<const double> x) const override {
    constexpr std::size_t kMaxDims = 128;
    const std::size_t d = columns_.size();
    double z_buf[kMaxDims];
    std::vector<double> z_heap;
    double* z = z_buf;
    if (d > kMaxDims) {
      z_heap.resize(d);
      z = z_heap.data();
    }
    for (std::size_t c = 0; c < d; ++c) {
      const double v = x[columns_[c]];  // a missing value sits at the training mean
      z[c] = std::isfinite(v) ? (v - scaler_.mean[c]) / scaler_.scale[c] : 0.0;
    }
    const double inv_l2 = 1.0 / (length_scale_ * length_scale_);
    double out = intercept_;
    for (std::size_t j = 0; j < basis_.rows; ++j) {
      const double* p = basis_.data.data() + j * d;
      double d2 = 0;
      for (std::size_t c = 0; c < d; ++c) d2 += (p[c] - z[c]) * (p[c] - z[c]);
      out += alpha_[j] * kernel_value(d2, inv_l2, matern_);
    }
    return out;
  }

  std::size_t columns_read() const override {
    return columns_.empty() ? 0 : *std::max_element(columns_.begin(), columns_.end()) + 1;
  }

  nlohmann::json to_json() const override {
    return {{"kernel", matern_ ? "matern52" : "rbf"}, {"columns", columns_}, {"scaler", scaler_.to_json()},
            {"length_scale", length_scale_}, {"lambda", lambda_}, {"intercept", intercept_},
            {"rows", basis_.rows}, {"cols", basis_.cols}, {"basis", basis_.data}, {"alpha", alpha_}};
  }
  void from_json(const nlohmann::json& j) override {
    const std::string kernel = j.at("kernel").get<std::string>();
    if (kernel != "rbf" && kernel != "matern52")
      throw Error(ErrorCode::kParse, "kernel ridge state: unknown kernel '" + kernel + "'");
    matern_ = kernel == "matern52";
    columns_ = json_integers<std::size_t>(j.at("columns"));  // not get<>: -1.5 cast to size_t
    scaler_.from_json(j.at("scaler"));
    length_scale_ = j.at("length_scale").get<double>();
    lambda_ = j.at("lambda").get<double>();
    intercept_ = j.at("intercept").get<double>();
    basis_.rows = json_integer<std::size_t>(j.at("rows"));
    basis_.cols = json_integer<std::size_t>(j.at("cols"));
    basis_.data = j.at("basis").get<std::vector<double>>();
    alpha_ = j.at("alpha").get<std::vector<double>>();
    // The columns index the pair features: they must be the ones this schema gives the learner.
    if (!config_.kernel_columns.empty() && columns_ != config_.kernel_columns)
      throw Error(ErrorCode::kParse, "kernel ridge state: columns differ from the schema's");
    if (columns_.empty() || basis_.cols != columns_.size() || scaler_.mean.size() != columns_.size() ||
        basis_.data.size() != basis_.rows * basis_.cols || alpha_.size() != basis_.rows)
      throw Error(ErrorCode::kParse, "kernel ridge state: inconsistent sizes");
    if (!(length_scale_ > 0) || !std::isfinite(length_scale_) || !std::isfinite(intercept_))
      throw Error(ErrorCode::kParse, "kernel ridge state: bad length scale or intercept");
    // A fit always has a basis row and a positive, finite penalty: anything else is damage.
    if (basis_.rows == 0 || !(lambda_ > 0) || !std::isfinite(lambda_))
      throw Error(ErrorCode::kParse, "kernel ridge state: empty basis or bad penalty");
    for (double v : basis_.data)
      if (!std::isfinite(v)) throw Error(ErrorCode::kParse, "kernel ridge state: non-finite basis point");
    for (double v : alpha_)
      if (!std::isfinite(v)) throw Error(ErrorCode::kParse, "kernel ridge state: non-finite weight");
  }

 private:
  LearnerConfig config_;
  std::vector<std::size_t> columns_;
  bool matern_ = false;
  Standardizer scaler_;
  double length_scale_ = 1, lambda_ = 0.1, intercept_ = 0;
  Matrix basis_;  // standardised basis rows, row-major
  std::vector<double> alpha_;
};


}  // namespace

const char* kernel_ridge_simd() { return kernel_fns().name; }

KernelChoice tune_kernel_ridge(const Matrix& x, std::span<const double> y, std::span<const std::uint32_t> groups,
                               const LearnerConfig& config, std::uint64_t seed, std::span<const double> weights) {
  check_row_weights(weights, x.rows, "kernel_ridge");
  if (unit_weights(weights)) weights = {};
  std::vector<std::size_t> columns = config.kernel_columns;
  if (columns.empty()) {
    columns.resize(x.cols);
    std::iota(columns.begin(), columns.end(), 0);
  }
  const KernelData k = kernel_data(x, y, weights, columns, config.kernel_basis, seed);
  const auto n = static_cast<std::ptrdiff_t>(k.n);
  // Folds: the rows' groups dealt round-robin in sorted order (the stack passes the CNN model,
  // so the choice is made on unseen networks); without groups (or < 3) rows in turn.
  std::vector<int> fold(static_cast<std::size_t>(n));
  std::vector<std::uint32_t> distinct(groups.begin(), groups.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const bool grouped = groups.size() == static_cast<std::size_t>(n) && distinct.size() >= 3;
  const int folds = grouped ? static_cast<int>(std::min<std::size_t>(5, distinct.size())) : static_cast<int>(std::min<std::ptrdiff_t>(5, n));
  if (folds < 2) return {std::sqrt(static_cast<double>(columns.size())), 0.1};
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    fold[u] = grouped ? static_cast<int>((std::lower_bound(distinct.begin(), distinct.end(), groups[u]) - distinct.begin()) % folds)
                      : static_cast<int>(i % folds);
  }
  // Length scales relative to √d (standardised columns: typical distances grow like √d).
  const double root_d = std::sqrt(static_cast<double>(columns.size()));
  KernelChoice best{root_d, 0.1};
  kernel_fns().tune(k.z.data(), n, static_cast<std::ptrdiff_t>(k.d), y.data(), weights.empty() ? nullptr : weights.data(),
                    k.basis_rows.data(),
                    static_cast<std::ptrdiff_t>(k.basis_rows.size()), fold.data(), folds, config.kernel_scale_grid.data(),
                    static_cast<int>(config.kernel_scale_grid.size()), config.kernel_lambda_grid.data(),
                    static_cast<int>(config.kernel_lambda_grid.size()), config.kernel_matern, root_d,
                    &best.length_scale, &best.lambda);
  return best;
}

std::unique_ptr<Learner> make_kernel_ridge_learner(const LearnerConfig& config) {
  return std::make_unique<KernelRidgeLearner>(config);
}

}  // namespace epochcast
