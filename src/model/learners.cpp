#include "learners.hpp"

#include <xgboost/c_api.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string_view>
#include <thread>

#include "epochcast/core/error.hpp"
#include "kernel_math.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- XGBoost through its C API: RAII owners, status codes converted here. ----

void xgb_check(int status, const char* what) {
  if (status != 0)
  {
    // XGBoost appends a multi-line stack trace: the first line is the message.
    std::string why = XGBGetLastError();
    throw Error(ErrorCode::kInternal, std::string("XGBoost ") + what + ": " + why.substr(0, why.find('\n')));
  }
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
  std::size_t columns_read() const override { return cols_; }

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) override {
    XgbMatrix train(x, y);
    DMatrixHandle cache[] = {train.get()};
    auto booster = std::make_unique<XgbBooster>(cache, 1);
    booster->set("objective", "reg:squarederror");
    booster->set("tree_method", "hist");
    // 32 bins a feature, not 256: split search is most of XGBoost's fit time here and ~1,500
    // pairs do not need finer cuts (held-out MAPE of XGBoost alone equal or better: docs/model.md).
    booster->set("max_bin", "32");
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
    native_ = false;
    if (config_.single_rows) compile(&x);
  }

  double predict(std::span<const double> x) const override {
    if (native_) return native_predict(x);
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
    // The only format to_json writes (a file without the label predates it). A buffer labelled
    // "ubj" holding JSON loaded as JSON: the label named a format the file did not have.
    const std::string format = j.contains("format") ? j.at("format").get<std::string>() : "json";
    if (format != "json")
      throw Error(ErrorCode::kParse, "xgboost state: 'format' is '" + format.substr(0, 40) +
                                         "', this epochcast writes and reads only 'json' boosters");
    const std::string buffer = j.at("buffer").get<std::string>();
    cols_ = json_integer<std::size_t>(j.at("columns"));
    check_booster_json(buffer);
    auto booster = std::make_unique<XgbBooster>();
    // A damaged booster in a model file is bad input, not a bug: one line, parse error.
    if (XGBoosterLoadModelFromBuffer(booster->get(), buffer.data(), buffer.size()) != 0) {
      std::string why = XGBGetLastError();
      why = why.substr(0, why.find('\n'));
      throw Error(ErrorCode::kParse, "the XGBoost booster saved in the model file is damaged: " + why);
    }
    // The file's column count must be the booster's: predict hands XGBoost rows that wide.
    bst_ulong features = 0;
    if (XGBoosterGetNumFeature(booster->get(), &features) != 0 || features != cols_)
      throw Error(ErrorCode::kParse, "xgboost state: 'columns' is " + std::to_string(cols_) +
                                         ", the saved booster has " + std::to_string(features) + " features");
    booster->set("nthread", "1");
    booster_ = std::move(booster);
    check_trees();
    // XGBoost refuses some loaded boosters only when predicting (size_leaf_vector 5): predict
    // once here, so that is a damaged file now and not an internal error later.
    try {
      compile(nullptr);
      if (!native_) {
        std::vector<float> row(cols_, std::numeric_limits<float>::quiet_NaN());
        float out = 0;
        run_predict(row.data(), 1, &out);
      }
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInternal) throw;
      throw Error(ErrorCode::kParse, "the XGBoost booster saved in the model file is damaged: " + e.detail());
    }
  }

 private:
  // One prediction through XGBoost's C API costs ~20 µs, mostly fixed overhead (a proxy
  // DMatrix per call whose context reads cgroup files, JSON parsing of the arguments); the
  // trees themselves take ~1 µs. So single rows walk a flat copy of the booster's own trees,
  // read from its JSON model, with XGBoost's semantics (float features, `value < split`
  // goes left, missing follows default_left, leaves summed in float onto base_score). The
  // copy is used only after it reproduced XGBoost's predictions bit for bit (training rows
  // after fit; probe rows at thresholds and NaN after load); otherwise the C API stays.
  struct FlatNode {
    float split_or_leaf;
    std::int32_t feature;  // -1: leaf
    std::int32_t left, right, missing;
  };

  // XGBoost's own JSON reader accepts broken JSON ("[0,00,]") and casts values without
  // checking their type, crashing on a mutated file. So the booster must be strict JSON in the
  // layout fit() writes (gbtree, typed node arrays of one length) before XGBoost sees it.
  static void check_booster_json(std::string_view buffer) {
    auto damaged = [](const std::string& why) {
      return Error(ErrorCode::kParse, "the XGBoost booster saved in the model file is damaged: " + why);
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(buffer);
    } catch (const nlohmann::json::exception& e) {
      throw damaged(std::string("not JSON: ") + e.what());
    }
    // XGBoost's parameter objects: strings, or objects of strings.
    std::function<void(const nlohmann::json&, const char*)> strings = [&](const nlohmann::json& o, const char* what) {
      if (!o.is_object()) throw damaged(std::string(what) + " is not an object");
      for (const auto& [k, v] : o.items()) {
        if (v.is_object()) strings(v, what);
        else if (!v.is_string()) throw damaged(std::string(what) + "." + k + " is not a string");
      }
    };
    constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
    auto numbers = [&](const nlohmann::json& a, bool integer, std::size_t n, const std::string& what) {
      if (!a.is_array() || (n != kAny && a.size() != n)) throw damaged(what + " has the wrong shape");
      for (const auto& v : a)
        if (integer ? !v.is_number_integer() : !v.is_number()) throw damaged(what + " holds a non-number");
    };
    try {
      numbers(j.at("version"), true, 3, "version");
      const auto& learner = j.at("learner");
      if (learner.at("gradient_booster").at("name") != "gbtree") throw damaged("not a gbtree booster");
      strings(learner.at("learner_model_param"), "learner_model_param");
      if (!learner.at("objective").is_object() || !learner.at("objective").at("name").is_string())
        throw damaged("objective");
      for (const auto& [k, v] : learner.at("objective").items())
        if (k != "name") strings(v, "objective");
      for (const char* k : {"feature_names", "feature_types"})
        if (learner.contains(k) && (!learner[k].is_array() || !std::all_of(learner[k].begin(), learner[k].end(),
                                                                            [](const auto& x) { return x.is_string(); })))
          throw damaged(k);
      if (learner.contains("attributes")) strings(learner["attributes"], "attributes");
      const auto& model = learner.at("gradient_booster").at("model");
      strings(model.at("gbtree_model_param"), "gbtree_model_param");
      const auto& trees = model.at("trees");
      if (!trees.is_array()) throw damaged("trees is not an array");
      numbers(model.at("tree_info"), true, trees.size(), "tree_info");
      if (std::stoul(model.at("gbtree_model_param").at("num_trees").get<std::string>()) != trees.size())
        throw damaged("num_trees disagrees with the trees");
      for (std::size_t t = 0; t < trees.size(); ++t) {
        const auto& tree = trees[t];
        const std::string at = "tree " + std::to_string(t) + " ";
        strings(tree.at("tree_param"), "tree_param");
        // XGBoost files a tree under its id: a repeated id leaves a null tree (SEGV on save).
        if (!tree.at("id").is_number_integer() || tree.at("id").get<std::int64_t>() != static_cast<std::int64_t>(t))
          throw damaged(at + "has id " + tree.at("id").dump());
        const std::size_t n = std::stoul(tree.at("tree_param").at("num_nodes").get<std::string>());
        for (const char* k : {"left_children", "right_children", "parents", "split_indices", "split_type", "default_left"})
          numbers(tree.at(k), true, n, at + k);
        for (const char* k : {"base_weights", "loss_changes", "split_conditions", "sum_hessian"})
          numbers(tree.at(k), false, n, at + k);
        for (const char* k : {"categories", "categories_nodes", "categories_segments", "categories_sizes"})
          if (tree.contains(k)) numbers(tree[k], true, kAny, at + k);
      }
    } catch (const nlohmann::json::exception& e) {
      throw damaged(e.what());
    } catch (const std::logic_error& e) {  // std::stoul on a non-number
      throw damaged(std::string("a count is not a number: ") + e.what());
    }
  }

  // XGBoost loads a booster whose trees point past their nodes, at missing features or in a
  // cycle, then reads out of bounds (or loops) when predicting: refuse such a file first.
  void check_trees() const {
    bst_ulong len = 0;
    const char* buffer = nullptr;
    // XGBoost also loads boosters it then cannot save (num_trees disagreeing with the trees).
    if (XGBoosterSaveModelToBuffer(booster_->get(), R"({"format": "json"})", &len, &buffer) != 0) {
      std::string why = XGBGetLastError();
      throw Error(ErrorCode::kParse,
                  "the XGBoost booster saved in the model file is damaged: " + why.substr(0, why.find('\n')));
    }
    nlohmann::json trees;
    try {
      trees = nlohmann::json::parse(std::string_view(buffer, len))
                  .at("learner").at("gradient_booster").at("model").at("trees");
    } catch (const nlohmann::json::exception&) {
      return;  // not a gbtree layout: nothing of ours to check
    }
    auto damaged = [](std::size_t tree, const std::string& why) {
      return Error(ErrorCode::kParse, "the XGBoost booster saved in the model file is damaged: tree " +
                                          std::to_string(tree) + ": " + why);
    };
    for (std::size_t t = 0; t < trees.size(); ++t) {
      std::vector<std::int64_t> left, right, feature;
      try {
        left = trees[t].at("left_children").get<std::vector<std::int64_t>>();
        right = trees[t].at("right_children").get<std::vector<std::int64_t>>();
        feature = trees[t].at("split_indices").get<std::vector<std::int64_t>>();
      } catch (const nlohmann::json::exception& e) {
        throw damaged(t, e.what());
      }
      const std::size_t n = left.size();
      if (n == 0 || right.size() != n || feature.size() != n) throw damaged(t, "node arrays of different lengths");
      std::vector<char> seen(n, 0);
      std::vector<std::size_t> todo{0};
      while (!todo.empty()) {
        const std::size_t i = todo.back();
        todo.pop_back();
        if (seen[i]++) throw damaged(t, "node " + std::to_string(i) + " is reached twice (a cycle)");
        if (left[i] == -1) continue;  // a leaf
        for (const std::int64_t child : {left[i], right[i]})
          if (child < 0 || static_cast<std::size_t>(child) >= n)
            throw damaged(t, "node " + std::to_string(i) + " has child " + std::to_string(child) + " of " +
                                 std::to_string(n) + " nodes");
        // XGBoost's predictor takes the right child as left + 1 (GetNextNode): anything else
        // walks past the tree (a hang or SEGV found by fuzz_model with the children swapped).
        if (right[i] != left[i] + 1)
          throw damaged(t, "node " + std::to_string(i) + " has children " + std::to_string(left[i]) + " and " +
                               std::to_string(right[i]) + ", not adjacent");
        if (feature[i] < 0 || static_cast<std::size_t>(feature[i]) >= cols_)
          throw damaged(t, "node " + std::to_string(i) + " splits on feature " + std::to_string(feature[i]) +
                               " of " + std::to_string(cols_));
        todo.push_back(static_cast<std::size_t>(left[i]));
        todo.push_back(static_cast<std::size_t>(right[i]));
      }
    }
  }

  void compile(const Matrix* check_rows) {
    native_ = false;
    trees_.clear();
    roots_.clear();
    bst_ulong len = 0;
    const char* buffer = nullptr;
    xgb_check(XGBoosterSaveModelToBuffer(booster_->get(), R"({"format": "json"})", &len, &buffer),
              "XGBoosterSaveModelToBuffer");
    try {
      const auto j = nlohmann::json::parse(std::string_view(buffer, len));
      const auto& learner = j.at("learner");
      if (learner.at("gradient_booster").at("name") != "gbtree" ||
          learner.at("objective").at("name") != "reg:squarederror" ||
          learner.at("learner_model_param").at("num_target").get<std::string>() != "1")
        return;
      base_score_ = std::stof(learner.at("learner_model_param").at("base_score").get<std::string>());
      const auto& model = learner.at("gradient_booster").at("model");
      if (model.at("gbtree_model_param").at("num_parallel_tree").get<std::string>() != "1") return;
      for (const auto& t : model.at("trees")) {
        const auto left = t.at("left_children").get<std::vector<std::int32_t>>();
        const auto right = t.at("right_children").get<std::vector<std::int32_t>>();
        const auto split = t.at("split_conditions").get<std::vector<double>>();
        const auto feature = t.at("split_indices").get<std::vector<std::int64_t>>();
        const auto default_left = t.at("default_left").get<std::vector<int>>();
        const auto type = t.at("split_type").get<std::vector<int>>();
        const std::size_t n = left.size();
        if (n == 0 || right.size() != n || split.size() != n || feature.size() != n ||
            default_left.size() != n || type.size() != n)
          return;
        const auto root = static_cast<std::int32_t>(trees_.size());
        roots_.push_back(root);
        for (std::size_t i = 0; i < n; ++i) {
          FlatNode node{static_cast<float>(split[i]), -1, 0, 0, 0};
          if (left[i] >= 0) {
            // Only numeric splits on existing features with forward children are copied.
            if (type[i] != 0 || feature[i] < 0 || static_cast<std::size_t>(feature[i]) >= cols_ ||
                left[i] <= static_cast<std::int32_t>(i) || right[i] <= static_cast<std::int32_t>(i) ||
                static_cast<std::size_t>(left[i]) >= n || static_cast<std::size_t>(right[i]) >= n)
              return;
            node.feature = static_cast<std::int32_t>(feature[i]);
            node.left = root + left[i];
            node.right = root + right[i];
            node.missing = default_left[i] ? node.left : node.right;
          }
          trees_.push_back(node);
        }
      }
    } catch (const nlohmann::json::exception&) {
      return;  // an unexpected layout: keep using the C API
    }
    Matrix probe = check_rows ? Matrix() : probe_rows();
    const Matrix& rows = check_rows ? *check_rows : probe;
    if (rows.rows == 0) return;
    std::vector<float> values(rows.data.begin(), rows.data.end()), expected(rows.rows);
    run_predict(values.data(), rows.rows, expected.data());
    native_ = true;
    for (std::size_t i = 0; i < rows.rows; ++i)
      if (static_cast<float>(native_predict(rows.row(i))) != expected[i]) {
        native_ = false;
        return;
      }
  }

  // Rows exercising every split: each feature at, just below and just above its thresholds,
  // and missing.
  [[nodiscard]] Matrix probe_rows() const {
    std::vector<std::vector<float>> cuts(cols_);
    for (const auto& node : trees_)
      if (node.feature >= 0) cuts[static_cast<std::size_t>(node.feature)].push_back(node.split_or_leaf);
    constexpr std::size_t kRows = 64;
    Matrix m(kRows, cols_);
    for (std::size_t r = 0; r < kRows; ++r)
      for (std::size_t c = 0; c < cols_; ++c) {
        const auto& cut = cuts[c];
        double v = 0;
        if ((r + c) % 9 == 8) {
          v = kNaN;
        } else if (!cut.empty()) {
          const float t = cut[(r * 7 + c * 3) % cut.size()];
          const int side = static_cast<int>((r + 2 * c) % 3);
          v = side == 0 ? t : std::nextafter(t, side == 1 ? -INFINITY : INFINITY);
        }
        m.data[r * cols_ + c] = v;
      }
    return m;
  }

  [[nodiscard]] double native_predict(std::span<const double> x) const {
    float out = base_score_;
    for (const std::int32_t root : roots_) {
      std::int32_t n = root;
      while (trees_[static_cast<std::size_t>(n)].feature >= 0) {
        const FlatNode& node = trees_[static_cast<std::size_t>(n)];
        const double v = x[static_cast<std::size_t>(node.feature)];
        n = std::isnan(v) ? node.missing : static_cast<float>(v) < node.split_or_leaf ? node.left : node.right;
      }
      out += trees_[static_cast<std::size_t>(n)].split_or_leaf;
    }
    return out;
  }

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
  bool native_ = false;
  float base_score_ = 0;
  std::vector<FlatNode> trees_;  // all trees, children as absolute indices
  std::vector<std::int32_t> roots_;
};

