#include "epochcast/model/stacked_model.hpp"

#include <fcntl.h>   // open: O_EXCL
#include <sys/stat.h>  // mkdir
#include <unistd.h>  // write, close

#include <Eigen/Dense>
#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"
#include "learners.hpp"
#include "pair_features.hpp"

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kFormatName = "epochcast-model";

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The figures correction_shrink compares with the training GPUs' range: the two a job's time
// meets, the compute peak of its precision (compute_path: TF32 tensor for fp32 code where the GPU
// has it) and the memory bandwidth. The training range is taken at kAuto, the bundled jobs' fp32
// code; a fp16 job on a GPU of the range meets another peak and so counts as outside it.
std::vector<double> shrink_specs(const GpuSpec& g, Precision precision) {
  return {std::log(compute_path(precision, g).tflops), std::log(g.memory_bandwidth_gbs)};
}

// Log excess of a pair's figures over the range [lo, hi] (0 inside).
double spec_excess(const std::vector<double>& lo, const std::vector<double>& hi, const GpuSpec& source,
                   const GpuSpec& target, Precision precision) {
  double excess = 0;
  for (const GpuSpec* g : {&source, &target}) {
    const std::vector<double> v = shrink_specs(*g, precision);
    for (std::size_t k = 0; k < v.size() && k < lo.size(); ++k) excess = std::max({excess, lo[k] - v[k], v[k] - hi[k]});
  }
  return excess;
}

// The correction kept at a log excess: all of it up to the excess the GPU-held-out folds
// validated, then less by 1 / span per log unit beyond (0: prior alone).
double shrink_at(double excess, double trusted_log, double span_log) {
  if (!(span_log > 0)) return 1.0;
  return std::clamp(1.0 - std::max(0.0, excess - trusted_log) / span_log, 0.0, 1.0);
}

// Candidates for the trusted excess are 0, 0.1, 0.2, … up to the largest excess a GPU-held-out
// fold showed: no evidence beyond it (unit test StackedModel.TrustedExcessIsChosenOnGpuFolds).
constexpr double kTrustedExcessStep = 0.1;

// The range of shrink_specs over the GPUs of some training rows.
void spec_range(const GpuCatalog& catalog, const std::set<std::string>& ids, std::vector<double>& lo,
                std::vector<double>& hi) {
  lo.clear(), hi.clear();
  for (const std::string& id : ids) {
    const std::vector<double> v = shrink_specs(*catalog.find(id), Precision::kAuto);
    if (lo.empty()) lo = hi = v;
    for (std::size_t k = 0; k < v.size(); ++k) lo[k] = std::min(lo[k], v[k]), hi[k] = std::max(hi[k], v[k]);
  }
}

nlohmann::json scaling_params_json(const ScalingParams& p) {
  return {{"compute_exp", p.compute_exp},     {"bandwidth_exp", p.bandwidth_exp}, {"power_exp", p.power_exp},
          {"memory_share", p.memory_share}, {"fixed_share", p.fixed_share},
          {"power_min_w", p.power_min_w},   {"power_max_w", p.power_max_w},     {"interval_q_log", p.interval_q_log}};
}
ScalingParams scaling_params_from_json(const nlohmann::json& j) {
  return {.compute_exp = j.at("compute_exp").get<double>(),
          .bandwidth_exp = j.at("bandwidth_exp").get<double>(),
          .power_exp = j.at("power_exp").get<double>(),
          .memory_share = j.at("memory_share").get<double>(),
          .fixed_share = j.at("fixed_share").get<double>(),
          .power_min_w = j.at("power_min_w").get<double>(),
          .power_max_w = j.at("power_max_w").get<double>(),
          .interval_q_log = j.at("interval_q_log").get<double>()};
}

// The scaling prior's reference GPU: the figures busy_level_log reads.
nlohmann::json reference_to_json(const GpuSpec& g) {
  return {{"id", g.id},
          {"fp32_tflops", g.fp32_tflops},
          {"tensor_fp16_tflops", g.tensor_fp16_tflops},
          {"tensor_tf32_tflops", g.tensor_tf32_tflops},
          {"tensor_bf16_tflops", g.tensor_bf16_tflops},
          {"memory_bandwidth_gbs", g.memory_bandwidth_gbs},
          {"max_sm_clock_mhz", g.max_sm_clock_mhz},
          {"tdp_w", g.tdp_w}};
}
GpuSpec reference_from_json(const nlohmann::json& j) {
  GpuSpec g;
  g.id = j.at("id").get<std::string>();
  g.fp32_tflops = j.at("fp32_tflops").get<double>();
  g.tensor_fp16_tflops = j.at("tensor_fp16_tflops").get<double>();
  g.tensor_tf32_tflops = j.at("tensor_tf32_tflops").get<double>();
  g.tensor_bf16_tflops = j.at("tensor_bf16_tflops").get<double>();
  g.memory_bandwidth_gbs = j.at("memory_bandwidth_gbs").get<double>();
  g.max_sm_clock_mhz = j.at("max_sm_clock_mhz").get<double>();
  g.tdp_w = j.at("tdp_w").get<double>();
  return g;
}

LearnerConfig learner_config(const FitOptions& o) {
  LearnerConfig c;
  c.xgb_rounds = o.xgb_rounds;
  c.xgb_max_depth = o.xgb_max_depth;
  c.xgb_eta = o.xgb_eta;
  c.trees = o.trees;
  c.tree_min_leaf = o.tree_min_leaf;
  c.tree_max_features = o.tree_max_features;
  c.knn_k = o.knn_k;
  c.threads = o.threads;
  // kNN measures distance on the features that say how the job scales, not on all of them:
  // fewer, relevant dimensions make neighbours meaningful (and a prediction cheap).
  const auto& names = pair_schema(o.include_memory_features).names;
  const std::string gpu_util = "src." + feature_names()[*feature_index(Metric::kGpuUtil, Stat::kMean)];
  const std::string mem_util = "src." + feature_names()[*feature_index(Metric::kMemUtil, Stat::kMean)];
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.starts_with("amdahl.") || n.starts_with("ratio.") || n == "src.log_epoch_s" ||
        n == "src.power_mean_over_tdp" || n == "src.sm_clock_mean_over_max" || n == gpu_util ||
        n == mem_util)
      c.knn_columns.push_back(i);
  }
  c.kernel_columns = c.knn_columns;
  // Kernel ridge in ridge's place (FitOptions::kernel_ridge), on the kNN columns.
  if (o.kernel_ridge) c.learners = {"xgboost", "kernel_ridge", "knn", "extra_trees"};
  return c;
}

