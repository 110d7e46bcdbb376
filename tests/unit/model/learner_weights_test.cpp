// Row weights: a row of weight w fits as w copies of it (learners.hpp, check_row_weights).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../../src/model/learners.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

struct Weighted {
  Matrix x;
  std::vector<double> y, w;
  Matrix x_dup;  // every row repeated w times in place (ties keep their order)
  std::vector<double> y_dup;
};

// A smooth function plus noise, 5 % of cells missing; weights 1, 2 or 3 (a third each), the
// rows of weight 3 `heavy_shift` higher (so weighing them moves every prediction).
Weighted weighted_data(std::size_t rows, std::size_t cols, std::uint64_t seed, double heavy_shift = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  Weighted d{Matrix(rows, cols), {}, {}, {}, {}};
  std::vector<double> dup;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < cols; ++c) d.x.data[i * cols + c] = u(rng) < 0.05 ? NAN : g(rng);
    const auto r = d.x.row(i);
    const double a = std::isfinite(r[0]) ? r[0] : 0, b = std::isfinite(r[1]) ? r[1] : 0;
    d.y.push_back(std::sin(a) + 0.5 * b * b + 0.1 * g(rng) + (i % 3 == 2 ? heavy_shift : 0.0));
    d.w.push_back(static_cast<double>(1 + i % 3));
    for (int k = 0; k < 1 + static_cast<int>(i % 3); ++k) {
      dup.insert(dup.end(), r.begin(), r.end());
      d.y_dup.push_back(d.y.back());
    }
  }
  d.x_dup = Matrix(d.y_dup.size(), cols);
  d.x_dup.data = dup;
  return d;
}

Matrix test_rows(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  Matrix m(rows, cols);
  for (double& v : m.data) v = g(rng);
  m.data[3] = NAN;  // a missing value takes the (weighted) fill
  return m;
}

LearnerConfig small() {
  LearnerConfig c;
  c.xgb_rounds = 40;
  c.trees = 20;
  c.knn_k = 7;  // not a multiple of the weights: the last neighbour counts in part
  c.threads = 1;
  return c;
}

// Largest |a - b| over the test rows of the weighted fit against the fit on the copies.
double max_gap(const std::string& name, const LearnerConfig& config, const Weighted& d, const Matrix& test,
               std::uint64_t seed) {
  auto weighted = make_learner(name, config);
  auto copies = make_learner(name, config);
  weighted->fit(d.x, d.y, d.w, seed);
  copies->fit(d.x_dup, d.y_dup, seed);
  double gap = 0;
  for (std::size_t i = 0; i < test.rows; ++i)
    gap = std::max(gap, std::abs(weighted->predict(test.row(i)) - copies->predict(test.row(i))));
  return gap;
}

// Exact up to the last bits of sums (w·v against v + v + …): 1e-9 on labels of order 1.
constexpr double kSumsTolerance = 1e-9;

TEST(Learners, RowWeightRidgeIsRepetition) {
  const Weighted d = weighted_data(300, 6, 1);
  EXPECT_LT(max_gap("ridge", small(), d, test_rows(50, 6, 2), 0), kSumsTolerance);
}

TEST(Learners, RowWeightKnnIsRepetition) {
  const Weighted d = weighted_data(300, 6, 3);
  LearnerConfig c = small();
  EXPECT_LT(max_gap("knn", c, d, test_rows(80, 6, 4), 0), kSumsTolerance);
  c.knn_k = 1;  // one neighbour: a weight-3 point is still one vote
  EXPECT_LT(max_gap("knn", c, d, test_rows(80, 6, 4), 0), kSumsTolerance);
}

TEST(Learners, RowWeightExtraTreesIsRepetition) {
  // The same draws and splits (weighted counts against min_leaf, weighted fill medians): the
  // same trees, leaf means equal to the last bits.
  const Weighted d = weighted_data(400, 6, 5);
  LearnerConfig c = small();
  c.tree_min_leaf = 4;
  EXPECT_LT(max_gap("extra_trees", c, d, test_rows(80, 6, 6), 11), kSumsTolerance);
}