// ---- Ridge regression on Eigen, penalty chosen by generalised cross-validation. ----

class RidgeLearner final : public Learner {
 public:
  std::string name() const override { return "ridge"; }
  std::size_t columns_read() const override { return coef_.size(); }

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

// ---- Extra trees (Geurts et al. 2006): random thresholds, best of all features per node. ----

// xoshiro256** seeded through splitmix64: a few cycles a draw, and the same stream on every
// platform and standard library (std:: distributions differ between libstdc++ and libc++).
// Draw runs use a local copy: GCC updates a state in memory with 128-bit vectors reading what
// the previous draw stored as scalars, a store-forwarding stall per draw (13 % of a fit).
class FastRng {
 public:
  explicit FastRng(std::uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Uniform in [0, bound), bound < 2^32, unbiased (Lemire's multiply-and-reject).
  std::uint32_t below(std::uint32_t bound) {
    std::uint64_t m = (next() >> 32) * bound;
    if (static_cast<std::uint32_t>(m) < bound) {
      const std::uint32_t floor = static_cast<std::uint32_t>(-bound) % bound;
      while (static_cast<std::uint32_t>(m) < floor) m = (next() >> 32) * bound;
    }
    return static_cast<std::uint32_t>(m >> 32);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EPOCHCAST_TREES_AVX2 1
#define EPOCHCAST_AVX2 __attribute__((target("avx2")))
#define EPOCHCAST_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))
#endif

// The split scan's instruction set, chosen once (see learners.hpp); -1: not chosen yet.
std::atomic<int> g_tree_simd{-1};

}  // namespace

bool tree_simd_available(TreeSimd s) {
  if (s == TreeSimd::kBaseline) return true;
#if EPOCHCAST_TREES_AVX2
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the YMM / ZMM and mask registers.
  if (s == TreeSimd::kAvx2) return __builtin_cpu_supports("avx2") != 0;
  // target("avx512f") lets GCC emit AVX2 and VEX-encoded FMA instructions as well (avx512f
  // implies them to the compiler, not to CPUID: a hypervisor can hide AVX2 or FMA and show
  // AVX-512), so the AVX-512 path asks for them too, as signal.cpp's does for AVX2.
  return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0 &&
         __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512dq") != 0 &&
         __builtin_cpu_supports("avx512vl") != 0;
#else
  return false;
#endif
}

TreeSimd tree_simd() {
  int v = g_tree_simd.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("EPOCHCAST_SIMD");
    const std::string_view forced = env != nullptr ? env : "";
    TreeSimd widest = TreeSimd::kBaseline;
    if (forced != "baseline" && tree_simd_available(TreeSimd::kAvx2)) widest = TreeSimd::kAvx2;
    if (forced != "baseline" && forced != "avx2" && tree_simd_available(TreeSimd::kAvx512)) widest = TreeSimd::kAvx512;
    v = static_cast<int>(widest);
    g_tree_simd.store(v, std::memory_order_relaxed);
  }
  return static_cast<TreeSimd>(v);
}

TreeSimd set_tree_simd(TreeSimd s) {
  const TreeSimd prev = tree_simd();
  g_tree_simd.store(static_cast<int>(tree_simd_available(s) ? s : TreeSimd::kBaseline), std::memory_order_relaxed);
  return prev;
}

void reset_tree_simd() { g_tree_simd.store(-1, std::memory_order_relaxed); }

namespace {

class ExtraTreesLearner final : public Learner {
 public:
  explicit ExtraTreesLearner(const LearnerConfig& c)
      : trees_wanted_(std::max(1, c.trees)), min_leaf_(std::max(1, c.tree_min_leaf)),
        threads_(std::max(1, c.threads)), max_features_(c.tree_max_features) {}
  std::string name() const override { return "extra_trees"; }
  std::size_t columns_read() const override { return cols_; }

  struct Node {
    int feature = -1;  // -1: leaf
    double threshold = 0;
    int left = -1, right = -1;
    double value = 0;
  };

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) override {
    // Missing values take the column median: trees then see them as typical.
    fill_.assign(x.cols, 0.0);
    std::vector<double> v;
    for (std::size_t c = 0; c < x.cols; ++c) {
      v.clear();
      for (std::size_t i = 0; i < x.rows; ++i)
        if (std::isfinite(x.data[i * x.cols + c])) v.push_back(x.data[i * x.cols + c]);
      if (!v.empty()) {
        std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
        fill_[c] = v[v.size() / 2];
      }
    }
    // Row-major copy with missing values filled: a node reads its candidate features row by
    // row, and a small node's rows stay in L1 across all of them (columns would not).
    std::vector<double> filled(x.data);
    for (std::size_t i = 0; i < x.rows; ++i)
      for (std::size_t c = 0; c < x.cols; ++c)
        if (!std::isfinite(filled[i * x.cols + c])) filled[i * x.cols + c] = fill_[c];
    if (x.cols >= (1ULL << 31) || x.rows >= (1ULL << 32))
      throw Error(ErrorCode::kInvalidArgument, "extra_trees: too many rows or columns");
    // Split scores from labels in fixed point: integer sums are exact in any order, so the
    // scan needs no chain of dependent floating-point adds. Scaled so any sum stays below
    // 2^52 (exact as a double); leaf values are still means of the labels themselves.
    double total = 0;
    for (double v : y) {
      if (!std::isfinite(v)) throw Error(ErrorCode::kInvalidArgument, "extra_trees: a label is not a finite number");
      total += std::abs(v);
    }
    const int shift = total > 0 ? 51 - std::ilogb(total) : 0;
    std::vector<std::int64_t> y_fixed(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) y_fixed[i] = std::llround(std::ldexp(y[i], shift));
    cols_ = x.cols;
    trees_.assign(static_cast<std::size_t>(trees_wanted_), {});
    // The prediction layout is built with the trees (children allocated side by side when a node
    // splits), not by a breadth-first pass afterwards (flatten: 2 % of a stack fit in perf).
    std::vector<std::vector<FlatNode>> flat_trees(trees_.size());
    const Data data{filled.data(), x.rows, x.cols, y, y_fixed.data()};
    // Each tree has its own generator seeded from (seed, tree): same result for any thread count.
    auto work = [&](int first, int step) {
      Scratch scratch{std::vector<std::uint32_t>(x.rows), std::vector<double>(x.rows * kLanes),
                      std::vector<std::int64_t>(x.rows), std::vector<std::uint32_t>(x.cols),
                      std::vector<std::uint32_t>(x.cols + kLanes), std::vector<double>(x.cols + kLanes),
                      std::vector<char>(x.cols, 0), {}, std::vector<char>(x.rows),
                      std::vector<std::uint32_t>(x.rows), std::vector<double>(x.cols + kLanes),
                      std::vector<double>(x.cols + kLanes)};
      for (int t = first; t < trees_wanted_; t += step) {
        FastRng rng(seed * 1000003ULL + static_cast<std::uint64_t>(t));
        std::iota(scratch.idx.begin(), scratch.idx.end(), 0U);
        auto& nodes = trees_[static_cast<std::size_t>(t)];
        auto& flat = flat_trees[static_cast<std::size_t>(t)];
        flat.assign(1, {});
        build(data, 0, x.rows, nodes, flat, 0, rng, scratch);
      }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads_; ++w) pool.emplace_back(work, w, threads_);
    work(0, threads_);
    for (auto& th : pool) th.join();
    flat_.clear();
    roots_.clear();
    std::size_t total_nodes = 0;
    for (const auto& flat : flat_trees) total_nodes += flat.size();
    flat_.reserve(total_nodes);
    for (const auto& flat : flat_trees) {
      const auto base = static_cast<std::uint32_t>(flat_.size());
      roots_.push_back(base);
      for (FlatNode node : flat) {
        if (node.feature >= 0) node.left += base;
        flat_.push_back(node);
      }
    }
  }

  double predict(std::span<const double> x) const override {
    // Fill missing values once per row rather than at every node.
    double row_buf[256];
    std::vector<double> row_heap;
    double* row = row_buf;
    if (cols_ > std::size(row_buf)) {
      row_heap.resize(cols_);
      row = row_heap.data();
    }
    for (std::size_t c = 0; c < cols_; ++c) row[c] = std::isfinite(x[c]) ? x[c] : fill_[c];
    // Four trees walked together: their node loads (cache misses) overlap. The leaves are
    // still summed in tree order.
    auto step = [&](std::uint32_t n) {
      const FlatNode& node = flat_[n];
      return node.feature < 0 ? n : node.left + (row[static_cast<std::size_t>(node.feature)] <= node.value ? 0U : 1U);
    };
    double sum = 0;
    std::size_t t = 0;
    for (; t + 4 <= roots_.size(); t += 4) {
      std::uint32_t n0 = roots_[t], n1 = roots_[t + 1], n2 = roots_[t + 2], n3 = roots_[t + 3];
      while (flat_[n0].feature >= 0 || flat_[n1].feature >= 0 || flat_[n2].feature >= 0 || flat_[n3].feature >= 0) {
        n0 = step(n0);
        n1 = step(n1);
        n2 = step(n2);
        n3 = step(n3);
      }
      sum += flat_[n0].value;
      sum += flat_[n1].value;
      sum += flat_[n2].value;
      sum += flat_[n3].value;
    }
    for (; t < roots_.size(); ++t) {
      std::uint32_t n = roots_[t];
      while (flat_[n].feature >= 0) n = step(n);
      sum += flat_[n].value;
    }
    return roots_.empty() ? 0.0 : sum / static_cast<double>(roots_.size());
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
    cols_ = json_integer<std::size_t>(j.at("columns"));
    fill_ = j.at("fill").get<std::vector<double>>();
    min_leaf_ = json_integer<int>(j.at("min_leaf"));
    trees_.clear();
    for (const auto& tj : j.at("trees")) {
      const auto f = json_integers<int>(tj.at("feature"));
      const auto t = tj.at("threshold").get<std::vector<double>>();
      const auto l = json_integers<int>(tj.at("left"));
      const auto r = json_integers<int>(tj.at("right"));
      const auto v = tj.at("value").get<std::vector<double>>();
      const std::size_t n = f.size();
      if (n == 0 || t.size() != n || l.size() != n || r.size() != n || v.size() != n)
        throw Error(ErrorCode::kParse, "extra_trees state: inconsistent node arrays");
      std::vector<Node> nodes(n);
      std::vector<char> has_parent(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        nodes[i] = {f[i], t[i], l[i], r[i], v[i]};
        // Children must point forward (no cycles), have one parent (a tree, not a graph that
        // unfolds exponentially) and features must exist.
        if (f[i] >= 0 && (static_cast<std::size_t>(f[i]) >= cols_ || l[i] <= static_cast<int>(i) ||
                          r[i] <= static_cast<int>(i) || static_cast<std::size_t>(l[i]) >= n ||
                          static_cast<std::size_t>(r[i]) >= n || l[i] == r[i] ||
                          has_parent[static_cast<std::size_t>(l[i])]++ || has_parent[static_cast<std::size_t>(r[i])]++))
          throw Error(ErrorCode::kParse, "extra_trees state: bad node " + std::to_string(i));
      }
      trees_.push_back(std::move(nodes));
    }
    if (fill_.size() != cols_) throw Error(ErrorCode::kParse, "extra_trees state: bad fill size");
    // The forest's prediction is the mean over its trees: none is 0/0 in every answer.
    if (trees_.empty()) throw Error(ErrorCode::kParse, "extra_trees state: no trees");
    flatten();
  }

 private:
  struct Data {
    const double* x;  // row-major, missing filled
    std::size_t rows, cols;
    std::span<const double> y;
    const std::int64_t* y_fixed;
  };
  struct Scratch {
    std::vector<std::uint32_t> idx;  // the rows, partitioned node by node
    std::vector<double> values;      // a group of candidate features of the node's rows, row by row
    std::vector<std::int64_t> y;     // the node's labels, fixed point
    std::vector<std::uint32_t> order;
    std::vector<std::uint32_t> active;  // the candidates not known constant, in order
    std::vector<double> u;              // their threshold draws
    // Features constant in the current node: constant in its whole subtree, never scanned again.
    std::vector<char> constant;
    std::vector<std::size_t> marked;  // the features set in `constant`, innermost node last
    std::vector<char> side;           // a split's rows: at or below the threshold
    std::vector<std::uint32_t> slots;  // and the positions it swaps
    std::vector<double> score, threshold;  // AVX-512: each candidate's score (-inf: no split) and threshold
  };
  // Prediction layout: 16 bytes a node, children side by side (breadth first per tree after
  // loading a model; after fit, in the order the nodes split).
  struct FlatNode {
    double value;           // threshold (split) or mean (leaf)
    std::int32_t feature;   // -1: leaf
    std::uint32_t left;     // right child = left + 1
  };

  // Builds the node's subtree in preorder into `nodes` (the model file's layout) and into `flat`
  // (prediction layout) from `slot` on.
  int build(const Data& d, std::size_t begin, std::size_t end, std::vector<Node>& nodes,
            std::vector<FlatNode>& flat, std::uint32_t slot, FastRng& rng, Scratch& s) {
    const std::size_t n = end - begin;
    const std::uint32_t* idx = s.idx.data() + begin;
    std::int64_t* yv = s.y.data();
    double* vals = s.values.data();
    double sum = 0;
    std::int64_t sum_fixed = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += d.y[idx[i]];
      yv[i] = d.y_fixed[idx[i]];
      sum_fixed += yv[i];
    }
    const int id = static_cast<int>(nodes.size());
    nodes.push_back(Node{-1, 0, -1, -1, sum / static_cast<double>(n)});
    flat[slot] = {sum / static_cast<double>(n), -1, 0};
    if (n < 2 * static_cast<std::size_t>(min_leaf_)) return id;
    // A random subset of the features per node (partial Fisher-Yates, reset per node so the
    // draw depends only on the tree's own generator).
    std::vector<std::uint32_t>& order = s.order;
    std::iota(order.begin(), order.end(), 0U);
    const std::size_t tries = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::ceil(max_features_ * static_cast<double>(d.cols))), 1, d.cols);
    FastRng r = rng;  // a local copy stays in registers (see FastRng)
    for (std::size_t j = 0; j < tries; ++j) std::swap(order[j], order[j + r.below(static_cast<std::uint32_t>(d.cols - j))]);
    rng = r;
    const std::size_t marked_before = s.marked.size();
    Best best{-std::numeric_limits<double>::infinity(), -1, 0.0};
    const Scan scan{d, idx, n, yv, vals, sum_fixed, static_cast<std::size_t>(min_leaf_), order.data(), tries};
#if EPOCHCAST_TREES_AVX2
    const TreeSimd simd = tree_simd();
    if (simd == TreeSimd::kAvx512) best = scan_avx512(scan, rng, s);
    else if (simd == TreeSimd::kAvx2) best = scan_avx2(scan, rng, s);
    else
#endif
      best = scan_base(scan, rng, s);
    const int best_feature = best.feature;
    const double best_threshold = best.threshold;
    if (best_feature < 0) {
      unmark(s, marked_before);
      return id;
    }
    const std::size_t mid =
        begin + partition_like_std(s.idx.data() + begin, n, d.x + static_cast<std::size_t>(best_feature), d.cols,
                                   best_threshold, s.side.data(), s.slots.data());
    const auto kids = static_cast<std::uint32_t>(flat.size());
    flat.resize(flat.size() + 2);
    flat[slot] = {best_threshold, best_feature, kids};
    const int left = build(d, begin, mid, nodes, flat, kids, rng, s);
    const int right = build(d, mid, end, nodes, flat, kids + 1, rng, s);
    unmark(s, marked_before);
    Node& node = nodes[static_cast<std::size_t>(id)];
    node.feature = best_feature;
    node.threshold = best_threshold;
    node.left = left;
    node.right = right;
    return id;
  }