nlohmann::json options_to_json(const FitOptions& o) {
  return {{"seed", o.seed},
          {"folds", o.folds},
          {"group_folds_by_model", o.group_folds_by_model},
          {"include_memory_features", o.include_memory_features},
          {"residual_over_prior", o.residual_over_prior},
          {"calibrated_prior", o.calibrated_prior},
          {"shrink_span_log", o.shrink_span_log},
          {"meta_gpu_folds", o.meta_gpu_folds},
          {"interval_level", o.interval_level},
          {"xgb_rounds", o.xgb_rounds},
          {"xgb_max_depth", o.xgb_max_depth},
          {"xgb_eta", o.xgb_eta},
          {"trees", o.trees},
          {"tree_min_leaf", o.tree_min_leaf},
          {"tree_max_features", o.tree_max_features},
          {"knn_k", o.knn_k},
          {"kernel_ridge", o.kernel_ridge},
          {"threads", o.threads}};
}

FitOptions options_from_json(const nlohmann::json& j) {
  FitOptions o;
  o.seed = json_integer<std::uint64_t>(j.at("seed"));
  o.folds = json_integer<int>(j.at("folds"));
  o.group_folds_by_model = j.at("group_folds_by_model").get<bool>();
  o.include_memory_features = j.at("include_memory_features").get<bool>();
  o.residual_over_prior = j.at("residual_over_prior").get<bool>();
  o.calibrated_prior = j.at("calibrated_prior").get<bool>();
  o.shrink_span_log = j.at("shrink_span_log").get<double>();
  o.meta_gpu_folds = j.at("meta_gpu_folds").get<bool>();
  o.interval_level = j.at("interval_level").get<double>();
  o.xgb_rounds = json_integer<int>(j.at("xgb_rounds"));
  o.xgb_max_depth = json_integer<int>(j.at("xgb_max_depth"));
  o.xgb_eta = j.at("xgb_eta").get<double>();
  o.trees = json_integer<int>(j.at("trees"));
  o.tree_min_leaf = json_integer<int>(j.at("tree_min_leaf"));
  o.tree_max_features = j.at("tree_max_features").get<double>();
  o.knn_k = json_integer<int>(j.at("knn_k"));
  o.kernel_ridge = j.at("kernel_ridge").get<bool>();
  o.threads = json_integer<int>(j.at("threads"));
  return o;
}

// NaN is not JSON: write null, read null back as NaN.
nlohmann::json doubles_to_json(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}
std::vector<double> doubles_from_json(const nlohmann::json& j) {
  std::vector<double> v;
  for (const auto& x : j.get_ref<const nlohmann::json::array_t&>())
    v.push_back(x.is_null() ? kNaN : x.get<double>());
  return v;
}

// Non-negative least squares for a handful of columns: the best of all column subsets whose
// unconstrained solution is non-negative (exact for NNLS, fine for up to ~8 learners).
std::vector<double> nnls_small(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const auto k = static_cast<int>(a.cols());
  std::vector<double> best(static_cast<std::size_t>(k), 0.0);
  double best_sse = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < (1 << k); ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < k; ++c)
      if (mask & (1 << c)) cols.push_back(c);
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
    for (std::size_t i = 0; i < cols.size(); ++i) sub.col(static_cast<Eigen::Index>(i)) = a.col(cols[i]);
    const Eigen::VectorXd w = sub.colPivHouseholderQr().solve(b);
    if ((w.array() < 0).any()) continue;
    const double sse = (sub * w - b).squaredNorm();
    if (sse < best_sse - 1e-12) {
      best_sse = sse;
      std::fill(best.begin(), best.end(), 0.0);
      for (std::size_t i = 0; i < cols.size(); ++i) best[static_cast<std::size_t>(cols[i])] = w(static_cast<Eigen::Index>(i));
    }
  }
  return best;
}

// NNLS over some columns of a; the other columns get weight 0.
std::vector<double> nnls_columns(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, const std::vector<std::size_t>& cols) {
  std::vector<double> out(static_cast<std::size_t>(a.cols()), 0.0);
  if (cols.empty()) return out;
  Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t i = 0; i < cols.size(); ++i) sub.col(static_cast<Eigen::Index>(i)) = a.col(static_cast<Eigen::Index>(cols[i]));
  const std::vector<double> w = nnls_small(sub, b);
  for (std::size_t i = 0; i < cols.size(); ++i) out[cols[i]] = w[i];
  return out;
}

std::size_t line_of(std::string_view text, std::size_t byte, std::uint32_t& column) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  column = static_cast<std::uint32_t>(col);
  return line;
}

// The key path to a number no double holds ("interval.half_width_log", "meta_weights[2]") and
// its byte offset: a second pass over the text with a SAX handler, on that error path only
// (nlohmann reports out_of_range.406 without either).
class OverflowLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string path;       // filled at the error
  std::size_t byte = 0;   // offset just past the number
  bool found = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back({false, {}, 0});
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.push_back({true, {}, 0});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id == 406) {
      found = true;
      byte = position;
      for (std::size_t i = 0; i < frames_.size(); ++i) {
        const Frame& f = frames_[i];
        // An array's element being read: the top frame's has not been counted yet.
        const std::size_t index = i + 1 == frames_.size() ? f.count : f.count - 1;
        path += f.array ? "[" + std::to_string(index) + "]" : (path.empty() ? "" : ".") + f.key;
      }
    }
    return false;
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    std::size_t count;  // elements started (arrays)
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    return true;
  }
  std::vector<Frame> frames_;
};

}  // namespace

// ---- schema ----

std::vector<std::string> pair_feature_names(bool include_memory_features) {
  return pair_schema(include_memory_features).names;
}

std::string model_schema_hash(bool include_memory_features) {
  std::uint64_t h = fnv1a("epochcast-model-v" + std::to_string(kModelFormatVersion));
  h = fnv1a("target=log(target_epoch_s/source_epoch_s)", h);
  for (const auto& n : pair_schema(include_memory_features).names) h = fnv1a(n + ";", h);
  return hex(h);
}

// ---- StackedModel ----

StackedModel::StackedModel() = default;
StackedModel::~StackedModel() = default;
StackedModel::StackedModel(StackedModel&&) noexcept = default;
StackedModel& StackedModel::operator=(StackedModel&&) noexcept = default;

const std::string& StackedModel::schema_hash() const {
  static const std::string without = model_schema_hash(false), with = model_schema_hash(true);
  return options_.include_memory_features ? with : without;
}

std::vector<std::string> StackedModel::learner_names() const {
  std::vector<std::string> out;
  for (const auto& l : learners_) out.push_back(l->name());
  return out;
}

