// Base learners of the stack. Each fits y from a dense row-major matrix (NaN = missing),
// predicts one row at a time (const, thread-safe) and round-trips through JSON.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/model/stacked_model.hpp"

namespace epochcast {

struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<double> data;  // row-major
  Matrix() = default;
  Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  [[nodiscard]] std::span<const double> row(std::size_t i) const { return {data.data() + i * cols, cols}; }
  [[nodiscard]] std::span<double> row(std::size_t i) { return {data.data() + i * cols, cols}; }
};

// Per-column standardisation fitted on finite values; NaN maps to 0 (the mean). With row
// weights (empty: all 1) the weighted mean and standard deviation, as of the rows repeated.
struct Standardizer {
  std::vector<double> mean, scale;
  void fit(const Matrix& x, std::span<const double> weights = {});
  void apply(std::span<const double> in, std::span<double> out) const;
  [[nodiscard]] nlohmann::json to_json() const;
  void from_json(const nlohmann::json& j);
};

// Integers from a model file: nlohmann's get<int>() casts a float such as -1.5 to size_t
// (undefined behaviour, found by fuzz_model); these require an integer that fits.
template <typename T>
[[nodiscard]] T json_integer(const nlohmann::json& j) {
  using L = std::numeric_limits<T>;
  if (j.is_number_unsigned()) {
    const auto v = j.get<std::uint64_t>();
    if (v <= static_cast<std::uint64_t>(L::max())) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    const auto v = j.get<std::int64_t>();
    if (v >= 0 ? static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(L::max())
               : L::is_signed && v >= static_cast<std::int64_t>(L::min()))
      return static_cast<T>(v);
  }
  throw nlohmann::json::type_error::create(302, "expected an integer in range, got " + j.dump().substr(0, 40), &j);
}
template <typename T>
[[nodiscard]] std::vector<T> json_integers(const nlohmann::json& j) {
  if (!j.is_array()) throw nlohmann::json::type_error::create(302, "expected an array of integers", &j);
  std::vector<T> out;
  out.reserve(j.size());
  for (const auto& x : j) out.push_back(json_integer<T>(x));
  return out;
}

// Row weights of a fit: empty means every row counts once; else one finite weight > 0 per row,
// and a row of weight w fits as w copies of it would (exactly for integer weights in ridge,
// kNN, kernel ridge and extra trees up to the last bits of sums; XGBoost to tolerance, its row
// subsampling draws a row once, not each copy). Throws Error(kInvalidArgument) otherwise.
void check_row_weights(std::span<const double> weights, std::size_t rows, const char* learner);
[[nodiscard]] bool unit_weights(std::span<const double> weights);  // empty or all exactly 1

class Learner {
 public:
  virtual ~Learner() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) { fit(x, y, {}, seed); }
  virtual void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights,
                   std::uint64_t seed) = 0;
  [[nodiscard]] virtual double predict(std::span<const double> x) const = 0;
  virtual void predict_many(const Matrix& x, std::span<double> out) const;
  [[nodiscard]] virtual nlohmann::json to_json() const = 0;
  virtual void from_json(const nlohmann::json& j) = 0;
  // How many leading columns of a row predict() reads: a loaded state must not read past
  // the schema's row (checked by the model loader).
  [[nodiscard]] virtual std::size_t columns_read() const = 0;
};