  // std::partition(idx, idx + n, row's value <= t) with the same resulting order (leaf means
  // are summed in it), without its branches, which the random side of each row mispredicted
  // (a third of build() in perf). std::partition swaps the k-th row from the left that belongs
  // right with the k-th row from the right that belongs left, until they meet at the left count.
  static std::size_t partition_like_std(std::uint32_t* idx, std::size_t n, const double* col, std::size_t stride,
                                        double t, char* side, std::uint32_t* slots) {
    std::size_t left = 0;
    for (std::size_t i = 0; i < n; ++i) {
      side[i] = col[static_cast<std::size_t>(idx[i]) * stride] <= t;
      left += static_cast<std::size_t>(side[i]);
    }
    std::size_t out_left = 0, in_right = 0;  // right rows before `left`, left rows from it
    std::uint32_t* const from_right = slots + left;
    for (std::size_t i = 0; i < left; ++i) {
      slots[out_left] = static_cast<std::uint32_t>(i);
      out_left += static_cast<std::size_t>(side[i] == 0);
    }
    for (std::size_t i = n; i-- > left;) {
      from_right[in_right] = static_cast<std::uint32_t>(i);
      in_right += static_cast<std::size_t>(side[i]);
    }
    for (std::size_t k = 0; k < out_left; ++k) std::swap(idx[slots[k]], idx[from_right[k]]);
    return left;
  }