double StackedModel::prior_log_ratio_for(const FeatureRow& f, std::span<const double> x, const GpuSpec& source,
                                         const GpuSpec& target, Precision precision) const {
  if (!options_.residual_over_prior) return 0.0;
  const double fitted = prior_log_ratio(pair_schema(options_.include_memory_features), x);
  if (!options_.calibrated_prior) return fitted;
  // Inside the training GPUs' range the correction was fitted over format 5's prior: keep that
  // pair; outside, hand over to the prior calibrated on the public table as the correction is shrunk.
  const double s = correction_shrink(source, target, precision);
  if (s >= 1.0) return fitted;
  return s * fitted + (1.0 - s) * scaling_log_ratio(scaling_prior_.params(precision_class(precision)), f.get(Metric::kGpuUtil, Stat::kMean) / 100.0,
                                                    scaling_prior_.reference, source, target, precision);
}

double StackedModel::correction_shrink(const GpuSpec& source, const GpuSpec& target, Precision precision) const {
  if (!(options_.shrink_span_log > 0) || spec_log_lo_.empty()) return 1.0;
  return shrink_at(spec_excess(spec_log_lo_, spec_log_hi_, source, target, precision), trusted_excess_log_,
                   options_.shrink_span_log);
}

void StackedModel::predict_pair_features(std::span<const double> x, double prior, double shrink,
                                         std::span<double> per_learner_log, double& stack_log, bool unseen_gpu) const {
  const std::vector<double>& w = unseen_gpu ? meta_weights_unseen_ : meta_weights_;
  stack_log = prior;
  for (std::size_t i = 0; i < learners_.size(); ++i) {
    // Only the learned correction is clamped; the prior is not bounded by the training range.
    const double correction = shrink * std::clamp(learners_[i]->predict(x), log_ratio_lo_, log_ratio_hi_);
    per_learner_log[i] = prior + correction;
    stack_log += w[i] * correction;
  }
}

Prediction StackedModel::predict(const FeatureRow& source_features, double source_epoch_s,
                                 const GpuSpec& source, const GpuSpec& target, Precision precision) const {
  if (learners_.empty()) throw Error(ErrorCode::kInternal, "predict on a model that was not fitted");
  if (!(source_epoch_s > 0) || !std::isfinite(source_epoch_s))
    throw Error(ErrorCode::kInvalidArgument,
                "source epoch time must be a positive number of seconds, got " + std::to_string(source_epoch_s));
  if (source_features.values.size() != feature_count())
    throw Error(ErrorCode::kInvalidArgument, "feature row has the wrong size");
  const PairSchema& schema = pair_schema(options_.include_memory_features);
  double x_buf[256];
  std::vector<double> x_heap;
  std::span<double> x;
  if (schema.names.size() <= std::size(x_buf)) {
    x = std::span<double>(x_buf, schema.names.size());
  } else {
    x_heap.resize(schema.names.size());
    x = x_heap;
  }
  pair_features(schema, source_features, source_epoch_s, source, target, x);
  // A GPU the model never saw gets the interval calibrated on GPU-held-out folds (when fitted).
  const bool seen = std::binary_search(source_gpus_.begin(), source_gpus_.end(), source.id) &&
                    std::binary_search(target_gpus_.begin(), target_gpus_.end(), target.id);
  double per[16];
  double stack = 0;
  const double prior = prior_log_ratio_for(source_features, x, source, target, precision);
  const double shrink = correction_shrink(source, target, precision);
  predict_pair_features(x, prior, shrink, std::span<double>(per, learners_.size()), stack, !seen);
  // An unseen GPU: the wider of the GPU-held-out folds' interval and, where the correction was
  // shrunk toward the prior, the prior's own leave-one-GPU-out interval on the public table.
  const double prior_q = options_.calibrated_prior ? scaling_prior_.params(precision_class(precision)).interval_q_log : 0.0;
  const double q = seen ? interval_q_log_
                        : std::max({interval_q_log_, interval_unseen_q_log_, (1.0 - shrink) * prior_q});
  Prediction p;
  p.epoch_s = source_epoch_s * std::exp(stack);
  p.lo_s = source_epoch_s * std::exp(stack - q);
  p.hi_s = source_epoch_s * std::exp(stack + q);
  p.per_learner.reserve(learners_.size());
  for (std::size_t i = 0; i < learners_.size(); ++i)
    p.per_learner.push_back({learners_[i]->name(), source_epoch_s * std::exp(per[i])});
  return p;
}

RangeCheck StackedModel::check_range(const FeatureRow& f) const {
  RangeCheck out;
  const PairSchema& schema = pair_schema(options_.include_memory_features);
  std::set<Metric> missing;
  for (std::size_t i : schema.source_features) {
    if (i >= feature_min_.size() || !std::isfinite(feature_min_[i])) continue;  // unseen in training
    const double v = f.values[i];
    const Metric m = feature_metrics()[i / kStatCount];
    if (!std::isfinite(v)) {
      // std is NaN for a single sample: not a missing channel.
      if (!f.missing(m)) continue;
      missing.insert(m);
      continue;
    }
    if (v < feature_min_[i] || v > feature_max_[i]) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "=%.4g (training %.4g..%.4g)", v, feature_min_[i], feature_max_[i]);
      out.out_of_range.push_back(feature_names()[i] + buf);
    }
  }
  for (Metric m : missing) out.missing.emplace_back(info(m).dataset_name);
  return out;
}

// ---- fit ----

