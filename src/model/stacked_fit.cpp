// fit_model: out-of-fold fits on grouped folds, meta weights, intervals, the trusted excess.
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
#include "group_folds.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

using namespace stacked;

namespace {

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

}  // namespace

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
  std::vector<double> yt, wt;
  std::vector<std::unique_ptr<Learner>> learners;
};

// All (fit, learner) pairs of a model fit are independent: the out-of-fold fits and the final
// fit run as one queue on `threads` workers, each learner single-threaded, longest first, so
// no core waits for a fold set or for the final fit's single-threaded XGBoost. Each task has
// its own seed and writes its own rows: the result does not depend on the thread count.
void run_fits(const Matrix& x, const std::vector<double>& y, const std::vector<double>& w, std::vector<FitJob>& jobs,
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
      const std::vector<double>* wt = &w;
      if (job.split) {
        std::call_once(job.prepared, [&] {
          const auto& [train, test] = *job.split;
          job.xt = Matrix(train.size(), p);
          job.xv = Matrix(test.size(), p);
          job.yt.resize(train.size());
          if (!w.empty()) job.wt.resize(train.size());
          for (std::size_t i = 0; i < train.size(); ++i) {
            std::copy_n(x.row(train[i]).begin(), p, job.xt.row(i).begin());
            job.yt[i] = y[train[i]];
            if (!w.empty()) job.wt[i] = w[train[i]];
          }
          for (std::size_t i = 0; i < test.size(); ++i) std::copy_n(x.row(test[i]).begin(), p, job.xv.row(i).begin());
        });
        xt = &job.xt;
        yt = &job.yt;
        wt = &job.wt;
      }
      Learner& learner = *job.learners[l];
      const std::string name = learner.name();
      learner.fit(*xt, *yt, *wt, job.seed + l);
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
// With row weights (empty: all 1) n is their sum and a residual of weight w fills w ranks, as
// the residuals repeated would.
double conformal_quantile(std::vector<double> resid, double level, const std::vector<double>& weights = {}) {
  if (resid.empty()) return 0;
  if (!weights.empty()) {
    std::vector<std::pair<double, double>> rw(resid.size());
    double total = 0;
    for (std::size_t i = 0; i < resid.size(); ++i) rw[i] = {resid[i], weights[i]}, total += weights[i];
    std::sort(rw.begin(), rw.end());
    const double rank = std::max(1.0, std::ceil(level * (total + 1)));
    double seen = 0;
    for (const auto& [r, w] : rw)
      if ((seen += w) >= rank) return r;
    return rw.back().first;
  }
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
  // Pair weights (RunPair::weight) as every learner's row weights; all 1: none (the fit as
  // before weights, bit for bit). Meta weights, intervals and the trusted excess weigh them too.
  std::vector<double> weight;
  if (!std::all_of(pairs.begin(), pairs.end(), [](const RunPair& r) { return r.weight == 1.0; })) {
    weight.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      weight[i] = pairs[i].weight;
      if (!(weight[i] > 0) || !std::isfinite(weight[i]))
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("training pair {} (rows {} and {} of '{}') has weight {}: a pair weight must be a "
                                "finite number > 0",
                                i, pairs[i].source, pairs[i].target, ds.source, weight[i]));
    }
  }
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
  // Folds: distinct groups shuffled by the seed, dealt round-robin (group_folds).
  const GroupFolds by_group = group_folds(group, static_cast<std::size_t>(std::max(2, options.folds)), options.seed);
  if (by_group.fold_of_label.size() < 2)
    throw Error(ErrorCode::kInvalidArgument,
                "the training pairs come from one " +
                    std::string(options.group_folds_by_model ? "CNN model" : "workload") +
                    " only: the meta learner needs at least two groups for out-of-fold predictions");
  const std::size_t folds = by_group.folds;
  std::vector<FoldSplit> group_splits(folds);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t f = 0; f < folds; ++f)
      (by_group.fold_of_item[i] == f ? group_splits[f].test : group_splits[f].train).push_back(i);
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
    const GroupFolds by_workload =
        group_folds(workload, static_cast<std::size_t>(std::max(2, options.folds)), options.seed + 1);
    const std::size_t k = by_workload.folds;
    if (k >= 2) {
      workload_splits.resize(k);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t f = 0; f < k; ++f)
          (by_workload.fold_of_item[i] == f ? workload_splits[f].test : workload_splits[f].train).push_back(i);
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
    const KernelChoice k = tune_kernel_ridge(x, y, groups, config, options.seed, weight);
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
  run_fits(x, y, weight, jobs, config, clamp_lo, clamp_hi, tick);
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
  // Weighted least squares: each row (and its label) times √weight.
  auto weigh_rows = [&](Eigen::MatrixXd& m, Eigen::VectorXd& v, const std::vector<std::size_t>& pair_of_row) {
    if (weight.empty()) return;
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      const double root = std::sqrt(weight[pair_of_row[static_cast<std::size_t>(r)]]);
      m.row(r) *= root;
      v(r) *= root;
    }
  };
  std::vector<std::size_t> pair_of_row(n);
  std::iota(pair_of_row.begin(), pair_of_row.end(), 0);
  std::vector<std::size_t> pair_of_row_gpu = pair_of_row;
  pair_of_row_gpu.insert(pair_of_row_gpu.end(), gpu_rows.begin(), gpu_rows.end());
  weigh_rows(a, b, pair_of_row_gpu);
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
    std::vector<std::size_t> twice = pair_of_row;
    twice.insert(twice.end(), pair_of_row.begin(), pair_of_row.end());
    weigh_rows(seen, yy, twice);
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
  model.oof_log_residuals_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (std::size_t l = 0; l < n_learners; ++l)
      sum += model.meta_weights_[l] * oof(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(l));
    model.oof_log_residuals_[i] = y[i] - sum;
  }
  model.interval_q_log_ = conformal_quantile(std::move(resid), options.interval_level, weight);
  std::vector<double> resid_gpu, weight_gpu;
  for (std::size_t i : gpu_rows) {
    resid_gpu.push_back(stack_resid(oof_gpu, i));
    if (!weight.empty()) weight_gpu.push_back(weight[i]);
  }
  model.interval_unseen_q_log_ = conformal_quantile(std::move(resid_gpu), options.interval_level, weight_gpu);

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
      double excess, f5, cal, corr, y, w;
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
        rows.push_back({spec_excess(lo, hi, sg, tg, Precision::kAuto), prior[i], cal, corr, y[i] + prior[i],
                        weight.empty() ? 1.0 : weight[i]});
        max_excess = std::max(max_excess, rows.back().excess);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (int k = 0; k * kTrustedExcessStep <= max_excess + kTrustedExcessStep; ++k) {
      const double trusted = std::min(k * kTrustedExcessStep, max_excess);
      double err = 0;
      for (const Row& r : rows) {
        const double sh = shrink_at(r.excess, trusted, options.shrink_span_log);
        err += r.w * std::abs(std::exp(sh * r.f5 + (1 - sh) * r.cal + sh * r.corr - r.y) - 1.0);
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

}  // namespace epochcast
