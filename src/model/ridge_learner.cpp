// Linear ridge (the format-3 stack's): Eigen, penalty by generalised cross-validation.
#include <Eigen/Dense>

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

namespace epochcast {
namespace {

// ---- Ridge regression on Eigen, penalty chosen by generalised cross-validation. ----

class RidgeLearner final : public Learner {
 public:
  std::string name() const override { return "ridge"; }
  std::size_t columns_read() const override { return coef_.size(); }

  void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights, std::uint64_t) override {
    check_row_weights(weights, x.rows, "ridge");
    // Row weights enter as √w on each row of the least squares: the normal equations ZᵀWZ,
    // ZᵀWy of the rows repeated, and GCV over the weighted count (unit weights: as before).
    const bool weighted = !unit_weights(weights);
    scaler_.fit(x, weighted ? weights : std::span<const double>{});
    const auto n = static_cast<Eigen::Index>(x.rows), p = static_cast<Eigen::Index>(x.cols);
    Eigen::MatrixXd z(n, p);
    std::vector<double> buf(x.cols);
    for (Eigen::Index i = 0; i < n; ++i) {
      scaler_.apply(x.row(i), buf);
      for (Eigen::Index c = 0; c < p; ++c) z(i, c) = buf[c];
    }
    Eigen::VectorXd yv = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
    double count = static_cast<double>(n);
    if (weighted) {
      const Eigen::Map<const Eigen::VectorXd> w(weights.data(), n);
      count = w.sum();
      intercept_ = w.dot(yv) / count;
      const Eigen::VectorXd root = w.cwiseSqrt();
      yv.array() -= intercept_;
      yv.array() *= root.array();
      z = root.asDiagonal() * z;
    } else {
      intercept_ = yv.mean();
      yv.array() -= intercept_;
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(z.transpose() * z);
    const Eigen::VectorXd d = eig.eigenvalues().cwiseMax(0.0);
    const Eigen::MatrixXd& v = eig.eigenvectors();
    const Eigen::VectorXd vty = v.transpose() * (z.transpose() * yv);
    double best_gcv = std::numeric_limits<double>::infinity();
    for (double lambda : {0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0}) {
      const Eigen::VectorXd beta = v * (vty.array() / (d.array() + lambda)).matrix();
      const double rss = (yv - z * beta).squaredNorm();
      const double dof = (d.array() / (d.array() + lambda)).sum();
      const double denom = count - dof;
      const double gcv = denom > 0 ? count * rss / (denom * denom)
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

}  // namespace

std::unique_ptr<Learner> make_ridge_learner(const LearnerConfig&) { return std::make_unique<RidgeLearner>(); }

}  // namespace epochcast