namespace {

struct FoldSplit {
  std::vector<std::size_t> train, test;
};

// One fit of every learner: on a split's training rows (its test-row predictions, clamped to
// [lo, hi], go to `oof`) or, with no split, the final fit on all rows.
struct FitJob {
  const FoldSplit* split = nullptr;  // null: the final fit
  Eigen::MatrixXd* oof = nullptr;
  std::uint64_t seed = 0;            // learner l gets seed + l
  const char* label = "";
  std::once_flag prepared;
  Matrix xt, xv;
  std::vector<double> yt;
  std::vector<std::unique_ptr<Learner>> learners;
};

// All (fit, learner) pairs of a model fit are independent: the out-of-fold fits and the final
// fit run as one queue on `threads` workers, each learner single-threaded, longest first, so
// no core waits for a fold set or for the final fit's single-threaded XGBoost. Each task has
// its own seed and writes its own rows: the result does not depend on the thread count.
void run_fits(const Matrix& x, const std::vector<double>& y, std::vector<FitJob>& jobs,
              const LearnerConfig& config, double lo, double hi,
              const std::function<void(std::string_view)>& tick) {
  const std::size_t p = x.cols;
  LearnerConfig one = config;
  one.threads = 1;
  const std::size_t n_learners = make_learners(one).size();
  for (auto& job : jobs) {
    LearnerConfig c = one;
    c.single_rows = job.split == nullptr;  // only the final learners predict single rows
    job.learners = make_learners(c);
  }
  struct Task {
    std::size_t job, learner;
    double cost;
  };
  std::vector<Task> tasks;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const double rows = static_cast<double>(jobs[j].split ? jobs[j].split->train.size() : x.rows);
    for (std::size_t l = 0; l < n_learners; ++l) {
      // Rough relative fit cost by learner (xgboost, ridge, knn, extra_trees): only the order.
      const std::string name = jobs[j].learners[l]->name();
      const double w = name == "extra_trees" ? 1.0 : name == "xgboost" ? 0.6 : name == "kernel_ridge" ? 0.3 : 0.05;
      tasks.push_back({j, l, w * rows});
    }
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.cost > b.cost; });
  const std::size_t workers = config.threads > 1 ? std::min<std::size_t>(static_cast<std::size_t>(config.threads), tasks.size()) : 1;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex tick_mutex;
  auto run = [&] {
    for (std::size_t t; !failed && (t = next++) < tasks.size();) {
      FitJob& job = jobs[tasks[t].job];
      const std::size_t l = tasks[t].learner;
      const Matrix* xt = &x;
      const std::vector<double>* yt = &y;
      if (job.split) {
        std::call_once(job.prepared, [&] {
          const auto& [train, test] = *job.split;
          job.xt = Matrix(train.size(), p);
          job.xv = Matrix(test.size(), p);
          job.yt.resize(train.size());
          for (std::size_t i = 0; i < train.size(); ++i) {
            std::copy_n(x.row(train[i]).begin(), p, job.xt.row(i).begin());
            job.yt[i] = y[train[i]];
          }
          for (std::size_t i = 0; i < test.size(); ++i) std::copy_n(x.row(test[i]).begin(), p, job.xv.row(i).begin());
        });
        xt = &job.xt;
        yt = &job.yt;
      }
      Learner& learner = *job.learners[l];
      const std::string name = learner.name();
      learner.fit(*xt, *yt, job.seed + l);
      if (job.split) {
        const auto& test = job.split->test;
        std::vector<double> out(test.size());
        learner.predict_many(job.xv, out);
        for (std::size_t i = 0; i < test.size(); ++i)
          (*job.oof)(static_cast<Eigen::Index>(test[i]), static_cast<Eigen::Index>(l)) = std::clamp(out[i], lo, hi);
        job.learners[l].reset();  // out-of-fold learners are not kept
      }
      std::lock_guard lock(tick_mutex);
      tick(std::string(job.label) + " " + name);
    }
  };
  std::vector<std::exception_ptr> errors(workers);
  auto guarded = [&](std::size_t w) {
    try {
      run();
    } catch (...) {
      errors[w] = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(guarded, w);
  guarded(0);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// The level-quantile of absolute residuals, split-conformal style: the ceil(level*(n+1))-th.
double conformal_quantile(std::vector<double> resid, double level) {
  if (resid.empty()) return 0;
  std::sort(resid.begin(), resid.end());
  const std::size_t n = resid.size();
  const auto rank = static_cast<std::size_t>(std::ceil(level * static_cast<double>(n + 1)));
  return resid[std::min(n, std::max<std::size_t>(rank, 1)) - 1];
}

}  // namespace

StackedModel fit_model_on_pairs(const Dataset& ds, const std::vector<RunPair>& pairs,
                                const GpuCatalog& catalog, const FitOptions& options,
                                ProgressFn progress) {
  if (pairs.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "no training pairs in '" + ds.source +
                    "': the model needs workloads run on at least two GPU types");
  if (!(options.interval_level > 0 && options.interval_level < 1))
    throw Error(ErrorCode::kInvalidArgument, "interval level must be in (0, 1)");
  const PairSchema& schema = pair_schema(options.include_memory_features);
  const std::size_t n = pairs.size(), p = schema.names.size();
  StackedModel model_prior;  // holds the scaling prior until the model is assembled
  model_prior.options_ = options;
  if (options.calibrated_prior) model_prior.scaling_prior_ = calibrated_scaling_prior();
  Matrix x(n, p);
  std::vector<double> y(n), prior(n, 0.0);
  std::vector<std::string> group(n), source_gpu(n), target_gpu(n);
  std::set<std::string> sources, targets;
  for (std::size_t i = 0; i < n; ++i) {
    const DatasetRow& s = ds.rows.at(pairs[i].source);
    const DatasetRow& t = ds.rows.at(pairs[i].target);
    const GpuSpec* sg = catalog.find(s.gpu_id);
    const GpuSpec* tg = catalog.find(t.gpu_id);
    if (!sg || !tg)
      throw Error(ErrorCode::kNotFound, "GPU '" + (sg ? t.gpu_id : s.gpu_id) + "' is not in the catalog");
    pair_features(schema, s.features, s.epoch_s, *sg, *tg, x.row(i));
    // The correction is fitted over format 5's prior (amdahl.memory_clock_split): between the
    // training GPUs the calibrated prior is not used (prior_log_ratio_for).
    if (options.residual_over_prior) prior[i] = prior_log_ratio(schema, x.row(i));
    y[i] = std::log(t.epoch_s / s.epoch_s) - prior[i];  // what the learners fit
    group[i] = options.group_folds_by_model ? s.model : s.workload;
    source_gpu[i] = s.gpu_id;
    target_gpu[i] = t.gpu_id;
    sources.insert(s.gpu_id);
    targets.insert(t.gpu_id);
  }
  // Folds: distinct groups shuffled by the seed, dealt round-robin.
  std::vector<std::string> names(group.begin(), group.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.size() < 2)
    throw Error(ErrorCode::kInvalidArgument,
                "the training pairs come from one " +
                    std::string(options.group_folds_by_model ? "CNN model" : "workload") +
                    " only: the meta learner needs at least two groups for out-of-fold predictions");
  std::mt19937_64 rng(options.seed);
  std::shuffle(names.begin(), names.end(), rng);
  const std::size_t folds = std::min<std::size_t>(static_cast<std::size_t>(std::max(2, options.folds)), names.size());
  std::map<std::string, std::size_t> fold_of;
  for (std::size_t i = 0; i < names.size(); ++i) fold_of[names[i]] = i % folds;
  std::vector<FoldSplit> group_splits(folds);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t f = 0; f < folds; ++f) (fold_of[group[i]] == f ? group_splits[f].test : group_splits[f].train).push_back(i);
  // GPU-grouped folds: each target GPU held out of both sides of the training pairs, as logo does.
  std::vector<FoldSplit> gpu_splits;
  if (options.meta_gpu_folds && targets.size() >= 3) {
    for (const std::string& g : targets) {
      FoldSplit sp;
      for (std::size_t i = 0; i < n; ++i) {
        if (target_gpu[i] == g) sp.test.push_back(i);
        else if (source_gpu[i] != g) sp.train.push_back(i);
      }
      if (!sp.train.empty()) gpu_splits.push_back(std::move(sp));
    }
  }

  // With kernel ridge, a third fold set grouped by workload: the seen-GPU meta weights then
  // learn from both shifts a seen-GPU pair can face (a new network, or a known network at a
  // new batch size / data size), not only from the first, where kernel ridge is strongest.
  std::vector<FoldSplit> workload_splits;
  if (options.kernel_ridge) {
    std::vector<std::string> workload(n);
    for (std::size_t i = 0; i < n; ++i) workload[i] = ds.rows[pairs[i].source].workload;
    std::vector<std::string> w(workload);
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    std::mt19937_64 wrng(options.seed + 1);
    std::shuffle(w.begin(), w.end(), wrng);
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(std::max(2, options.folds)), w.size());
    std::map<std::string, std::size_t> fold_of_workload;
    for (std::size_t i = 0; i < w.size(); ++i) fold_of_workload[w[i]] = i % k;
    if (k >= 2) {
      workload_splits.resize(k);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t f = 0; f < k; ++f)
          (fold_of_workload[workload[i]] == f ? workload_splits[f].test : workload_splits[f].train).push_back(i);
    }
  }
  LearnerConfig config = learner_config(options);
  if (std::find(config.learners.begin(), config.learners.end(), "kernel_ridge") != config.learners.end() &&
      !(config.kernel_length_scale > 0 && config.kernel_lambda > 0)) {
    // Kernel ridge's length scale and λ: chosen once per model fit, by CV over these training
    // pairs grouped by CNN model (never the evaluation's held-out pairs), then used by every
    // out-of-fold and final fit (tuning inside each of the 10 fits would cost 10 times more).
    std::map<std::string, std::uint32_t> model_id;
    std::vector<std::uint32_t> groups(n);
    for (std::size_t i = 0; i < n; ++i)
      groups[i] = model_id.emplace(ds.rows[pairs[i].source].model, static_cast<std::uint32_t>(model_id.size())).first->second;
    const KernelChoice k = tune_kernel_ridge(x, y, groups, config, options.seed);
    config.kernel_length_scale = k.length_scale;
    config.kernel_lambda = k.lambda;
  }
  const std::size_t n_learners = make_learners(config).size();
  const std::size_t total_steps = (group_splits.size() + gpu_splits.size() + workload_splits.size() + 1) * n_learners;
  std::size_t step = 0;
  auto tick = [&](std::string_view what) {
    ++step;
    if (progress) progress(what, step, total_steps);
  };

  const auto [y_min, y_max] = std::minmax_element(y.begin(), y.end());
  const double span = *y_max - *y_min;
  const double clamp_lo = *y_min - 0.1 * span, clamp_hi = *y_max + 0.1 * span;
  const auto ni = static_cast<Eigen::Index>(n), nl = static_cast<Eigen::Index>(n_learners);
  Eigen::MatrixXd oof(ni, nl);
  Eigen::MatrixXd oof_gpu(ni, nl);
  oof_gpu.setZero();
  // Seeds as before the queue: fold f of a set gets set_seed + f * 7919, the final fit seed + 104729.
  Eigen::MatrixXd oof_workload(ni, nl);
  std::vector<FitJob> jobs(group_splits.size() + gpu_splits.size() + workload_splits.size() + 1);
  for (std::size_t f = 0; f < workload_splits.size(); ++f) {
    FitJob& job = jobs[group_splits.size() + gpu_splits.size() + f];
    job.split = &workload_splits[f];
    job.oof = &oof_workload;
    job.seed = options.seed + 57 + f * 7919;
    job.label = "workload-held-out";
  }
  for (std::size_t f = 0; f < group_splits.size(); ++f) {
    jobs[f].split = &group_splits[f];
    jobs[f].oof = &oof;
    jobs[f].seed = options.seed + f * 7919;
    jobs[f].label = "out-of-fold";
  }
  for (std::size_t f = 0; f < gpu_splits.size(); ++f) {
    FitJob& job = jobs[group_splits.size() + f];
    job.split = &gpu_splits[f];
    job.oof = &oof_gpu;
    job.seed = options.seed + 31 + f * 7919;
    job.label = "GPU-held-out";
  }
  jobs.back().seed = options.seed + 104729;
  jobs.back().label = "final";
  run_fits(x, y, jobs, config, clamp_lo, clamp_hi, tick);
  std::vector<std::size_t> gpu_rows;  // rows with a GPU-held-out prediction
  for (const auto& sp : gpu_splits) gpu_rows.insert(gpu_rows.end(), sp.test.begin(), sp.test.end());
  std::sort(gpu_rows.begin(), gpu_rows.end());
  StackedModel model;
  model.options_ = options;
  model.log_ratio_lo_ = clamp_lo;
  model.log_ratio_hi_ = clamp_hi;
  const Eigen::VectorXd yv = Eigen::Map<const Eigen::VectorXd>(y.data(), ni);
  // Meta weights. Default: one set, NNLS on the model-grouped rows and the GPU-held-out rows
  // together. With kernel ridge, two: for a pair whose GPUs were both in training, NNLS on the
  // model- and workload-grouped rows (seen GPUs); for a pair with a GPU outside training, the
  // default's NNLS over the learners that extrapolate to an unseen GPU. Kernel ridge does not:
  // away from the training GPUs' spec ratios its correction decays to its mean (logo 13.0 %
  // alone vs 10.0 % for extra trees, docs/model.md).
  std::vector<std::size_t> extrapolating;
  for (std::size_t l = 0; l < n_learners; ++l)
    if (config.learners[l] != "kernel_ridge") extrapolating.push_back(l);
  Eigen::MatrixXd a = oof;
  Eigen::VectorXd b = yv;
  if (!gpu_rows.empty()) {
    const auto ng = static_cast<Eigen::Index>(gpu_rows.size());
    a.conservativeResize(ni + ng, nl);
    b.conservativeResize(ni + ng);
    for (Eigen::Index k = 0; k < ng; ++k) {
      a.row(ni + k) = oof_gpu.row(static_cast<Eigen::Index>(gpu_rows[static_cast<std::size_t>(k)]));
      b(ni + k) = yv(static_cast<Eigen::Index>(gpu_rows[static_cast<std::size_t>(k)]));
    }
  }
  model.meta_weights_unseen_ = nnls_columns(a, b, extrapolating);
  if (workload_splits.empty()) {
    model.meta_weights_ = model.meta_weights_unseen_;
  } else {
    Eigen::MatrixXd seen(2 * ni, nl);
    Eigen::VectorXd yy(2 * ni);
    seen.topRows(ni) = oof;
    seen.bottomRows(ni) = oof_workload;
    yy.head(ni) = yv;
    yy.tail(ni) = yv;
    model.meta_weights_ = nnls_small(seen, yy);
  }
  // Split-conformal: the level-quantile of the stack's out-of-fold absolute residuals.
  auto stack_resid = [&](const Eigen::MatrixXd& m, std::size_t i) {
    const std::vector<double>& w = &m == &oof_gpu ? model.meta_weights_unseen_ : model.meta_weights_;
    double s = 0;
    for (std::size_t l = 0; l < n_learners; ++l)
      s += w[l] * m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(l));
    return std::abs(y[i] - s);
  };
  std::vector<double> resid(n);
  for (std::size_t i = 0; i < n; ++i) resid[i] = stack_resid(oof, i);
  model.interval_q_log_ = conformal_quantile(std::move(resid), options.interval_level);
  std::vector<double> resid_gpu;
  for (std::size_t i : gpu_rows) resid_gpu.push_back(stack_resid(oof_gpu, i));
  model.interval_unseen_q_log_ = conformal_quantile(std::move(resid_gpu), options.interval_level);

  model.learners_ = std::move(jobs.back().learners);
  model.source_gpus_.assign(sources.begin(), sources.end());
  model.target_gpus_.assign(targets.begin(), targets.end());
  model.scaling_prior_ = model_prior.scaling_prior_;
  std::set<std::string> all_gpus(sources);
  all_gpus.insert(targets.begin(), targets.end());
  spec_range(catalog, all_gpus, model.spec_log_lo_, model.spec_log_hi_);
  // How far outside the training GPUs the correction is still trusted: chosen on the GPU-held-out
  // folds (each fold's excess measured against its own training GPUs, the correction from its
  // out-of-fold learners, the prior blended as predict blends it), the candidate of least MAPE.
  if (options.calibrated_prior && options.shrink_span_log > 0 && !gpu_rows.empty()) {
    struct Row {
      double excess, f5, cal, corr, y;
    };
    std::vector<Row> rows;
    double max_excess = 0;
    for (std::size_t f = 0; f < gpu_splits.size(); ++f) {
      std::set<std::string> fold_gpus;
      for (std::size_t i : gpu_splits[f].train) fold_gpus.insert(source_gpu[i]), fold_gpus.insert(target_gpu[i]);
      std::vector<double> lo, hi;
      spec_range(catalog, fold_gpus, lo, hi);
      for (std::size_t i : gpu_splits[f].test) {
        const GpuSpec& sg = *catalog.find(source_gpu[i]);
        const GpuSpec& tg = *catalog.find(target_gpu[i]);
        const DatasetRow& s = ds.rows[pairs[i].source];
        double corr = 0;
        for (std::size_t l = 0; l < n_learners; ++l)
          corr += model.meta_weights_unseen_[l] * oof_gpu(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(l));
        const double cal = scaling_log_ratio(model_prior.scaling_prior_.params(PrecisionClass::kFp32Code),
                                             s.features.get(Metric::kGpuUtil, Stat::kMean) / 100.0,
                                             model_prior.scaling_prior_.reference, sg, tg, Precision::kAuto);
        rows.push_back({spec_excess(lo, hi, sg, tg, Precision::kAuto), prior[i], cal, corr, y[i] + prior[i]});
        max_excess = std::max(max_excess, rows.back().excess);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (int k = 0; k * kTrustedExcessStep <= max_excess + kTrustedExcessStep; ++k) {
      const double trusted = std::min(k * kTrustedExcessStep, max_excess);
      double err = 0;
      for (const Row& r : rows) {
        const double sh = shrink_at(r.excess, trusted, options.shrink_span_log);
        err += std::abs(std::exp(sh * r.f5 + (1 - sh) * r.cal + sh * r.corr - r.y) - 1.0);
      }
      if (err < best - 1e-12) best = err, model.trusted_excess_log_ = trusted;
      if (trusted >= max_excess) break;
    }
  }
  model.feature_min_.assign(feature_count(), kNaN);
  model.feature_max_.assign(feature_count(), kNaN);
  for (const auto& pr : pairs) {
    const auto& v = ds.rows[pr.source].features.values;
    for (std::size_t f = 0; f < v.size(); ++f) {
      if (!std::isfinite(v[f])) continue;
      if (!std::isfinite(model.feature_min_[f]) || v[f] < model.feature_min_[f]) model.feature_min_[f] = v[f];
      if (!std::isfinite(model.feature_max_[f]) || v[f] > model.feature_max_[f]) model.feature_max_[f] = v[f];
    }
  }
  model.training_pairs_ = n;
  model.dataset_source_ = ds.source;
  model.data_fingerprint_ = training_data_fingerprint(ds, pairs, catalog);
  return model;
}

StackedModel fit_model(const Dataset& ds, const GpuCatalog& catalog, const FitOptions& options,
                       ProgressFn progress) {
  if (ds.gpu_ids().size() < 2)
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + ds.source + "' holds " + std::to_string(ds.gpu_ids().size()) +
                    " GPU type(s); the model needs runs on at least two");
  return fit_model_on_pairs(ds, make_pairs(ds), catalog, options, std::move(progress));
}