TEST(Learners, RowWeightKernelRidgeIsRepetition) {
  // Fixed length scale and λ, every row in the basis: the copies' basis repeats points, which
  // spans the same functions (the optimum is the same up to the basis' 1e-6 jitter).
  const Weighted d = weighted_data(120, 4, 7);
  LearnerConfig c = small();
  c.kernel_basis = 1000;
  c.kernel_length_scale = 2.0;
  c.kernel_lambda = 0.1;
  EXPECT_LT(max_gap("kernel_ridge", c, d, test_rows(40, 4, 8), 3), 1e-4);
}

TEST(Learners, RowWeightXgboostIsCloseToRepetition) {
  // XGBoost's row subsampling draws a weighted row once and each copy on its own, so the two
  // fits differ row by row (by about what another seed gives). What the weights change is the
  // level: the rows of weight 3 are 1.5 higher, so the copies' mean prediction sits ~0.25 above
  // an unweighted fit's; the weighted fit's must be within a fifth of that of the copies'.
  const Weighted d = weighted_data(600, 6, 9, 1.5);
  const Matrix test = test_rows(200, 6, 10);
  const LearnerConfig c = small();
  auto weighted = make_learner("xgboost", c), copies = make_learner("xgboost", c), plain = make_learner("xgboost", c);
  weighted->fit(d.x, d.y, d.w, 5);
  copies->fit(d.x_dup, d.y_dup, 5);
  plain->fit(d.x, d.y, 5);
  double shift_weighted = 0, shift_plain = 0;
  for (std::size_t i = 0; i < test.rows; ++i) {
    const double ref = copies->predict(test.row(i));
    shift_weighted += weighted->predict(test.row(i)) - ref;
    shift_plain += plain->predict(test.row(i)) - ref;
  }
  shift_weighted /= static_cast<double>(test.rows);
  shift_plain /= static_cast<double>(test.rows);
  EXPECT_GT(std::abs(shift_plain), 0.1);  // the weights matter here
  EXPECT_LT(std::abs(shift_weighted), 0.2 * std::abs(shift_plain))
      << "weighted " << shift_weighted << ", unweighted " << shift_plain;
}

TEST(Learners, UnitRowWeightsFitTheUnweightedModelBitForBit) {
  const Weighted d = weighted_data(200, 5, 11);
  const std::vector<double> ones(d.y.size(), 1.0);
  for (const auto& entry : learner_registry()) {
    const std::string name(entry.name);
    auto a = make_learner(name, small()), b = make_learner(name, small());
    a->fit(d.x, d.y, 3);
    b->fit(d.x, d.y, ones, 3);
    EXPECT_EQ(a->to_json().dump(), b->to_json().dump()) << name;
  }
}

TEST(Learners, WeightedKnnRoundTripsItsWeights) {
  const Weighted d = weighted_data(100, 4, 13);
  auto a = make_learner("knn", small()), b = make_learner("knn", small());
  a->fit(d.x, d.y, d.w, 0);
  b->from_json(a->to_json());
  const Matrix test = test_rows(20, 4, 14);
  for (std::size_t i = 0; i < test.rows; ++i) EXPECT_EQ(a->predict(test.row(i)), b->predict(test.row(i)));
  nlohmann::json bad = a->to_json();
  bad["weights"][0] = -1.0;
  EXPECT_THROW(b->from_json(bad), Error);
  bad["weights"] = {1.0};
  EXPECT_THROW(b->from_json(bad), Error);
}

TEST(Learners, BadRowWeightsAreRefusedNamingTheRow) {
  const Weighted d = weighted_data(50, 4, 15);
  for (const auto& entry : learner_registry()) {
    auto l = make_learner(std::string(entry.name), small());
    std::vector<double> w(d.y.size(), 1.0);
    w[7] = 0;
    try {
      l->fit(d.x, d.y, w, 0);
      ADD_FAILURE() << entry.name << " accepted a weight of 0";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("row 7"), std::string::npos) << e.what();
    }
    w[7] = NAN;
    EXPECT_THROW(l->fit(d.x, d.y, w, 0), Error) << entry.name;
    w.pop_back();
    EXPECT_THROW(l->fit(d.x, d.y, w, 0), Error) << entry.name;
  }
}

}  // namespace
}  // namespace epochcast