  struct Best {
    double score;
    int feature;
    double threshold;
  };
  struct Scan {
    const Data& d;
    const std::uint32_t* idx;  // the node's rows
    std::size_t n;
    const std::int64_t* y;     // their labels, fixed point
    double* vals;
    std::int64_t sum_fixed;
    std::size_t min_leaf;
    const std::uint32_t* order;  // the features to try, first `tries`
    std::size_t tries;
  };
  // One draw per candidate, in order, whether or not it is scanned (a candidate constant in an
  // ancestor is skipped but still consumes its draw); the candidates to scan and their draws
  // go to s.active / s.u. Without a branch (which candidates are constant is random) and with
  // the arrays' addresses in registers (the stores kept GCC reloading them from `s`).
  static std::size_t draw_candidates(const Scan& q, FastRng& rng, Scratch& s) {
    FastRng r = rng;  // a local copy stays in registers (see FastRng)
    double* const u = s.u.data();
    std::uint32_t* const active = s.active.data();
    const char* const constant = s.constant.data();
    std::size_t na = 0;
    for (std::size_t j = 0; j < q.tries; ++j) {
      const std::uint32_t c = q.order[j];
      u[na] = r.unit();
      active[na] = c;
      na += static_cast<std::size_t>(constant[c] == 0);
    }
    rng = r;
    return na;
  }
  // The node's candidate features: for each, min/max over the node, a uniform threshold in
  // between, the label sum at or below it, the variance-reduction score; the best wins.
  // Features go through in groups of one vector's lanes (4 with AVX2, 2 with SSE2), a lane
  // each: a row's values of the group are next to each other in the row-major copy, and a
  // group has no per-feature loop tails, horizontal reductions or branches (those, not the
  // arithmetic, were most of a node's cost: nodes average ~30 rows). Draws, thresholds and the
  // order in which scores are compared are those of one feature at a time, so both paths give
  // the same trees bit for bit (min/max and integer sums are exact in any order).
#define EPOCHCAST_TREES_SCAN(D, I, W, LOAD)                                                                   \
  Best best{-std::numeric_limits<double>::infinity(), -1, 0.0};                                        \
  const std::size_t na = draw_candidates(q, rng, s);                                                   \
  const std::size_t cols = q.d.cols, n = q.n;                                                          \
  const double* const x = q.d.x;                                                                       \
  const std::uint32_t* const idx = q.idx;                                                              \
  const std::int64_t* const y = q.y;                                                                   \
  double* const vals = q.vals;                                                                         \
  constexpr double kInf = std::numeric_limits<double>::infinity();                                     \
  for (std::size_t k = 0; k < na; k += W) {                                                            \
    const std::size_t w = std::min<std::size_t>(W, na - k);                                            \
    std::uint32_t f[4];                                                                                \
    D u, lo, hi;                                                                                       \
    for (std::size_t l = 0; l < 4; ++l) f[l] = s.active[k + std::min(l, w - 1)]; /* short group: repeat the last */ \
    for (std::size_t l = 0; l < W; ++l) {                                                              \
      u[l] = s.u[k + std::min(l, w - 1)];                                                              \
      lo[l] = kInf;                                                                                    \
      hi[l] = -kInf;                                                                                   \
    }                                                                                                  \
    const std::uint32_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3];                                    \
    (void)f2, (void)f3;                                                                                \
    for (std::size_t i = 0; i < n; ++i) {                                                              \
      const double* row = x + static_cast<std::size_t>(idx[i]) * cols;                                \
      const D v = LOAD;                                                                                \
      std::memcpy(vals + i * W, &v, sizeof v);                                                         \
      lo = v < lo ? v : lo;                                                                            \
      hi = v > hi ? v : hi;                                                                            \
    }                                                                                                  \
    const D t = lo + u * (hi - lo);                                                                    \
    I sum = {}, neg_count = {};                                                                        \
    for (std::size_t i = 0; i < n; ++i) {                                                              \
      D v;                                                                                             \
      std::memcpy(&v, vals + i * W, sizeof v);                                                         \
      const I m = v <= t; /* all ones where true */                                                    \
      sum += y[i] & m;                                                                                 \
      neg_count += m;                                                                                  \
    }                                                                                                  \
    for (std::size_t l = 0; l < w; ++l) {                                                              \
      const std::uint32_t c = f[l];                                                                    \
      if (!(hi[l] > lo[l])) {                                                                          \
        s.constant[c] = 1;                                                                             \
        s.marked.push_back(c);                                                                         \
        continue;                                                                                      \
      }                                                                                                \
      const auto left_n = static_cast<std::size_t>(-neg_count[l]), right_n = q.n - left_n;             \
      if (left_n < q.min_leaf || right_n < q.min_leaf) continue;                                       \
      const auto ls = static_cast<double>(sum[l]), rs = static_cast<double>(q.sum_fixed - sum[l]);     \
      /* Maximising this is maximising the variance reduction. */                                      \
      const double score = ls * ls / static_cast<double>(left_n) + rs * rs / static_cast<double>(right_n); \
      if (score > best.score) best = {score, static_cast<int>(c), t[l]};                               \
    }                                                                                                  \
  }                                                                                                    \
  return best;

  static constexpr std::size_t kLanes = 8;  // the widest group (values scratch: rows × lanes)
  using D2 = double __attribute__((vector_size(16)));
  using I2 = std::int64_t __attribute__((vector_size(16)));
  // LOAD: the group's values of one row as one vector from scalars (set lane by lane, GCC
  // went through the stack: store-forwarding stalls made the fit 2x slower).
  static Best scan_base(const Scan& q, FastRng& rng, Scratch& s) {
    EPOCHCAST_TREES_SCAN(D2, I2, 2, (D2{row[f0], row[f1]}))
  }