// ---- model file ----

std::string model_to_json(const StackedModel& m) {
  nlohmann::json learners = nlohmann::json::array();
  for (const auto& l : m.learners_) learners.push_back({{"name", l->name()}, {"state", l->to_json()}});
  nlohmann::json j = {
      {"format", kFormatName},
      {"version", kModelFormatVersion},
      {"schema_hash", m.schema_hash()},
      {"target", "log(target_epoch_s/source_epoch_s)"},
      {"pair_features", pair_feature_names(m.options_.include_memory_features)},
      {"options", options_to_json(m.options_)},
      {"learners", learners},
      {"meta_weights", m.meta_weights_},
      {"meta_weights_unseen_gpu", m.meta_weights_unseen_},
      {"prior", !m.options_.residual_over_prior ? "none"
                : m.options_.calibrated_prior   ? "scaling_prior"
                                                : "amdahl.memory_clock_split"},
      {"scaling_prior",
       {{"fitted_on", m.scaling_prior_.fitted_on},
        {"reference", reference_to_json(m.scaling_prior_.reference)},
        {"fp32_code", scaling_params_json(m.scaling_prior_.fp32_code)},
        {"mixed", scaling_params_json(m.scaling_prior_.mixed)}}},
      {"interval",
       {{"level", m.options_.interval_level},
        {"half_width_log", m.interval_q_log_},
        {"unseen_gpu_half_width_log", m.interval_unseen_q_log_}}},
      {"log_ratio_clamp", {m.log_ratio_lo_, m.log_ratio_hi_}},
      {"training",
       {{"dataset", m.dataset_source_},
        {"data_fingerprint", m.data_fingerprint_},
        {"pairs", m.training_pairs_},
        {"source_gpus", m.source_gpus_},
        {"target_gpus", m.target_gpus_},
        {"spec_log_lo", m.spec_log_lo_},
        {"spec_log_hi", m.spec_log_hi_},
        {"trusted_excess_log", m.trusted_excess_log_},
        {"feature_names", feature_names()},
        {"feature_min", doubles_to_json(m.feature_min_)},
        {"feature_max", doubles_to_json(m.feature_max_)}}}};
  return j.dump();
}

