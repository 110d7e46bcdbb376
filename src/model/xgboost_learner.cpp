// The gradient-boosted trees learner: XGBoost through its C API, single rows on a verified flat copy.
#include "epochcast/core/nan.hpp"
#include <xgboost/c_api.h>

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
  // Row weights (empty: none set, XGBoost's all-1 default): gradients and hessians scaled by them.
  XgbMatrix(const Matrix& x, std::span<const double> y, std::span<const double> weights = {}) {
    std::vector<float> values(x.data.begin(), x.data.end());
    xgb_check(XGDMatrixCreateFromMat(values.data(), x.rows, x.cols,
                                     std::numeric_limits<float>::quiet_NaN(), &handle_),
              "XGDMatrixCreateFromMat");
    std::vector<float> labels(y.begin(), y.end());
    xgb_check(XGDMatrixSetFloatInfo(handle_, "label", labels.data(), labels.size()),
              "XGDMatrixSetFloatInfo");
    if (!weights.empty()) {
      std::vector<float> w(weights.begin(), weights.end());
      xgb_check(XGDMatrixSetFloatInfo(handle_, "weight", w.data(), w.size()), "XGDMatrixSetFloatInfo weight");
    }
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

  void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights, std::uint64_t seed) override {
    check_row_weights(weights, x.rows, "xgboost");
    XgbMatrix train(x, y, unit_weights(weights) ? std::span<const double>{} : weights);
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
        // XGBoost follows each node's parent while loading: an index past the nodes was a SEGV
        // in RegTree::LoadModel (fuzz_model, 2026-12-02). The root has none (-1 or INT32_MAX).
        const auto parents = tree.at("parents").get<std::vector<std::int64_t>>();
        if (!parents.empty() && parents[0] != -1 && parents[0] != std::numeric_limits<std::int32_t>::max())
          throw damaged(at + "root has parent " + std::to_string(parents[0]));
        for (std::size_t i = 1; i < parents.size(); ++i)
          if (parents[i] < 0 || static_cast<std::size_t>(parents[i]) >= n)
            throw damaged(at + "node " + std::to_string(i) + " has parent " + std::to_string(parents[i]));
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

}  // namespace

std::unique_ptr<Learner> make_xgboost_learner(const LearnerConfig& config) { return std::make_unique<XgbLearner>(config); }

}  // namespace epochcast
