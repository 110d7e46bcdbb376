// Extra trees (Geurts et al. 2006), grown on threads, the split scan in SIMD chosen at run time.
#include <atomic>
#include <functional>
#include <thread>

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
#include "learners.hpp"
#include "simd_target.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace epochcast {
namespace {

// ---- Extra trees (Geurts et al. 2006): random thresholds, best of all features per node. ----

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

  void fit(const Matrix& x, std::span<const double> y, std::span<const double> weights, std::uint64_t seed) override {
    check_row_weights(weights, x.rows, "extra_trees");
    const bool weighted = !unit_weights(weights);
    // Missing values take the column median (weighted: of the rows repeated): trees then see
    // them as typical.
    fill_.assign(x.cols, 0.0);
    std::vector<double> v;
    std::vector<std::pair<double, double>> vw;
    for (std::size_t c = 0; c < x.cols; ++c) {
      v.clear();
      vw.clear();
      for (std::size_t i = 0; i < x.rows; ++i)
        if (std::isfinite(x.data[i * x.cols + c])) {
          v.push_back(x.data[i * x.cols + c]);
          if (weighted) vw.emplace_back(x.data[i * x.cols + c], weights[i]);
        }
      if (v.empty()) continue;
      if (weighted) {
        fill_[c] = weighted_median(vw);
      } else {
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
    // Row weights as integer counts (the weights themselves when all are integers, else in
    // fixed point), a row's label sum its count times its fixed-point label: the scan then sums
    // the rows as if repeated. Unit weights: count 1, the labels and trees as before weights.
    // Other weights: counts in fixed point (their sum near 2^40), labels as w·y in fixed point.
    std::vector<std::int64_t> count(y.size(), 1);
    int count_shift = 0;
    bool integral = true;
    if (weighted) {
      double wsum = 0;
      for (double w : weights) {
        wsum += w;
        integral = integral && w == std::floor(w);
      }
      if (!integral || wsum >= kMaxCountSum) {
        count_shift = kCountBits - std::ilogb(wsum);
        integral = false;
      }
      for (std::size_t i = 0; i < y.size(); ++i)
        count[i] = std::max<std::int64_t>(1, std::llround(std::ldexp(weights[i], count_shift)));
    }
    double total = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (!std::isfinite(y[i])) throw Error(ErrorCode::kInvalidArgument, "extra_trees: a label is not a finite number");
      total += !weighted ? std::abs(y[i]) : integral ? static_cast<double>(count[i]) * std::abs(y[i])
                                                       : weights[i] * std::abs(y[i]);
    }
    const int shift = total > 0 ? 51 - std::ilogb(total) : 0;
    std::vector<std::int64_t> y_fixed(y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      y_fixed[i] = integral ? count[i] * std::llround(std::ldexp(y[i], shift))
                            : std::llround(std::ldexp(weights[i] * y[i], shift));
    cols_ = x.cols;
    trees_.assign(static_cast<std::size_t>(trees_wanted_), {});
    // The prediction layout is built with the trees (children allocated side by side when a node
    // splits), not by a breadth-first pass afterwards (flatten: 2 % of a stack fit in perf).
    std::vector<std::vector<FlatNode>> flat_trees(trees_.size());
    const Data data{filled.data(), x.rows, x.cols, y, y_fixed.data(), count.data(),
                    weighted ? weights.data() : nullptr,
                    std::max<std::int64_t>(1, std::llround(std::ldexp(min_leaf_, count_shift)))};
    // Each tree has its own generator seeded from (seed, tree): same result for any thread count.
    auto work = [&](int first, int step) {
      Scratch scratch{std::vector<std::uint32_t>(x.rows), std::vector<double>(x.rows * kLanes),
                      std::vector<std::int64_t>(x.rows), std::vector<std::int64_t>(x.rows),
                      std::vector<std::uint32_t>(x.cols),
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
    const std::int64_t* y_fixed;  // count × label, fixed point
    const std::int64_t* count;    // the rows' weights as integers (1: unweighted)
    const double* w;              // the row weights, null when all 1
    std::int64_t min_count;       // min_leaf in count units
  };
  struct Scratch {
    std::vector<std::uint32_t> idx;  // the rows, partitioned node by node
    std::vector<double> values;      // a group of candidate features of the node's rows, row by row
    std::vector<std::int64_t> y;     // the node's labels, fixed point
    std::vector<std::int64_t> count;  // the node's row counts
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
    std::int64_t* cv = s.count.data();
    double* vals = s.values.data();
    double sum = 0, weight = 0;
    std::int64_t sum_fixed = 0, node_count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (d.w) {
        sum += d.w[idx[i]] * d.y[idx[i]];
        weight += d.w[idx[i]];
      } else {
        sum += d.y[idx[i]];
      }
      yv[i] = d.y_fixed[idx[i]];
      cv[i] = d.count[idx[i]];
      sum_fixed += yv[i];
      node_count += cv[i];
    }
    const double mean = sum / (d.w ? weight : static_cast<double>(n));
    const int id = static_cast<int>(nodes.size());
    nodes.push_back(Node{-1, 0, -1, -1, mean});
    flat[slot] = {mean, -1, 0};
    if (node_count < 2 * d.min_count) return id;
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
    const Scan scan{d, idx, n, yv, cv, vals, sum_fixed, node_count, d.min_count, order.data(), tries};
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
    const std::int64_t* y;     // their labels, fixed point (times their counts)
    const std::int64_t* count;  // their counts
    double* vals;
    std::int64_t sum_fixed, node_count;
    std::int64_t min_leaf;      // in count units
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
  const std::int64_t* const cnt = q.count;                                                             \
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
    I sum = {}, count = {};                                                                            \
    for (std::size_t i = 0; i < n; ++i) {                                                              \
      D v;                                                                                             \
      std::memcpy(&v, vals + i * W, sizeof v);                                                         \
      const I m = v <= t; /* all ones where true */                                                    \
      sum += y[i] & m;                                                                                 \
      count += cnt[i] & m;                                                                             \
    }                                                                                                  \
    for (std::size_t l = 0; l < w; ++l) {                                                              \
      const std::uint32_t c = f[l];                                                                    \
      if (!(hi[l] > lo[l])) {                                                                          \
        s.constant[c] = 1;                                                                             \
        s.marked.push_back(c);                                                                         \
        continue;                                                                                      \
      }                                                                                                \
      const std::int64_t left_n = count[l], right_n = q.node_count - left_n;                           \
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
    const std::int64_t* const cnt = q.count;
    double* const vals = q.vals;
    const __m512i min_leaf = _mm512_set1_epi64(q.min_leaf), rows = _mm512_set1_epi64(q.node_count),
                  total = _mm512_set1_epi64(q.sum_fixed);
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
        count = _mm512_mask_add_epi64(count, m, count, _mm512_set1_epi64(cnt[i]));
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

  // Counts from weights: integers below 2^40 as they are; else fixed point with the sum near
  // 2^40 (label sums are scaled to stay below 2^52 whatever the counts, so any count works).
  static constexpr double kMaxCountSum = 1099511627776.0;  // 2^40
  static constexpr int kCountBits = 39;
  // The weighted median as nth_element over the values repeated picks: the value at position
  // floor(W / 2) of the sorted repeated values (W the weight sum).
  static double weighted_median(std::vector<std::pair<double, double>>& vw) {
    std::sort(vw.begin(), vw.end());
    double total = 0;
    for (const auto& [v, w] : vw) total += w;
    const double half = std::floor(total / 2);
    double below = 0;
    for (const auto& [v, w] : vw) {
      below += w;
      if (below > half) return v;
    }
    return vw.back().first;
  }

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

}  // namespace

std::unique_ptr<Learner> make_extra_trees_learner(const LearnerConfig& config) {
  return std::make_unique<ExtraTreesLearner>(config);
}

}  // namespace epochcast