// The learners' settings. Those FitOptions also has start at FitOptions' defaults (the one home
// of the defaults, fit_parameters.hpp; test LearnerConfig.DefaultsAreFitOptions').
struct LearnerConfig {
  int xgb_rounds = FitOptions{}.xgb_rounds, xgb_max_depth = FitOptions{}.xgb_max_depth, threads = FitOptions{}.threads;
  double xgb_eta = FitOptions{}.xgb_eta;
  int trees = FitOptions{}.trees, tree_min_leaf = FitOptions{}.tree_min_leaf;
  double tree_max_features = FitOptions{}.tree_max_features;  // share of features tried per split
  int knn_k = FitOptions{}.knn_k;
  std::vector<std::size_t> knn_columns;  // the columns kNN measures distance on (empty: all)
  // Prepare fast single-row prediction after fit (XGBoost's flat tree copy). Out-of-fold
  // learners only predict batches and skip it.
  bool single_rows = true;
  // Kernel ridge: the columns it measures distance on (empty: all), Nyström basis size, kernel,
  // and the length scale / λ when already chosen (0: the learner chooses by CV over its rows).
  // Grid: length scales as multiples of √(columns), λ relative to the unit kernel diagonal.
  std::vector<std::size_t> kernel_columns;
  int kernel_basis = 256;
  bool kernel_matern = false;
  double kernel_length_scale = 0, kernel_lambda = 0;
  std::vector<double> kernel_scale_grid = {0.25, 0.5, 1.0, 2.0};
  std::vector<double> kernel_lambda_grid = {0.001, 0.01, 0.1, 1.0};
  // The stack's learners, in order (the meta weights follow it).
  std::vector<std::string> learners = {"xgboost", "ridge", "knn", "extra_trees"};
};

// Instruction set of extra trees' split scan, chosen once: the widest the processor (and OS)
// supports of AVX-512 (F, DQ, VL), AVX2 and the SSE2 baseline; EPOCHCAST_SIMD=baseline forces
// SSE2 and EPOCHCAST_SIMD=avx2 caps it at AVX2. The build targets baseline x86-64 (the wider
// paths are chosen at run time), and every path grows the same trees bit for bit.
enum class TreeSimd { kBaseline, kAvx2, kAvx512 };
[[nodiscard]] TreeSimd tree_simd();
[[nodiscard]] bool tree_simd_available(TreeSimd s);
// Forces a path (tests, benchmarks); one the processor lacks falls back to the baseline.
// Returns the previous choice. Not for use while a fit runs on another thread.
TreeSimd set_tree_simd(TreeSimd s);
// Forgets the choice: the next tree_simd() reads EPOCHCAST_SIMD and the processor again.
void reset_tree_simd();

// Kernel ridge's linear algebra (src/model/kernel_math.hpp): "avx2" (AVX2 + FMA, Eigen compiled
// for them) where tree_simd() is AVX2 or wider and the processor has FMA, else "baseline". The
// two differ in the last bits of a fit (FMA, wider blocks); EPOCHCAST_SIMD=baseline forces the
// baseline, whose fits are the ones of builds before the split.
[[nodiscard]] const char* kernel_ridge_simd();

struct KernelChoice {
  double length_scale, lambda;
};

// Kernel ridge's length scale and λ by cross-validation over x's rows: folds grouped by
// `groups` (one id per row; the stack passes the CNN model) when there are >= 3 groups, else
// rows in turn. Squared error, weighted by the row weights (empty: all 1); the grid is the config's.
[[nodiscard]] KernelChoice tune_kernel_ridge(const Matrix& x, std::span<const double> y,
                                             std::span<const std::uint32_t> groups,
                                             const LearnerConfig& config, std::uint64_t seed,
                                             std::span<const double> weights = {});

// ---- The learner registry (learner_registry.cpp): name → factory, used by the fit (config.learners)
// and by the model file (each learner's "name"). One file per learner: <name>_learner.cpp. ----
struct LearnerEntry {
  std::string_view name;
  std::string_view summary;  // one line for docs/parameters.md and errors
  std::unique_ptr<Learner> (*make)(const LearnerConfig&);
};
[[nodiscard]] std::span<const LearnerEntry> learner_registry();
// Throws Error(kParse) naming the known learners for a name not in the registry (a model file's).
[[nodiscard]] std::unique_ptr<Learner> make_learner(const std::string& name, const LearnerConfig& config);
// The stack's learners in config.learners' order.
[[nodiscard]] std::vector<std::unique_ptr<Learner>> make_learners(const LearnerConfig& config);

std::unique_ptr<Learner> make_xgboost_learner(const LearnerConfig& config);
std::unique_ptr<Learner> make_ridge_learner(const LearnerConfig& config);
std::unique_ptr<Learner> make_knn_learner(const LearnerConfig& config);
std::unique_ptr<Learner> make_extra_trees_learner(const LearnerConfig& config);
std::unique_ptr<Learner> make_kernel_ridge_learner(const LearnerConfig& config);

}  // namespace epochcast