void save_model(const StackedModel& m, const std::string& path) {
  const std::string text = model_to_json(m) + "\n";
  // A fresh temporary beside the file, created with O_EXCL under an unguessable name: never an
  // existing file or a symlink planted at a predictable PATH.tmp.PID; renamed into place whole.
  std::random_device entropy;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.tmp.{:08x}{:08x}", path, entropy(), entropy());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot write model file '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const bool ok = done == text.size() && ::close(fd) == 0;
  if (!ok) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(ErrorCode::kIo, "write failed for model file '" + path + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(ErrorCode::kIo, "cannot move model file into place at '" + path + "': " + ec.message());
  }
}

StackedModel model_from_json(std::string_view text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::uint32_t col = 0;
    const std::size_t line = line_of(text, e.byte == 0 ? 0 : e.byte - 1, col);
    throw Error(ErrorCode::kParse,
                std::string("not a valid model file (corrupt or truncated JSON): ") + e.what(),
                {name, line, col, ""});
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a number no double holds ("1e400": out_of_range.406), reported
    // without a byte offset or key: a second pass finds both.
    const std::string what = e.what();
    const std::size_t q1 = what.find('\''), q2 = what.rfind('\'');
    const std::string number = q1 != std::string::npos && q2 > q1 + 1 ? what.substr(q1 + 1, q2 - q1 - 1) : "";
    OverflowLocator locator;
    if (e.id == 406) nlohmann::json::sax_parse(text, &locator);
    std::size_t at = std::string_view::npos;
    if (locator.found) at = locator.byte > number.size() ? locator.byte - number.size() : 0;
    else if (!number.empty()) at = text.find(number);
    std::uint32_t col = 0;
    const std::size_t line = at == std::string_view::npos ? 0 : line_of(text, at, col);
    if (e.id == 406 && !number.empty())
      throw Error(ErrorCode::kParse, "not a valid model file: out of range of a double: '" + number + "' (beyond ±1.8e308)",
                  {name, line, col, locator.path});
    throw Error(ErrorCode::kParse, std::string("not a valid model file: ") + what, {name, line, col, ""});
  }
  try {
    if (!j.is_object() || j.value("format", "") != kFormatName)
      throw Error(ErrorCode::kParse, "not an epochcast model file (no \"format\": \"" +
                                         std::string(kFormatName) + "\")", {name, 1, 1, "format"});
    const int version = json_integer<int>(j.at("version"));
    if (version != kModelFormatVersion)
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' has format version " + std::to_string(version) +
                      "; this epochcast reads version " + std::to_string(kModelFormatVersion) +
                      ": refit it with `epochcast fit`");
    StackedModel m;
    m.options_ = options_from_json(j.at("options"));
    const std::string file_hash = j.at("schema_hash").get<std::string>();
    if (file_hash != m.schema_hash())
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' has feature schema " + file_hash +
                      ", the running epochcast has schema " + m.schema_hash() +
                      ": refit it with `epochcast fit`");
    if (j.at("pair_features").get<std::vector<std::string>>() !=
        pair_feature_names(m.options_.include_memory_features))
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' lists other features than schema " + m.schema_hash());
    const LearnerConfig config = learner_config(m.options_);
    for (const auto& lj : j.at("learners")) {
      auto l = make_learner(lj.at("name").get<std::string>(), config);
      l->from_json(lj.at("state"));
      // A state that reads past the schema's row would read out of bounds at predict.
      if (const std::size_t width = pair_feature_names(m.options_.include_memory_features).size();
          l->columns_read() > width)
        throw Error(ErrorCode::kParse,
                    "learner '" + l->name() + "' reads " + std::to_string(l->columns_read()) +
                        " feature columns, the schema has " + std::to_string(width),
                    {name, 0, 0, "learners"});
      m.learners_.push_back(std::move(l));
    }
    m.meta_weights_ = j.at("meta_weights").get<std::vector<double>>();
    m.meta_weights_unseen_ = j.at("meta_weights_unseen_gpu").get<std::vector<double>>();
    if (m.learners_.empty() || m.meta_weights_.size() != m.learners_.size() ||
        m.meta_weights_unseen_.size() != m.learners_.size() || m.learners_.size() > 16)
      throw Error(ErrorCode::kParse, "learner count and meta weights disagree", {name, 0, 0, "meta_weights"});
    for (const auto* ws : {&m.meta_weights_, &m.meta_weights_unseen_})
      for (double w : *ws)
        if (!std::isfinite(w) || w < 0)
          throw Error(ErrorCode::kParse, "meta weight is not a non-negative number", {name, 0, 0, "meta_weights"});
    m.interval_q_log_ = j.at("interval").at("half_width_log").get<double>();
    m.interval_unseen_q_log_ = j.at("interval").at("unseen_gpu_half_width_log").get<double>();
    const auto clamp = j.at("log_ratio_clamp").get<std::vector<double>>();
    if (clamp.size() != 2 || !std::isfinite(clamp[0]) || !std::isfinite(clamp[1]) || clamp[0] > clamp[1])
      throw Error(ErrorCode::kParse, "bad log_ratio_clamp", {name, 0, 0, "log_ratio_clamp"});
    m.log_ratio_lo_ = clamp[0];
    m.log_ratio_hi_ = clamp[1];
    // An interval wider than x/÷ 1000 says nothing, and exp() of a huge half-width is inf: a
    // null bound in every answer (1e308 was accepted).
    const double max_half_width_log = std::log(1e3);
    if (!std::isfinite(m.interval_q_log_) || m.interval_q_log_ < 0 || !std::isfinite(m.interval_unseen_q_log_) ||
        m.interval_unseen_q_log_ < 0 || m.interval_q_log_ > max_half_width_log ||
        m.interval_unseen_q_log_ > max_half_width_log)
      throw Error(ErrorCode::kParse,
                  fmt::format("bad interval half width (expected 0 to {:.3g} in log units, a factor of 1000)",
                              max_half_width_log),
                  {name, 0, 0, "interval"});
    // fit refuses a level outside (0, 1); a file must not bring one in (2 was accepted).
    if (!(m.options_.interval_level > 0 && m.options_.interval_level < 1))
      throw Error(ErrorCode::kParse,
                  fmt::format("interval level {} is not between 0 and 1", m.options_.interval_level),
                  {name, 0, 0, "options.interval_level"});
    const auto& t = j.at("training");
    m.dataset_source_ = t.at("dataset").get<std::string>();
    m.training_pairs_ = json_integer<std::size_t>(t.at("pairs"));
    // Optional: files written before 2026-12-01 lack it (the data is then unknown, no error).
    if (const auto it = t.find("data_fingerprint"); it != t.end()) {
      if (!it->is_string())
        throw Error(ErrorCode::kParse, "training.data_fingerprint is not a string", {name, 0, 0, "data_fingerprint"});
      m.data_fingerprint_ = it->get<std::string>();
      const bool empty = m.data_fingerprint_.empty();
      const bool well_formed = m.data_fingerprint_.size() == 24 && m.data_fingerprint_.starts_with("fnv1a64:") &&
                               m.data_fingerprint_.find_first_not_of("0123456789abcdef", 8) == std::string::npos;
      if (!empty && !well_formed)
        throw Error(ErrorCode::kParse, "training.data_fingerprint is not \"fnv1a64:\" and 16 hex digits",
                    {name, 0, 0, "data_fingerprint"});
    }
    m.source_gpus_ = t.at("source_gpus").get<std::vector<std::string>>();
    m.target_gpus_ = t.at("target_gpus").get<std::vector<std::string>>();
    m.spec_log_lo_ = t.at("spec_log_lo").get<std::vector<double>>();
    m.spec_log_hi_ = t.at("spec_log_hi").get<std::vector<double>>();
    if (m.spec_log_lo_.size() != 2 || m.spec_log_hi_.size() != 2)
      throw Error(ErrorCode::kParse, "training.spec_log_lo/hi must hold 2 numbers", {name, 0, 0, "spec_log_lo"});
    m.trusted_excess_log_ = t.at("trusted_excess_log").get<double>();
    if (!(m.trusted_excess_log_ >= 0))
      throw Error(ErrorCode::kParse, "training.trusted_excess_log must be a number >= 0", {name, 0, 0, "trusted_excess_log"});
    const auto& sp = j.at("scaling_prior");
    m.scaling_prior_.fitted_on = sp.at("fitted_on").get<std::string>();
    m.scaling_prior_.reference = reference_from_json(sp.at("reference"));
    m.scaling_prior_.fp32_code = scaling_params_from_json(sp.at("fp32_code"));
    m.scaling_prior_.mixed = scaling_params_from_json(sp.at("mixed"));
    m.feature_min_ = doubles_from_json(t.at("feature_min"));
    m.feature_max_ = doubles_from_json(t.at("feature_max"));
    if (t.at("feature_names").get<std::vector<std::string>>() != feature_names() ||
        m.feature_min_.size() != feature_count() || m.feature_max_.size() != feature_count())
      throw Error(ErrorCode::kSchemaMismatch,
                  "model file '" + name + "' was trained on other run statistics than this epochcast computes");
    return m;
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;
    throw Error(e.code(), e.detail(), {name, 0, 0, ""});  // name the file a learner refused
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kParse, std::string("model file is missing or has a malformed field: ") + e.what(),
                {name, 0, 0, ""});
  }
}