#if EPOCHCAST_TREES_AVX2
  using D4 = double __attribute__((vector_size(32)));
  using I4 = std::int64_t __attribute__((vector_size(32)));
  EPOCHCAST_AVX2 static Best scan_avx2(const Scan& q, FastRng& rng, Scratch& s) {
    EPOCHCAST_TREES_SCAN(D4, I4, 4, (D4{row[f0], row[f1], row[f2], row[f3]}))
  }
  // AVX-512: eight candidate features a group, a row's eight values in one gather (the group's
  // column offsets fixed, the row's address the base), min/max in zmm registers; the label pass
  // compares into a mask register and adds the row's label (broadcast from memory) and a count
  // under it. The same draws, thresholds (no FMA: three separate operations, as the other paths)
  // and score comparisons in feature order, so the same trees as the other paths bit for bit.
  using D8 = double __attribute__((vector_size(64)));
  EPOCHCAST_AVX512 static Best scan_avx512(const Scan& q, FastRng& rng, Scratch& s) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    Best best{-kInf, -1, 0.0};
    const std::size_t na = draw_candidates(q, rng, s);
    if (na == 0) return best;
    // A short last group repeats the last candidate (its lanes are never scored).
    for (std::size_t j = na; j % 8 != 0; ++j) {
      s.u[j] = s.u[na - 1];
      s.active[j] = s.active[na - 1];
    }
    const std::size_t cols = q.d.cols, n = q.n;
    const double* const x = q.d.x;
    const std::uint32_t* const idx = q.idx;
    const std::int64_t* const y = q.y;
    double* const vals = q.vals;
    const __m512i one = _mm512_set1_epi64(1), min_leaf = _mm512_set1_epi64(static_cast<std::int64_t>(q.min_leaf)),
                  rows = _mm512_set1_epi64(static_cast<std::int64_t>(n)), total = _mm512_set1_epi64(q.sum_fixed);
    const __m512d no_split = _mm512_set1_pd(-kInf);
    __m512d top = no_split;  // the best score in each lane so far
    for (std::size_t k = 0; k < na; k += 8) {
      const std::size_t w = std::min<std::size_t>(8, na - k);
      const std::uint32_t* f = s.active.data() + k;
      const std::size_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4], f5 = f[5], f6 = f[6], f7 = f[7];
      D8 lo = _mm512_set1_pd(kInf), hi = _mm512_set1_pd(-kInf);
      for (std::size_t i = 0; i < n; ++i) {
        const double* row = x + static_cast<std::size_t>(idx[i]) * cols;
        const D8 v = D8{row[f0], row[f1], row[f2], row[f3], row[f4], row[f5], row[f6], row[f7]};
        std::memcpy(vals + i * 8, &v, sizeof v);
        lo = v < lo ? v : lo;  // vminpd / vmaxpd, in row order as the other paths
        hi = v > hi ? v : hi;
      }
      // t = lo + u (hi - lo) rounded after each operation, as the other paths: AVX-512F has FMA
      // and GCC contracts a product and a sum in C++ (-ffp-contract=fast, even with -std=c++20),
      // so the product goes through an empty asm statement that it cannot see through.
      const __m512d span = _mm512_sub_pd(hi, lo);
      __m512d step = _mm512_mul_pd(_mm512_loadu_pd(s.u.data() + k), span);
      __asm__("" : "+v"(step));
      const __m512d t = _mm512_add_pd(lo, step);
      __m512i sum = _mm512_setzero_si512(), count = _mm512_setzero_si512();
      for (std::size_t i = 0; i < n; ++i) {
        const __mmask8 m = _mm512_cmp_pd_mask(_mm512_loadu_pd(vals + i * 8), t, _CMP_LE_OQ);
        sum = _mm512_mask_add_epi64(sum, m, sum, _mm512_set1_epi64(y[i]));
        count = _mm512_mask_add_epi64(count, m, count, one);
      }
      // Scores of the group's lanes at once (the same operations as one at a time, so the same
      // bits); lanes that cannot split get -inf.
      const auto lanes = static_cast<__mmask8>(w == 8 ? 0xFF : (1U << w) - 1);
      const __mmask8 constant = _mm512_mask_cmp_pd_mask(lanes, hi, lo, _CMP_NGT_UQ);  // !(hi > lo)
      for (unsigned bits = constant; bits != 0; bits &= bits - 1) {
        const std::uint32_t c = f[__builtin_ctz(bits)];
        s.constant[c] = 1;
        s.marked.push_back(c);
      }
      const __m512i right = _mm512_sub_epi64(rows, count);
      const __mmask8 ok = _mm512_mask_cmpge_epi64_mask(static_cast<__mmask8>(lanes & ~constant), count, min_leaf) &
                          _mm512_cmpge_epi64_mask(right, min_leaf);
      const __m512d ls = _mm512_cvtepi64_pd(sum), rs = _mm512_cvtepi64_pd(_mm512_sub_epi64(total, sum));
      const __m512d score = _mm512_add_pd(_mm512_maskz_div_pd(ok, _mm512_mul_pd(ls, ls), _mm512_cvtepi64_pd(count)),
                                          _mm512_maskz_div_pd(ok, _mm512_mul_pd(rs, rs), _mm512_cvtepi64_pd(right)));
      const __m512d scored = _mm512_mask_blend_pd(ok, no_split, score);
      _mm512_storeu_pd(s.score.data() + k, scored);
      _mm512_storeu_pd(s.threshold.data() + k, t);
      top = _mm512_max_pd(scored, top);
    }
    // The first candidate with the highest score, as comparing one at a time in order would.
    const double high = _mm512_reduce_max_pd(top);
    if (!(high > -kInf)) return best;
    const __m512d high_v = _mm512_set1_pd(high);
    for (std::size_t k = 0;; k += 8) {
      const __mmask8 at = _mm512_cmp_pd_mask(_mm512_loadu_pd(s.score.data() + k), high_v, _CMP_EQ_OQ);
      if (at != 0) {
        const std::size_t j = k + static_cast<std::size_t>(__builtin_ctz(at));
        return {high, static_cast<int>(s.active[j]), s.threshold[j]};
      }
    }
  }