constexpr std::uint64_t kMaxModelFileBytes = std::uint64_t{256} << 20;

StackedModel load_model(const std::string& path) {
  // A default-options model is a few MB; the cap stops /dev/zero or a wrong huge file.
  return model_from_json(read_file_capped(path, kMaxModelFileBytes, "model file"), path);
}

// ---- default model ----

namespace {
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The learners' code is part of what a cached model means: a rebuilt program (another size or
// modification time of its executable) must not reuse a model fitted by older code.
std::string program_identity() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown program";
  const auto size = std::filesystem::file_size(exe, ec);
  if (ec) return exe.string();
  const auto mtime = std::filesystem::last_write_time(exe, ec).time_since_epoch().count();
  return exe.string() + ":" + std::to_string(size) + ":" + std::to_string(ec ? 0 : mtime);
}

// Each rebuild leaves a ~6 MB entry; the newest few are kept (several programs share the cache).
void prune_cache(const std::filesystem::path& dir, std::size_t keep) {
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("model-") && name.ends_with(".json")) entries.emplace_back(e.last_write_time(ec), e.path());
  }
  if (entries.size() <= keep) return;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = keep; i < entries.size(); ++i) std::filesystem::remove(entries[i].second, ec);
}
}  // namespace

std::shared_ptr<const StackedModel> default_model(ProgressFn progress) {
  static std::mutex mutex;
  // Leaked on purpose: destroying an XGBoost booster after XGBoost's statics crashes at exit.
  static auto& cached = *new std::shared_ptr<const StackedModel>();
  std::lock_guard lock(mutex);
  if (cached) return cached;
  const std::string data_path = default_dataset_path(), catalog_path = default_gpu_catalog_path();
  const FitOptions options;
  std::uint64_t key = fnv1a(file_bytes(data_path));
  key = fnv1a(file_bytes(catalog_path), key);
  // The scaling prior is fitted on the public table: a changed table is another model.
  key = fnv1a(file_bytes(default_public_throughput_path()), key);
  key = fnv1a(file_bytes(default_public_names_path()), key);
  key = fnv1a(model_schema_hash(options.include_memory_features), key);
  key = fnv1a(options_to_json(options).dump(), key);
  key = fnv1a(program_identity(), key);
  std::filesystem::path dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::filesystem::path(x) / "epochcast";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".cache" / "epochcast";
  const std::filesystem::path file = dir.empty() ? std::filesystem::path() : dir / ("model-" + hex(key) + ".json");
  const GpuCatalog catalog = load_gpu_catalog(catalog_path);
  const Dataset ds = load_dataset(data_path, catalog);
  if (!file.empty() && std::filesystem::exists(file)) {
    try {
      auto model = std::make_shared<const StackedModel>(load_model(file.string()));
      // Any valid model can sit at this path: it is the default only if it was fitted from the
      // bundled data (its fingerprint says so). Anything else is refitted and overwritten.
      if (model->data_fingerprint() == training_data_fingerprint(ds, make_pairs(ds), catalog)) {
        cached = model;
        return cached;
      }
    } catch (const Error&) {
      // A damaged cache entry is refitted and overwritten below.
    }
  }
  auto model = std::make_shared<const StackedModel>(fit_model(ds, catalog, options, std::move(progress)));
  if (!file.empty()) {
    try {
      // The cache directory is this user's alone (0700), made so when this creates it.
      if (!std::filesystem::exists(dir)) {
        std::filesystem::create_directories(dir.parent_path());
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw Error(ErrorCode::kIo, "cannot create the cache");
      }
      save_model(*model, file.string());
      prune_cache(dir, 6);
    } catch (const std::exception&) {
      // Caching is an optimisation: a read-only home must not stop predict.
    }
  }
  cached = model;
  return cached;
}

}  // namespace epochcast