#endif
#undef EPOCHCAST_TREES_SCAN

  static void unmark(Scratch& s, std::size_t keep) {
    for (std::size_t k = keep; k < s.marked.size(); ++k) s.constant[s.marked[k]] = 0;
    s.marked.resize(keep);
  }

  void flatten() {
    flat_.clear();
    roots_.clear();
    std::vector<std::pair<int, std::uint32_t>> queue;  // (node in the tree, slot in flat_)
    for (const auto& nodes : trees_) {
      const auto root = static_cast<std::uint32_t>(flat_.size());
      roots_.push_back(root);
      flat_.push_back({});
      queue.assign(1, {0, root});
      for (std::size_t q = 0; q < queue.size(); ++q) {
        const auto [i, slot] = queue[q];
        const Node& node = nodes[static_cast<std::size_t>(i)];
        if (node.feature < 0) {
          flat_[slot] = {node.value, -1, 0};
          continue;
        }
        const auto left = static_cast<std::uint32_t>(flat_.size());
        flat_[slot] = {node.threshold, node.feature, left};
        flat_.push_back({});
        flat_.push_back({});
        queue.push_back({node.left, left});
        queue.push_back({node.right, left + 1});
      }
    }
  }

  int trees_wanted_, min_leaf_, threads_;
  double max_features_;
  std::size_t cols_ = 0;
  std::vector<double> fill_;
  std::vector<std::vector<Node>> trees_;  // the model file's layout
  std::vector<FlatNode> flat_;
  std::vector<std::uint32_t> roots_;
};

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

KernelData kernel_data(const Matrix& x, std::span<const double> y, const std::vector<std::size_t>& columns,
                       int basis, std::uint64_t seed) {
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
  k.scaler.fit(sub);
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

  void fit(const Matrix& x, std::span<const double> y, std::uint64_t seed) override {
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
      choice = tune_kernel_ridge(x, y, {}, c, seed);
    }
    const KernelData k = kernel_data(x, y, columns_, config_.kernel_basis, seed);
    const std::size_t m = k.basis_rows.size(), d = k.d;
    alpha_.assign(m, 0.0);
    kernel_fns().solve(k.z.data(), static_cast<std::ptrdiff_t>(k.n), static_cast<std::ptrdiff_t>(d), y.data(),
                       k.basis_rows.data(), static_cast<std::ptrdiff_t>(m), choice.length_scale, choice.lambda,
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
    columns_ = j.at("columns").get<std::vector<std::size_t>>();
    scaler_.from_json(j.at("scaler"));
    length_scale_ = j.at("length_scale").get<double>();
    lambda_ = j.at("lambda").get<double>();
    intercept_ = j.at("intercept").get<double>();
    basis_.rows = j.at("rows").get<std::size_t>();
    basis_.cols = j.at("cols").get<std::size_t>();
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
                               const LearnerConfig& config, std::uint64_t seed) {
  std::vector<std::size_t> columns = config.kernel_columns;
  if (columns.empty()) {
    columns.resize(x.cols);
    std::iota(columns.begin(), columns.end(), 0);
  }
  const KernelData k = kernel_data(x, y, columns, config.kernel_basis, seed);
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
  kernel_fns().tune(k.z.data(), n, static_cast<std::ptrdiff_t>(k.d), y.data(), k.basis_rows.data(),
                    static_cast<std::ptrdiff_t>(k.basis_rows.size()), fold.data(), folds, config.kernel_scale_grid.data(),
                    static_cast<int>(config.kernel_scale_grid.size()), config.kernel_lambda_grid.data(),
                    static_cast<int>(config.kernel_lambda_grid.size()), config.kernel_matern, root_d,
                    &best.length_scale, &best.lambda);
  return best;
}

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
  if (name == "kernel_ridge") return std::make_unique<KernelRidgeLearner>(config);
  throw Error(ErrorCode::kParse, "unknown learner '" + name + "'");
}

std::vector<std::unique_ptr<Learner>> make_learners(const LearnerConfig& config) {
  std::vector<std::unique_ptr<Learner>> out;
  for (const auto& n : config.learners) out.push_back(make_learner(n, config));
  return out;
}

}  // namespace epochcast
